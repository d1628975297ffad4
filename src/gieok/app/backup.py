"""`gieok backup` and `gieok restore`: a whole database (every user, memory, vector, profile, tag, link and
feedback event) to one file and back, each verified by counts and a search.

- A SQLite database is copied with SQLite's online backup API: one consistent snapshot taken while servers
  keep writing, written to `PATH.partial` and renamed into place, so a failed backup never leaves a file that
  looks whole.
- A PostgreSQL database is copied with `gieok copy` into a SQLite file (the same portable format, restorable
  into either backend; vectors travel as they are), or, with `--pg-dump`, by `pg_dump -Fc` when it is on PATH.
- Restore into an empty SQLite target is the backup file itself (online backup API again); into PostgreSQL,
  or a target that already holds rows, it is `gieok copy` from the file: rows already there are skipped.

Verification opens the written copy as a store and compares its counts with the source's (taken before and
after, since servers may write meanwhile), then searches it for a word of a recent memory and expects that
memory back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gieok.app.copy import CopyReport, Progress, copy_store
from gieok.core.errors import InvalidInput
from gieok.core.models import SearchFilters
from gieok.core.text import query_terms
from gieok.store import Store, open_store
from gieok.store.postgres.dump import is_pg_dump, pg_dump, pg_dump_problem, pg_restore
from gieok.store.sqlite import sqlite_path
from gieok.store.sqlite.backup import is_sqlite_file, online_backup

COUNTED = ("total", "active", "archived", "deleted", "pinned")


@dataclass
class Snapshot:
    counts: dict[str, int]
    by_model: dict[str, int]
    users: int
    profiles: int
    tags: int

    def line(self) -> str:
        c = self.counts
        return (f"{c['total']} memories ({c['active']} active, {c['archived']} archived, {c['deleted']} deleted), "
                f"{sum(v for k, v in self.by_model.items() if k != '(none)')} vectors, {self.users} users, "
                f"{self.profiles} profiles, {self.tags} tags")


async def snapshot(store: Store) -> Snapshot:
    st = await store.stats(None)
    users = await store.list_user_ids()
    profiles = [u for u in users if await store.get_user(u) is not None]
    return Snapshot({k: int(st[k]) for k in COUNTED}, dict(st["by_embedding_model"]), len(users), len(profiles),
                    len(await store.list_project_tags()))


async def search_probe(store: Store) -> tuple[str, str, bool] | None:
    """(memory id, query, found): a word of one of the newest live memories, searched in the copy."""
    for user in await store.list_user_ids():
        for m in await store.list_memories(SearchFilters(user_id=user), limit=20):
            words = [w for w in m.content.split() if query_terms(w)][:4]
            if not words:
                continue
            query = " ".join(words)
            hits = await store.keyword_search(SearchFilters(user_id=user, include_archived=True),
                                              query_terms(query), 50)
            return m.id, query, m.id in {h.id for h, _ in hits}
    return None


@dataclass
class Report:
    """What a backup or restore did and whether the copy checks out."""

    action: str
    method: str
    path: Path
    source: Snapshot | None = None
    source_after: Snapshot | None = None
    copy: Snapshot | None = None
    probe: tuple[str, str, bool] | None = None
    copy_report: CopyReport | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        out = [f"{self.action} {self.path} ({self.method})"]
        src, dst = ("source", "backup") if self.action == "backup" else ("backup", "target")
        if self.source:
            out.append(f"{src:<7} {self.source.line()}")
        if self.copy:
            out.append(f"{dst:<7} {self.copy.line()}")
        if self.probe:
            mid, query, found = self.probe
            out.append(f"search  {query!r} in the copy → {'found' if found else 'NOT found'} memory {mid}")
        out += [f"PROBLEM {p}" for p in self.problems]
        return out


def _check(report: Report, expected_low: Snapshot, expected_high: Snapshot, got: Snapshot) -> None:
    """`got` must lie between the source's counts before and after (both equal when nothing wrote meanwhile)."""
    for k in COUNTED:
        lo, hi = sorted((expected_low.counts[k], expected_high.counts[k]))
        if not lo <= got.counts[k] <= hi:
            report.problems.append(f"{k}: {got.counts[k]} in the copy, {lo}..{hi} in the source")
    for name in ("users", "profiles", "tags"):
        lo, hi = sorted((getattr(expected_low, name), getattr(expected_high, name)))
        if not lo <= getattr(got, name) <= hi:
            report.problems.append(f"{name}: {getattr(got, name)} in the copy, {lo}..{hi} in the source")


async def _verify_copy(report: Report, url: str, low: Snapshot, high: Snapshot) -> None:
    store = open_store(url)
    await store.open()
    try:
        report.copy = await snapshot(store)
        _check(report, low, high, report.copy)
        report.probe = await search_probe(store)
        if report.probe is not None and not report.probe[2]:
            report.problems.append(f"searching the copy for {report.probe[1]!r} did not find memory {report.probe[0]}")
    finally:
        await store.close()


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


