"""Anchors: which files a memory is about, and the state they were in when it was written.

An anchor names a repository (its working-tree root and origin URL), a path relative to that root, the
commit HEAD pointed at and the file's git blob id at capture time (a sha256 content hash outside git), and
optionally a line range and a symbol. Captured rows carry their anchors in `meta["anchors"]` (the raw row is
all the hot path writes); the librarian indexes them and later compares them with the repository
(`gieok.librarian.staleness`).

Where anchors come from:
- a turn's tool calls that name files (Claude Code `Edit`, `MultiEdit`, `Write`, `Read`, `NotebookEdit`):
  `FileRef`s built by the capture code, with the edit's new text to find its lines;
- paths and `path:line`, `path:10-20`, `path#L10-L20`, `path::symbol` mentioned in text
  (`mentions`), kept only when such a file exists, so prose like "e.g." never becomes an anchor;
- an explicit `files=[…]` on `remember` / `manage_knowledge` (`parse_ref`).

`gather` is what a hook can afford: stat and read each file once (bounded sizes), hash it, and read the
repository's HEAD and remote from `.git` (`gieok.core.gitfiles`); no subprocess in the common case. With
`snapshot=False` (importing old transcripts: today's file is not the one the turn saw) only the repository
and path are recorded, and the librarian finds the commit of the turn's time.

Imports stay light (os; hashlib when a file is hashed) and nothing is parsed with regular expressions
(see `_split_ref`): hooks import this module.
"""

from __future__ import annotations

import os

from gieok.core.gitfiles import RepoCache, blob_id, clean_remote, content_id, read_bounded, repo_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_ANCHORS = 20                 # per message
MAX_MENTIONS = 30                # candidate paths looked at per text
MAX_HASH_BYTES = 1 << 20         # larger files are anchored without a blob id (the librarian fills it in)
MAX_HASH_TOTAL = 8 << 20         # bytes hashed per `gather` call
MAX_FIELD = 1000                 # characters of any stored anchor field
VIAS = ("edit", "write", "read", "notebook", "mention", "explicit")

# Characters around a path in prose or markdown (`billing/retry.py`, (see x.py), "x.py",) and at a sentence's end.
_EDGE = "()[]{}<>\"'`,;!?*|"
_PATH_PUNCT = frozenset("/._-@+~")


class FileRef:
    """A file a message names, before it is resolved against the file system."""

    __slots__ = ("line_end", "line_start", "new_text", "path", "symbol", "via")

    def __init__(self, path: str, via: str, line_start: int | None = None, line_end: int | None = None,
                 symbol: str = "", new_text: str = "") -> None:
        self.path = path
        self.via = via
        self.line_start = line_start
        self.line_end = line_end
        self.symbol = symbol
        self.new_text = new_text      # an edit's new text: its lines are found in the file

    def __repr__(self) -> str:
        return f"FileRef({self.path!r}, {self.via!r}, {self.line_start}, {self.line_end}, {self.symbol!r})"


def _num(s: str) -> int | None:
    return int(s) if s.isdigit() and 0 < len(s) <= 7 else None


def _split_ref(tok: str) -> tuple[str, int | None, int | None, str]:
    """`path`, `path:42`, `path:10-20` (`:col` after it ignored), `path#L10-L20` or `path::symbol` →
    (path, first line, last line, symbol). Parsed with string methods, not a regular expression: hooks call
    this on every turn, and importing `re` alone costs a hook more than all its other work."""
    if "::" in tok:
        path, _, symbol = tok.partition("::")
        ok = symbol and (symbol[0].isalpha() or symbol[0] == "_") and all(c.isalnum() or c in "_." for c in symbol)
        return (path, None, None, symbol) if ok else (tok, None, None, "")
    path, sep, rest = tok.partition("#L")
    if not sep:
        path, sep, rest = tok.partition(":")
    if not sep:
        return tok, None, None, ""
    a, dash, b = rest.replace("–", "-").partition("-")
    b = b[1:] if b.startswith("L") else b
    b = b.partition(":")[0]
    a = a.partition(":")[0]
    start, end = _num(a), _num(b) if dash else None
    if start is None or (dash and end is None):
        return path, None, None, ""         # `x.py:load_config`, `x.py:`: the file, no lines
    end = start if end is None else end
    return path, min(start, end), max(start, end), ""


