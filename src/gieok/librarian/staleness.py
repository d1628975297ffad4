"""Staleness: compare each anchor (a file a memory is about, as it was then) with the repository as it is now.

For every repository checked out on this machine that anchors name (at the root they were captured in, or
another clone with the same remote URL), each anchored file is read and hashed as capture hashed it, and:
- same blob id → `unchanged`;
- different → `changed`: how many lines were added and removed since the memory's version (read back with
  `git cat-file`, or the captured commit's version), whether the anchored lines were among them, and when:
  "changed 3 commits ago" (the first commit after capture that changed the file, counted back from HEAD),
  "changed in the latest commit", or "has uncommitted changes";
- gone, and git's rename detection (`git diff -M` from the captured commit to HEAD, and staged renames)
  names where it went → `moved` (and whether it changed on the way);
- gone otherwise → `deleted` ("deleted 2 commits ago", or not yet committed).
A memory with a changed, moved or deleted anchor is "possibly stale"; nothing is ever deleted or edited
because of it. An anchor captured without a version (an imported transcript) first gets one: the commit of
the memory's time and the file's blob in it.

Work stays bounded: a file is read once per pass however many memories name it, an anchor whose HEAD and
file are as at its last check is skipped, every `git` runs with `GIT_TIMEOUT_S` and `GIT_OPTIONAL_LOCKS=0`
(never taking the index lock from under the user's own git), and diffs are counted only for files of at
most `MAX_DIFF_BYTES`. Files outside git (anchored by content hash) are checked when their directory exists
here: a librarian on another machine must not call every file "deleted".
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio

from gieok.core.gitfiles import RepoInfo, blob_id, content_id, find_root, read_bounded
from gieok.store.code_refs import AnchorCheck, AnchorRow, CodeRefs

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 10.0
MAX_HASH_BYTES = 32 << 20
MAX_DIFF_BYTES = 1 << 20
BATCH = 500


class GitError(Exception):
    pass


@dataclass(slots=True)
class CheckSummary:
    repos: int = 0
    checked: int = 0
    skipped: int = 0           # unchanged since their last check
    by_status: dict[str, int] = field(default_factory=dict)
    stale: list[dict[str, Any]] = field(default_factory=list)    # memory id, path, status, detail
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"repos": self.repos, "checked": self.checked, "skipped": self.skipped, "by_status": self.by_status,
                "stale": self.stale, "errors": self.errors}


class Git:
    """`git` in one working tree, bounded in time, output cached per question."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._cache: dict[tuple[str, ...], tuple[int, bytes]] = {}

    async def run(self, *args: str, ok_codes: tuple[int, ...] = (0,)) -> bytes:
        if args not in self._cache:
            env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
            try:
                proc = await asyncio.create_subprocess_exec(
                    "git", "-C", self.root, "-c", "core.quotepath=off", *args, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL, stdin=asyncio.subprocess.DEVNULL, env=env)
            except OSError as exc:
                raise GitError(f"cannot run git: {exc}") from exc
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                raise GitError(f"git {' '.join(args[:2])} took longer than {GIT_TIMEOUT_S:g} s") from None
            self._cache[args] = (proc.returncode or 0, out)
        code, out = self._cache[args]
        if code not in ok_codes:
            raise GitError(f"git {' '.join(args[:3])} failed ({code})")
        return out

    async def text(self, *args: str) -> str | None:
        try:
            return (await self.run(*args)).decode("utf-8", errors="replace").strip()
        except GitError:
            return None

    async def commits_since(self, commit: str) -> int | None:
        """Commits on HEAD after `commit` (0: it is HEAD)."""
        n = await self.text("rev-list", "--count", f"{commit}..HEAD")
        return int(n) if n and n.isdigit() else None

    async def first_change(self, commit: str, path: str, blob: str) -> str | None:
        """The first commit after `commit` that left `path` with content other than `blob` (after any commit
        that brought it to `blob`, such as committing the very edit the memory is about)."""
        out = await self.text("log", "--reverse", "--format=C %H", "--raw", "--no-abbrev", "--no-renames",
                              f"{commit}..HEAD", "--", path)
        if not out:
            return None
        current: str | None = None
        changed: str | None = None
        for line in out.splitlines():
            if line.startswith("C "):
                current = line[2:].strip()
            elif line.startswith(":") and current:
                fields = line.split("\t", 1)[0].split()
                new = fields[3] if len(fields) > 3 else ""
                if new == blob:
                    changed = None          # back at the memory's version
                elif changed is None:
                    changed = current
        return changed

    async def renames(self, commit: str) -> dict[str, str]:
        """old path → new path for files renamed from `commit` to HEAD, and staged renames."""
        out: dict[str, str] = {}
        for args in (("diff", "--name-status", "-z", "-M", commit, "HEAD"), ("diff", "--name-status", "-z", "-M",
                                                                          "--cached", "HEAD")):
            try:
                raw = (await self.run(*args)).decode("utf-8", errors="replace")
            except GitError:
                continue
            parts = raw.split("\0")
            i = 0
            while i < len(parts) - 1:
                status = parts[i]
                if status.startswith(("R", "C")) and i + 2 < len(parts):
                    if status.startswith("R"):
                        out[parts[i + 1]] = parts[i + 2]
                    i += 3
                else:
                    i += 2
        return out

    async def blob(self, blob: str) -> bytes | None:
        try:
            return await self.run("cat-file", "blob", blob)
        except GitError:
            return None

    async def show(self, commit: str, path: str) -> bytes | None:
        try:
            return await self.run("show", f"{commit}:{path}")
        except GitError:
            return None


