"""Staleness checks against real repositories (the `git` binary) on both backends: unchanged, changed (how many
lines, how many commits ago, uncommitted), moved, deleted, another clone, imported history, files outside git,
and `gieok anchors check`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.anchors import FileRef, from_meta, gather
from gieok.librarian.staleness import check_anchors
from gieok.store import Store
from tests.test_anchors import git, make_repo
from tests.test_store_contract import put

NOW = datetime(2026, 12, 1, tzinfo=UTC)
GIEOK = str(Path(sys.executable).with_name("gieok"))


async def remember_about(store: Store, text: str, refs: list[FileRef], cwd: Path, **kw: object) -> str:
    """A memory anchored the way capture anchors it (gathered now), indexed as the librarian would."""
    anchors = gather(refs, str(cwd))
    mid = await put(store, text, meta={"anchors": anchors}, **kw)
    await store.index_code_refs(mid, from_meta({"anchors": anchors}), [])
    return mid


async def state(store: Store, mid: str) -> list[tuple[str, str]]:
    return [(r.status, r.detail) for r in (await store.anchors_for([mid]))[mid]]


def commit_file(repo: Path, rel: str, text: str, msg: str) -> None:
    (repo / rel).write_text(text, "utf-8")
    git(repo, "add", rel)
    git(repo, "commit", "-qm", msg)


async def test_changed_moved_deleted_and_unchanged(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    (repo / "billing" / "ledger.py").write_text("def post():\n    pass\n", "utf-8")
    (repo / "billing" / "old_name.py").write_text("x = 1\n", "utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "more files")
    retry = await remember_about(store, "retry logic lives in billing/retry.py",
                                 [FileRef("billing/retry.py", "mention", 10, 12)], repo)
    ledger = await remember_about(store, "ledger posting", [FileRef("billing/ledger.py", "edit")], repo)
    moved = await remember_about(store, "old name", [FileRef("billing/old_name.py", "read")], repo)
    steady = await remember_about(store, "the readme", [FileRef("README.md", "read")], repo)

    first = await check_anchors(store, now=NOW)
    assert first.repos == 1 and first.by_status == {"unchanged": 4} and first.stale == []

    # retry.py: rewritten near the anchored lines, then two unrelated commits
    lines = (repo / "billing" / "retry.py").read_text("utf-8").splitlines(keepends=True)
    lines[10:12] = ["backoff = 2 ** attempt\n"]
    commit_file(repo, "billing/retry.py", "".join(lines), "rewrite backoff")
    commit_file(repo, "docs.txt", "a\n", "docs")
    commit_file(repo, "docs.txt", "b\n", "more docs")
    # ledger.py: changed but not committed
    (repo / "billing" / "ledger.py").write_text("def post(entry):\n    save(entry)\n", "utf-8")
    # old_name.py: renamed (and committed); README untouched
    git(repo, "mv", "billing/old_name.py", "billing/new_name.py")
    git(repo, "commit", "-qm", "rename")

    res = await check_anchors(store, now=NOW)
    assert res.by_status == {"changed": 2, "moved": 1, "unchanged": 1}
    assert await state(store, retry) == [
        ("changed", "billing/retry.py changed 3 commits ago (+1 −2 lines; lines 10–12 changed)")]
    assert await state(store, ledger) == [("changed", "billing/ledger.py has uncommitted changes (+2 −2 lines)")]
    assert await state(store, moved) == [("moved", "billing/old_name.py moved to billing/new_name.py")]
    assert await state(store, steady) == [("unchanged", "")]
    assert {s["memory_id"] for s in res.stale} == {retry, ledger, moved}

    # nothing moved since: the second pass reads the files but runs no git and writes nothing
    again = await check_anchors(store, now=NOW)
    assert again.checked == 0 and again.skipped == 4 and len(again.stale) == 3

    git(repo, "rm", "-qf", "billing/ledger.py")
    git(repo, "commit", "-qm", "drop ledger")
    await check_anchors(store, now=NOW)
    assert await state(store, ledger) == [("deleted", "billing/ledger.py deleted in the latest commit ("
                                           f"{git(repo, 'rev-parse', '--short=7', 'HEAD')})")]


async def test_committing_the_remembered_edit_is_not_a_change(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    (repo / "billing" / "retry.py").write_text("seeded = clock(0)\n", "utf-8")     # the agent's edit, uncommitted
    mid = await remember_about(store, "seeded the clock", [FileRef("billing/retry.py", "edit")], repo)
    git(repo, "commit", "-qam", "seed the clock")                                    # the user commits it
    commit_file(repo, "README.md", "# shop!\n", "readme")
    await check_anchors(store, now=NOW)
    assert await state(store, mid) == [("unchanged", "")]
    commit_file(repo, "billing/retry.py", "seeded = clock(42)\n", "reseed")
    await check_anchors(store, now=NOW)
    assert await state(store, mid) == [("changed", "billing/retry.py changed in the latest commit ("
                                        f"{git(repo, 'rev-parse', '--short=7', 'HEAD')}) (+1 −1 lines)")]


async def test_another_clone_and_imported_history(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "alice" / "shop")
    # an import: only where and when (the turn happened after the first commit, before the rewrite below)
    when = datetime.now(UTC)
    meta = {"anchors": gather([FileRef("billing/retry.py", "edit")], str(repo), snapshot=False)}
    imported = await put(store, "imported turn about retry.py", meta=meta, at=when)
    await store.index_code_refs(imported, from_meta(meta), [])
    subprocess.run(["sleep", "1.1"], check=True)      # commit times have one-second resolution
    commit_file(repo, "billing/retry.py", "rewritten\n", "rewrite")

    # a colleague's clone elsewhere, at the same commit: checked explicitly with --repo
    clone = tmp_path / "bob" / "shop"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, timeout=60)
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/shop.git")
    res = await check_anchors(store, now=NOW, repo=str(clone))
    assert res.repos == 1
    [row] = (await store.anchors_for([imported]))[imported]
    assert row.status == "changed" and row.detail.startswith("billing/retry.py changed in the latest commit")
    assert row.anchor.commit == git(repo, "rev-parse", "HEAD~1")    # the commit of the turn's time, filled in
    assert row.anchor.blob == git(repo, "rev-parse", "HEAD~1:billing/retry.py")

    bad = await check_anchors(store, now=NOW, repo=str(tmp_path))
    assert bad.errors and "not inside a git repository" in bad.errors[0]


async def test_files_outside_git(store: Store, tmp_path: Path) -> None:
    notes = tmp_path / "notes" / "plan.md"
    notes.parent.mkdir()
    notes.write_text("회의 계획\n", "utf-8")
    mid = await remember_about(store, "the plan is in plan.md", [FileRef(str(notes), "write")], tmp_path)
    elsewhere = await put(store, "a file of another machine")
    away = {"anchors": [{"path": "/nowhere/at/all/x.md", "blob": "sha256:1"}]}
    await store.index_code_refs(elsewhere, from_meta(away), [])
    await check_anchors(store, now=NOW)
    assert await state(store, mid) == [("unchanged", "")]
    assert await state(store, elsewhere) == [("unchecked", "")]       # not called deleted from here
    notes.write_text("회의 계획 (수정)\n", "utf-8")
    await check_anchors(store, now=NOW)
    assert await state(store, mid) == [("changed", f"{notes} has changed")]
    notes.unlink()
    await check_anchors(store, now=NOW)
    assert await state(store, mid) == [("deleted", f"{notes} deleted")]


def test_anchors_check_command(tmp_path: Path) -> None:
    import asyncio

    from gieok.store import open_store
    repo = make_repo(tmp_path / "shop")
    db = tmp_path / "memory.db"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIEOK_HOME": str(tmp_path), "GIEOK_USER_ID": "alice",
           "GIEOK_EMBEDDER": "none", "OMP_NUM_THREADS": "1"}

    async def setup() -> str:
        store = open_store(f"sqlite:///{db}")
        await store.open()
        try:
            return await remember_about(store, "about retry", [FileRef("billing/retry.py", "read")], repo)
        finally:
            await store.close()

    mid = asyncio.run(setup())
    commit_file(repo, "billing/retry.py", "new\n", "rewrite")
    r = subprocess.run([GIEOK, "anchors", "check", "--repo", str(repo)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"changed  {mid}  billing/retry.py changed in the latest commit" in r.stdout
    assert r.stdout.strip().endswith("1 possibly stale")
    r = subprocess.run([GIEOK, "anchors", "check", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["skipped"] == 1      # already known, nothing to redo
    r = subprocess.run([GIEOK, "anchors", "check", "--repo", str(tmp_path / "nope")], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "not inside a git repository" in r.stderr


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # `git commit -a` in these tests runs without the -c flags of tests.test_anchors.git
    monkeypatch.setenv("GIT_AUTHOR_NAME", "T")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "T")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")