async def backup_database(source_url: str, path: Path, *, use_pg_dump: bool = False,
                          on_progress: Progress | None = None) -> Report:
    """Write the whole database at `source_url` to `path` (which must not exist) and verify it."""
    if path.exists():
        raise InvalidInput("PATH", f"{path} exists; choose a new file name (e.g. with the date in it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    source = open_store(source_url)
    await source.open()   # also migrates, so the copy has the current schema
    try:
        before = await snapshot(source)
    finally:
        await source.close()
    tmp = _partial(path)
    tmp.unlink(missing_ok=True)
    try:
        if source_url.startswith("sqlite:///"):
            report = Report("backup", "SQLite online backup", path, before)
            online_backup(Path(sqlite_path(source_url)), tmp)
        elif use_pg_dump:
            report = Report("backup", "pg_dump -Fc", path, before)
            pg_dump(source_url, tmp)
        else:
            report = Report("backup", "gieok copy into a SQLite file", path, before)
            report.copy_report = await _copy(source_url, f"sqlite:///{tmp}", on_progress)
            report.problems += report.copy_report.problems
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    source = open_store(source_url)
    await source.open()
    try:
        report.source_after = await snapshot(source)
    finally:
        await source.close()
    if report.method.startswith("pg_dump"):
        problem = pg_dump_problem(path)
        if problem:
            report.problems.append(problem)
    else:
        await _verify_copy(report, f"sqlite:///{path}", before, report.source_after)
    return report


async def restore_database(path: Path, target_url: str, *, on_progress: Progress | None = None) -> Report:
    """Put the backup at `path` into `target_url` and verify the target against the backup."""
    if not path.is_file():
        raise InvalidInput("PATH", f"{path} is not a file")
    if is_pg_dump(path):
        if not target_url.startswith("postgres"):
            raise InvalidInput("--to", "a pg_dump backup restores into PostgreSQL only (--to postgresql://…)")
        report = Report("restore", "pg_restore", path)
        pg_restore(path, target_url)
        # The archive cannot be opened as a store: the target is checked on its own (opens, migrates, searches).
        await _verify_restore(report, target_url, None)
        return report
    if not is_sqlite_file(path):
        raise InvalidInput("PATH", f"{path} is not a gieok backup (neither a SQLite file nor a pg_dump archive)")
    backup_url = f"sqlite:///{path}"
    store = open_store(backup_url)
    await store.open()
    try:
        expected = await snapshot(store)
    finally:
        await store.close()
    if target_url.startswith("sqlite:///") and await _empty_sqlite(Path(sqlite_path(target_url))):
        target = Path(sqlite_path(target_url))
        report = Report("restore", "SQLite online backup into a new database", path, expected)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _partial(target)
        tmp.unlink(missing_ok=True)
        try:
            online_backup(path, tmp)
            for suffix in ("-wal", "-shm"):   # an empty database's leftovers must not be replayed over it
                target.with_name(target.name + suffix).unlink(missing_ok=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    else:
        report = Report("restore", "gieok copy from the backup (rows already there are skipped)", path, expected)
        report.copy_report = await _copy(backup_url, target_url, on_progress)
        report.problems += report.copy_report.problems
    await _verify_restore(report, target_url, expected)
    return report


async def _verify_restore(report: Report, url: str, expected: Snapshot | None) -> None:
    store = open_store(url)
    await store.open()
    try:
        got = await snapshot(store)
        report.copy = got
        if expected is None:
            expected = got
        # The target may have held rows of its own: everything in the backup must be there, more is fine.
        for k in ("total", "deleted"):
            if got.counts[k] < expected.counts[k]:
                report.problems.append(f"{k}: {got.counts[k]} in the target, {expected.counts[k]} in the backup")
        if got.profiles < expected.profiles:
            report.problems.append(f"profiles: {got.profiles} in the target, {expected.profiles} in the backup")
        report.probe = await search_probe(store)
        if report.probe is not None and not report.probe[2]:
            report.problems.append(f"searching the target for {report.probe[1]!r} did not find memory "
                                   f"{report.probe[0]}")
    finally:
        await store.close()


async def _empty_sqlite(path: Path) -> bool:
    if not path.exists():
        return True
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        return int((await store.stats(None))["total"]) == 0 and not await store.list_project_tags()
    finally:
        await store.close()


async def _copy(src: str, dst: str, on_progress: Progress | None) -> CopyReport:
    source, target = open_store(src), open_store(dst)
    await source.open()
    try:
        await target.open()
        try:
            # No embedder: a backup keeps every vector exactly as it was.
            return await copy_store(source, target, embedder=None, on_progress=on_progress)
        finally:
            await target.close()
    finally:
        await source.close()


def describe(report: Report) -> dict[str, Any]:
    """The report as JSON for `--json`."""
    def snap(s: Snapshot | None) -> dict[str, Any] | None:
        return None if s is None else {**s.counts, "vectors_by_model": s.by_model, "users": s.users,
                                       "profiles": s.profiles, "tags": s.tags}
    return {"action": report.action, "method": report.method, "path": str(report.path), "ok": report.ok,
            "source": snap(report.source), "copy": snap(report.copy),
            "search": None if report.probe is None else {"id": report.probe[0], "query": report.probe[1],
                                                         "found": report.probe[2]},
            "problems": report.problems}