def _count(commits: int | None, what: str, sha: str) -> str:
    if commits is None:
        return what
    if commits == 0:
        return f"{what} in the latest commit ({sha[:7]})"
    return f"{what} {commits} commit{'s' if commits != 1 else ''} ago"


def _diff(old: bytes, new: bytes, lines: tuple[int, int] | None) -> tuple[int, int, bool | None]:
    """Lines added and removed from `old` to `new`, and whether the anchored old lines were touched."""
    a = old.decode("utf-8", errors="replace").splitlines()
    b = new.decode("utf-8", errors="replace").splitlines()
    added = removed = 0
    touched: bool | None = None if lines is None else False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        removed += i2 - i1
        added += j2 - j1
        if lines is not None and i1 < lines[1] and (i2 > lines[0] - 1 or (i1 == i2 and i1 >= lines[0] - 1)):
            touched = True
    return added, removed, touched


def _lines_note(a_lines: tuple[int, int] | None, touched: bool | None) -> str:
    if a_lines is None or touched is None:
        return ""
    span = f"line {a_lines[0]}" if a_lines[0] == a_lines[1] else f"lines {a_lines[0]}–{a_lines[1]}"
    return f"; {span} {'changed' if touched else 'untouched'}"


class _Pass:
    """One check of one local repository (or of the files outside git)."""

    def __init__(self, root: str, info: RepoInfo | None) -> None:
        self.root = root
        self.info = info
        self.git = Git(root) if info is not None else None
        self.head = info.head if info is not None else ""
        self._files: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._files:
            self._files[path] = read_bounded(path, MAX_HASH_BYTES)
        return self._files[path]

    def hash(self, data: bytes) -> str:
        return blob_id(data, self.info.object_format) if self.info is not None else content_id(data)

    def full(self, rel: str) -> str:
        return rel if self.info is None else os.path.join(self.root, rel)

    async def resolve(self, row: AnchorRow) -> tuple[str, str]:
        """(commit, blob) of the anchor's version, finding the commit of the memory's time when capture could
        not record one (imported history)."""
        a = row.anchor
        commit, blob = a.commit, a.blob
        if self.git is None:
            return commit, blob
        if not commit and row.created_at is not None:
            when = row.created_at.isoformat(timespec="seconds")
            commit = await self.git.text("rev-list", "-1", f"--before={when}", "HEAD") or ""
        if commit and not blob:
            blob = await self.git.text("rev-parse", "--verify", "-q", f"{commit}:{a.path}") or ""
        return commit, blob

    async def check(self, row: AnchorRow) -> AnchorCheck | None:
        a = row.anchor
        full = self.full(a.path)
        if self.info is None and not os.path.isdir(os.path.dirname(full)):
            return None                     # a path of another machine: nothing to say here
        data = await anyio.to_thread.run_sync(self.read, full)
        current = self.hash(data) if data is not None else ""
        if row.status != "unchecked" and row.checked_head == self.head and row.checked_blob == current \
                and (a.commit and a.blob):
            return None                     # nothing moved since the last check
        commit, blob = await self.resolve(row)
        out = AnchorCheck(row.id, "unknown", checked_head=self.head, checked_blob=current,
                          commit=commit if commit != a.commit else None, blob=blob if blob != a.blob else None)
        if not blob:
            out.detail = f"{a.path}: no version recorded to compare with"
            return out
        if data is not None:
            if current == blob:
                out.status = "unchanged"
                return out
            out.status = "changed"
            out.detail = await self._changed(a.path, commit, blob, data, row)
            return out
        return await self._gone(out, a.path, commit, blob, row)

    async def _old(self, commit: str, path: str, blob: str) -> bytes | None:
        if self.git is None:
            return None
        return await self.git.blob(blob) or (await self.git.show(commit, path) if commit else None)

    async def _changed(self, path: str, commit: str, blob: str, data: bytes, row: AnchorRow) -> str:
        when = "has changed"
        first = await self.git.first_change(commit, path, blob) if self.git is not None and commit else None
        if first and self.git is not None:
            when = _count(await self.git.commits_since(first), "changed", first)
        elif self.git is not None and commit:
            when = "has uncommitted changes"        # no commit since the memory touched it
        a = row.anchor
        span = (a.line_start, a.line_end or a.line_start) if a.line_start is not None else None
        old = await self._old(commit, path, blob)
        if old is None or len(old) > MAX_DIFF_BYTES or len(data) > MAX_DIFF_BYTES:
            return f"{path} {when}"
        added, removed, touched = await anyio.to_thread.run_sync(_diff, old, data, span)
        return f"{path} {when} (+{added} −{removed} lines{_lines_note(span, touched)})"

    async def _gone(self, out: AnchorCheck, path: str, commit: str, blob: str, row: AnchorRow) -> AnchorCheck:
        if self.git is not None and commit:
            new = (await self.git.renames(commit)).get(path)
            if new:
                out.status, out.current_path = "moved", new
                data = await anyio.to_thread.run_sync(self.read, self.full(new))
                how = ""
                if data is not None and self.hash(data) != blob:
                    old = await self._old(commit, path, blob)
                    if old is not None and max(len(old), len(data)) <= MAX_DIFF_BYTES:
                        added, removed, _ = await anyio.to_thread.run_sync(_diff, old, data, None)
                        how = f" and changed (+{added} −{removed} lines)"
                    else:
                        how = " and changed"
                out.detail = f"{path} moved to {new}{how}"
                return out
            gone = await self.git.text("log", "-1", "--format=%H", "--diff-filter=D", f"{commit}..HEAD", "--", path)
            out.status = "deleted"
            out.detail = f"{path} " + (_count(await self.git.commits_since(gone), "deleted", gone) if gone
                                       else "deleted (not committed)")
            return out
        out.status = "deleted"
        out.detail = f"{path} deleted"
        return out