def _looks_like_path(p: str) -> bool:
    """A file name with an extension (`x.py`, `a/b.tar.gz`, `.env.local`), made of path characters."""
    if not p or len(p) > MAX_FIELD or "://" in p:
        return False
    name = p.rstrip("/").rsplit("/", 1)[-1]
    _, dot, ext = name.rpartition(".")
    if not dot or not 1 <= len(ext) <= 8 or not ext[0].isalpha() or not ext.isalnum():
        return False
    return all(c.isalnum() or c in _PATH_PUNCT for c in p) and (p[0].isalnum() or p[0] in "./~_@")


def parse_ref(text: str, via: str = "explicit") -> FileRef:
    """`path`, `path:42`, `path:10-20`, `path#L10-L20` or `path::symbol` as a FileRef."""
    path, start, end, symbol = _split_ref(text.strip())
    return FileRef(path, via, start, end, symbol)


def mentions(text: str) -> list[FileRef]:
    """Candidate file paths named in free text (not yet checked against the file system)."""
    if "." not in text:
        return []
    out: list[FileRef] = []
    seen: set[tuple[str, int | None]] = set()
    for word in text.replace("](", " ").split():     # markdown links: [text](path)
        tok = word.lstrip(_EDGE).rstrip(_EDGE + ".:")      # a leading "." belongs to ./x and .env
        if "." not in tok or "://" in tok:
            continue
        path, start, end, symbol = _split_ref(tok)
        path = path.rstrip(".:")
        if not _looks_like_path(path):
            continue
        key = (path, start)
        if key in seen:
            continue
        seen.add(key)
        out.append(FileRef(path, "mention", start, end, symbol))
        if len(out) >= MAX_MENTIONS:
            break
    return out


def _locate(data: bytes, new_text: str) -> tuple[int | None, int | None]:
    """Lines of an edit's new text in the file after the edit (first occurrence)."""
    if not new_text.strip():
        return None, None
    text = data.decode("utf-8", errors="replace")
    i = text.find(new_text)
    if i < 0:
        return None, None
    start = text.count("\n", 0, i) + 1
    return start, start + new_text.rstrip("\n").count("\n")


def gather(refs: list[FileRef], cwd: str, *, snapshot: bool = True,
           repos: RepoCache | None = None) -> list[dict[str, Any]]:
    """Anchors (the `meta["anchors"]` form) for the files `refs` name, relative paths taken from `cwd` (then
    from the root of the repository `cwd` is in). Mentions of files that do not exist are dropped; a tool's
    file is kept even when it is gone (a turn may delete what it wrote). One anchor per file: line ranges
    of several references to it are merged."""
    repos = repos or RepoCache()
    cwd = os.path.abspath(os.path.expanduser(cwd or os.getcwd()))
    cwd_repo = repos.for_path(cwd)
    hashed = 0
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    contents: dict[str, bytes] = {}          # read once per file, for every edit of it
    for ref in refs:
        if len(by_key) >= MAX_ANCHORS:
            break
        raw = ref.path.strip().strip("`'\"")
        if not raw or "\x00" in raw or len(raw) > MAX_FIELD:
            continue
        path = os.path.expanduser(raw)
        candidates = [path] if os.path.isabs(path) else [os.path.join(cwd, path)]
        if not os.path.isabs(path) and cwd_repo is not None and cwd_repo.root != cwd:
            candidates.append(os.path.join(cwd_repo.root, path))
        full = next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
        if full is None:
            if ref.via == "mention":
                continue
            full = os.path.normpath(candidates[0])
        repo = repos.for_path(full)
        if repo is not None:
            rel = os.path.relpath(full, repo.root).replace(os.sep, "/")
            if rel.startswith("../"):
                repo, rel = None, full
        else:
            rel = full
        key = (repo.root if repo else "", rel)
        anchor = by_key.get(key)
        if anchor is None:
            anchor = {"root": repo.root if repo else "", "remote": repo.remote if repo else "", "path": rel,
                      "via": ref.via}
            if snapshot:
                anchor["commit"] = repo.head if repo else ""
                data = read_bounded(full, MAX_HASH_BYTES) if hashed < MAX_HASH_TOTAL else None
                if data is not None:
                    hashed += len(data)
                    contents[full] = data
                    anchor["blob"] = blob_id(data, repo.object_format) if repo else content_id(data)
            by_key[key] = anchor
        elif VIAS.index(ref.via) < VIAS.index(anchor["via"]):
            anchor["via"] = ref.via        # an edit says more than a mention of the same file
        if ref.new_text and full in contents:
            ref.line_start, ref.line_end = _locate(contents[full], ref.new_text)
        if ref.line_start is not None:
            lo, hi = anchor.get("lines") or (ref.line_start, ref.line_end or ref.line_start)
            anchor["lines"] = [min(lo, ref.line_start), max(hi, ref.line_end or ref.line_start)]
        if ref.symbol and not anchor.get("symbol"):
            anchor["symbol"] = ref.symbol[:200]
    return list(by_key.values())


