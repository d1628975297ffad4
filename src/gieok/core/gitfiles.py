"""What a git repository tells about a file, read from `.git` itself: the working tree's root, HEAD, the origin
remote, and the blob id of the file's current content.

Agent hooks run this on every captured turn, and a `git` subprocess costs a fork and an exec per question
(several milliseconds each on a busy machine) while these answers are a few small file reads: `.git/HEAD`, a
ref file or `packed-refs`, `config`. The blob id is git's own formula, sha1 (or sha256 in a sha256
repository) of `blob <size>\\0<content>`, i.e. what `git hash-object --no-filters` prints. Where files cannot
tell (a reftable ref store, an unreadable layout) one `git rev-parse HEAD` runs, bounded by
`GIT_TIMEOUT_S`. Worktrees (`.git` is a file naming the worktree's git dir, refs and config live in the
common dir) and submodules (`.git` naming `modules/…`) are handled.

Imports stay light (os; a hash module when a file is hashed) and nothing is compiled at import: hooks
import this module.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

GIT_TIMEOUT_S = 0.5
_HEX = frozenset("0123456789abcdef")


def _is_sha(s: str) -> bool:
    # A plain check, not a regular expression: compiling one costs a hook more than all its file reads.
    return len(s) in (40, 64) and _HEX.issuperset(s)


class RepoInfo:
    """One working tree: its root, git dirs, HEAD commit ('' before the first commit), origin URL (no
    credentials) and object format."""

    __slots__ = ("common_dir", "git_dir", "head", "object_format", "remote", "root")

    def __init__(self, root: str, git_dir: str, common_dir: str) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir
        config = read_config(os.path.join(common_dir, "config"))
        self.object_format = config.get(("extensions", "", "objectformat"), "sha1").lower()
        self.remote = clean_remote(_remote_url(config))
        self.head = read_head(git_dir, common_dir)

    @property
    def name(self) -> str:
        return repo_name(self.remote, self.root)


def repo_name(remote: str, root: str) -> str:
    """The repository's short name: the remote's last path part without `.git`, else the root's name."""
    if remote:
        tail = remote.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
        tail = tail[:-4] if tail.endswith(".git") else tail
        if tail:
            return tail
    return os.path.basename(root.rstrip("/\\")) if root else ""


def clean_remote(url: str) -> str:
    """A remote URL fit to store: credentials (`https://user:token@host/…`) removed."""
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or not (scheme[0].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme)):
        return url                  # scp-like `git@host:path` carries no secret
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host.rpartition('@')[2]}{slash}{path}"


def find_root(path: str) -> tuple[str, str, str] | None:
    """(working tree root, git dir, common dir) of the repository holding `path`, or None outside git."""
    d = path if os.path.isdir(path) else os.path.dirname(path)
    for _ in range(64):
        dot = os.path.join(d, ".git")
        if os.path.isdir(dot):
            return d, dot, _common_dir(dot)
        if os.path.isfile(dot):
            try:
                with open(dot, encoding="utf-8", errors="replace") as fh:
                    first = fh.readline().strip()
            except OSError:
                return None
            if first.startswith("gitdir:"):
                git_dir = first[7:].strip()
                if not os.path.isabs(git_dir):
                    git_dir = os.path.normpath(os.path.join(d, git_dir))
                return d, git_dir, _common_dir(git_dir)
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _common_dir(git_dir: str) -> str:
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            common = fh.read().strip()
    except OSError:
        return git_dir
    return common if os.path.isabs(common) else os.path.normpath(os.path.join(git_dir, common))


def read_config(path: str) -> dict[tuple[str, str, str], str]:
    """(section, subsection, key) → value of a git config file; keys lower-case. The subset git's format
    needs here: `[section "sub"]`, `key = value`, comments, quoted values."""
    out: dict[tuple[str, str, str], str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return out
    section, sub = "", ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head = line[1:line.find("]")] if "]" in line else ""
            name, _, quoted = head.strip().partition(" ")
            section, sub = name.lower(), quoted.strip().strip('"').replace('\\"', '"')
            continue
        key, eq, value = line.partition("=")
        value = value.strip()
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1]
        out[(section, sub, key.strip().lower())] = value if eq else "true"
    return out


def _remote_url(config: dict[tuple[str, str, str], str]) -> str:
    origin = config.get(("remote", "origin", "url"))
    if origin:
        return origin
    return next((v for (s, _, k), v in config.items() if s == "remote" and k == "url"), "")


def read_head(git_dir: str, common_dir: str) -> str:
    """The commit HEAD points at, or '' (no commit yet, or git could not say in time)."""
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as fh:
            head = fh.read(512).strip()
    except OSError:
        return ""
    if _is_sha(head):
        return head
    if not head.startswith("ref:"):
        return _git_head(git_dir)
    ref = head[4:].strip()
    if os.path.isdir(os.path.join(common_dir, "reftable")):
        return _git_head(git_dir)
    for base in (git_dir, common_dir):
        try:
            with open(os.path.join(base, ref), encoding="utf-8") as fh:
                sha = fh.read(128).strip()
            if _is_sha(sha):
                return sha
        except OSError:
            continue
    try:
        with open(os.path.join(common_dir, "packed-refs"), encoding="utf-8") as fh:
            for line in fh:
                sha, _, name = line.strip().partition(" ")
                if name == ref and _is_sha(sha):
                    return sha
    except OSError:
        pass
    return ""          # an unborn branch: no commit yet


def _git_head(git_dir: str) -> str:
    """`git rev-parse HEAD`, for ref stores files cannot read; '' when git is missing or slow."""
    import subprocess
    try:
        r = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "--verify", "-q", "HEAD"],
                           capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    sha = r.stdout.strip()
    return sha if _is_sha(sha) else ""


def _hasher(name: str) -> Any:
    # `_sha1` / `_sha256` are CPython's own small hash modules; `hashlib` loads OpenSSL first, which costs a
    # hook more than hashing its files.
    try:
        if name == "sha1":
            import _sha1
            return _sha1.sha1()
        import _sha256
        return _sha256.sha256()
    except ImportError:      # a build without them (FIPS): the same digests from hashlib
        import hashlib
        return hashlib.new(name)


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """git's object id for a blob with this content (`git hash-object --no-filters`)."""
    h = _hasher("sha256" if object_format == "sha256" else "sha1")
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return str(h.hexdigest())


def content_id(data: bytes) -> str:
    """The content hash of a file outside git."""
    h = _hasher("sha256")
    h.update(data)
    return "sha256:" + str(h.hexdigest())


def read_bounded(path: str, max_bytes: int) -> bytes | None:
    """The file's bytes, or None when it is missing, unreadable, not a file, or larger than `max_bytes`."""
    try:
        if os.path.getsize(path) > max_bytes or not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError:
        return None


class RepoCache:
    """Repositories found so far in one run: a hook or a librarian pass looks each one up once."""

    __slots__ = ("_by_dir", "_by_root")

    def __init__(self) -> None:
        self._by_dir: dict[str, RepoInfo | None] = {}
        self._by_root: dict[str, RepoInfo] = {}

    def for_path(self, path: str) -> RepoInfo | None:
        d = path if os.path.isdir(path) else os.path.dirname(path)
        if d in self._by_dir:
            return self._by_dir[d]
        found = find_root(d)
        info: RepoInfo | None = None
        if found is not None:
            root, git_dir, common = found
            info = self._by_root.get(root)
            if info is None:
                info = self._by_root[root] = RepoInfo(root, git_dir, common)
        self._by_dir[d] = info
        return info

    def repos(self) -> Iterable[RepoInfo]:
        return self._by_root.values()