async def check_anchors(store: CodeRefs, *, now: datetime, user_id: str | None = None,
                        repo: str | None = None) -> CheckSummary:
    """Check the anchors of every repository on this machine (or of the one at `repo`) and record what
    changed. Returns the counts and the anchors found stale."""
    summary = CheckSummary()
    targets: list[tuple[str, str, RepoInfo | None]] = []     # (local root, remote to match, repo)
    if repo is not None:
        found = find_root(os.path.abspath(os.path.expanduser(repo)))
        if found is None:
            summary.errors.append(f"{repo} is not inside a git repository")
            return summary
        info = RepoInfo(*found)
        targets.append((info.root, info.remote, info))
    else:
        # Each anchor against the checkout it was captured in (another clone of the same remote may be at
        # another commit: `--repo` asks for that comparison explicitly).
        seen: set[str] = set()
        for root, _remote in await store.anchor_repos(user_id):
            if root and root not in seen and os.path.isdir(root):
                found = find_root(root)
                if found is not None and found[0] == root:
                    seen.add(root)
                    targets.append((root, "", RepoInfo(*found)))
        targets.append(("", "", None))      # files outside git
    for root, remote, local in targets:
        p = _Pass(root, local)
        summary.repos += 1 if local is not None else 0
        after = 0
        while True:
            rows = await store.anchors_in_repo(root, remote, user_id=user_id, after_id=after, limit=BATCH)
            if not rows:
                break
            after = rows[-1].id
            checks: list[AnchorCheck] = []
            for row in rows:
                try:
                    c = await p.check(row)
                except GitError as exc:
                    summary.errors.append(f"{root}: {exc}")
                    c = None
                if c is None:
                    summary.skipped += 1
                    if row.stale:           # still as the last check found it
                        summary.stale.append({"memory_id": row.memory_id, "repo": row.anchor.repo,
                                              "path": row.anchor.path, "status": row.status, "detail": row.detail})
                    continue
                checks.append(c)
                summary.checked += 1
                summary.by_status[c.status] = summary.by_status.get(c.status, 0) + 1
                if c.status in ("changed", "moved", "deleted"):
                    summary.stale.append({"memory_id": row.memory_id, "repo": row.anchor.repo,
                                          "path": row.anchor.path, "status": c.status, "detail": c.detail})
            await store.record_checks(checks, now)
    return summary