class Anchor:
    """A validated anchor, as the store indexes it."""

    __slots__ = ("blob", "commit", "line_end", "line_start", "path", "remote", "root", "symbol", "via")

    def __init__(self, path: str, *, root: str = "", remote: str = "", commit: str = "", blob: str = "",
                 line_start: int | None = None, line_end: int | None = None, symbol: str = "",
                 via: str = "mention") -> None:
        self.root = root
        self.remote = remote
        self.path = path
        self.commit = commit
        self.blob = blob
        self.line_start = line_start
        self.line_end = line_end
        self.symbol = symbol
        self.via = via

    @property
    def repo(self) -> str:
        return repo_name(self.remote, self.root)

    def key(self) -> tuple[str, str]:
        return self.root, self.path

    def to_meta(self) -> dict[str, Any]:
        d: dict[str, Any] = {"root": self.root, "remote": self.remote, "path": self.path, "via": self.via,
                             "commit": self.commit, "blob": self.blob}
        if self.line_start is not None:
            d["lines"] = [self.line_start, self.line_end or self.line_start]
        if self.symbol:
            d["symbol"] = self.symbol
        return d

    def __repr__(self) -> str:
        return f"Anchor({self.root!r}, {self.path!r}, commit={self.commit[:8]!r}, blob={self.blob[:8]!r})"


def _text(d: dict[str, Any], key: str) -> str:
    v = d.get(key, "")
    return v[:MAX_FIELD] if isinstance(v, str) and "\x00" not in v else ""


def from_meta(meta: dict[str, Any]) -> list[Anchor]:
    """The well-formed anchors of a row's `meta["anchors"]` (clients may send anything: malformed entries
    are skipped, fields bounded, credentials stripped from remote URLs), one per (root, path)."""
    raw = meta.get("anchors") if isinstance(meta, dict) else None
    if not isinstance(raw, list):
        return []
    out: dict[tuple[str, str], Anchor] = {}
    for d in raw[:MAX_ANCHORS * 2]:
        if not isinstance(d, dict):
            continue
        path = _text(d, "path").strip()
        if not path:
            continue
        lines = d.get("lines")
        start = end = None
        if isinstance(lines, list) and lines and all(isinstance(x, int) and 0 < x < 10**7 for x in lines[:2]):
            start, end = lines[0], lines[1] if len(lines) > 1 else lines[0]
            start, end = min(start, end), max(start, end)
        via = _text(d, "via")
        a = Anchor(path, root=_text(d, "root"), remote=clean_remote(_text(d, "remote")), commit=_text(d, "commit"),
                   blob=_text(d, "blob"), line_start=start, line_end=end, symbol=_text(d, "symbol")[:200],
                   via=via if via in VIAS else "mention")
        out.setdefault(a.key(), a)
        if len(out) >= MAX_ANCHORS:
            break
    return list(out.values())
