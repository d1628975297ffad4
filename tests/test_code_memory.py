"""The service and librarian side of memories about code, on both backends: explicit `files=[…]`, the search
filters and their errors, fingerprints of tool output, re-indexing after an edit, erasure, and imports."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.errors import InvalidInput
from gieok.core.fingerprint import fingerprints
from gieok.core.models import SearchFilters
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from tests.test_anchors import git, make_repo

GIEOK = str(Path(sys.executable).with_name("gieok"))
TRACE = ('Traceback (most recent call last):\n  File "/w/shop/billing/retry.py", line 6, in backoff\n'
         "    return delays[attempt]\nIndexError: list index out of range\n")


async def test_explicit_files_anchor_a_memory_at_once(svc: MemoryService, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    res = await svc.remember(MessageIn(content="we pinned the backoff table in retry.py", user_id="alice"),
                             files=["billing/retry.py:1-3", "README.md"], repo=str(repo))
    out = await svc.search(svc.filters("alice", file="retry.py"), None)
    [hit] = out.hits
    assert hit.memory.id == res.id and not hit.stale
    assert [(a["path"], a["status"]) for a in hit.anchors] == [("billing/retry.py", "unchecked"),
                                                                ("README.md", "unchecked")]
    assert hit.anchors[0]["lines"] == [1, 3] and hit.to_dict()["anchors"] == hit.anchors
    (repo / "billing" / "retry.py").write_text("line 1 was here\n", "utf-8")
    summary = await svc.processor.check_anchors()
    assert summary["by_status"] == {"changed": 1, "unchanged": 1} and summary["stale"] == 1
    [hit] = (await svc.search(svc.filters("alice", stale="only"), "backoff")).hits
    d = hit.to_dict()
    assert d["possibly_stale"] is True
    assert d["stale_reason"] == "billing/retry.py has uncommitted changes (+1 −30 lines; lines 1–3 changed)"
    assert (await svc.search(svc.filters("alice", stale="exclude"), "backoff")).hits == []
    # another machine's checkout: anchored by root and path, found by file=
    away = await svc.remember(MessageIn(content="deploy notes", user_id="alice"), files=["ops/deploy.md"],
                              repo="/home/bob/shop")
    [hit] = (await svc.search(svc.filters("alice", file="/home/bob/shop/ops/deploy.md"), None)).hits
    assert hit.memory.id == away.id and hit.anchors[0]["repo"] == "shop"


async def test_bad_filters_and_files_say_how_to_fix_them(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match=r"stale.*only, exclude"):
        svc.filters("alice", stale="sometimes")
    with pytest.raises(InvalidInput, match="files"):
        await svc.remember(MessageIn(content="x", user_id="alice"), files=[""])
    with pytest.raises(InvalidInput, match="file"):
        svc.filters("alice", file="a\x00b")
    assert (await svc.store.stats("alice"))["total"] == 0          # nothing half-written


async def test_tool_errors_make_the_turn_that_fixed_them_findable(svc: MemoryService) -> None:
    fix, _ = await svc.ingest(MessageIn(
        content="[tool: Bash] pytest -q\n\nThe delays table was one short; added the 4 s step.", user_id="alice",
        role="assistant", session_id="s1", agent_platform="claude-code", meta={"tool_errors": [TRACE]}))
    other, _ = await svc.ingest(MessageIn(content="unrelated chat about lunch", user_id="alice", session_id="s1"))
    await svc.processor.run_once()
    pasted = TRACE.replace("/w/shop", "/builds/9/shop").replace("line 6", "line 9")
    hits = (await svc.search(SearchFilters(user_id="alice"), f"codex here, CI says:\n{pasted}")).hits
    assert hits[0].memory.id == fix
    assert hits[0].recall_reason[0] == "same error as the query (IndexError in retry.py:backoff)"
    assert hits[0].fixed_by is None                  # the assistant's own turn: it is the fix
    assert other not in [h.memory.id for h in hits[:1]]
    # the same error without its stack (a bare line) still finds it, after whole matches
    bare = (await svc.search(SearchFilters(user_id="alice"), "IndexError: list index out of range")).hits
    assert bare[0].memory.id == fix and bare[0].recall_reason[0].endswith(", other frames")


async def test_the_same_error_pasted_twice_is_two_results_each_with_its_fix(svc: MemoryService) -> None:
    # Search folds a line said again into one result; the same error pasted in two sessions is two results
    # here, each with the answer that followed it, and neither is also listed as the other's repeat.
    pasted = []
    for s, fix in (("s1", "Added the missing 4 s step to the delays table."), ("s2", "Clamped attempt to the table.")):
        pasted.append((await svc.ingest(MessageIn(content=f"CI failed:\n{TRACE}", user_id="alice", session_id=s,
                                                  created_at=f"2025-05-0{len(pasted) + 1}T10:00:00Z")))[0])
        await svc.ingest(MessageIn(content=fix, user_id="alice", role="assistant", session_id=s,
                                   created_at=f"2025-05-0{len(pasted)}T10:00:05Z"))
    await svc.processor.run_once()
    hits = (await svc.search(SearchFilters(user_id="alice"), f"again:\n{TRACE}")).hits
    assert {h.memory.id for h in hits[:2]} == set(pasted)
    assert {h.fixed_by["content"] for h in hits[:2] if h.fixed_by} == {"Added the missing 4 s step to the delays "
                                                                       "table.", "Clamped attempt to the table."}
    shown = [h.memory.id for h in hits]
    assert not [m.id for h in hits for m in h.repeats if m.id in shown]
    # Asked in other words, the two pastes are one result that says it was said twice.
    [both] = [h for h in (await svc.search(SearchFilters(user_id="alice"), "CI failed delays index")).hits
              if h.memory.id in pasted]
    assert both.to_dict()["repeated"]["times"] == 2


async def test_edits_reindex_and_erasure_removes_everything(svc: MemoryService) -> None:
    f = SearchFilters(user_id="alice")
    sig = fingerprints(TRACE)[0].signature
    res = await svc.remember(MessageIn(content=f"saw this:\n{TRACE}", user_id="alice"))
    assert [m.memory_id for m in await svc.store.fingerprint_matches(f, [], [sig], 5)] == [res.id]
    await svc.update(res.id, "alice", content="no error here any more")
    assert await svc.store.fingerprint_matches(f, [], [sig], 5) == []        # re-indexed on the edit
    again = await svc.remember(MessageIn(content=f"again:\n{TRACE}", user_id="alice"), files=["x/y.py"])
    assert await svc.store.anchors_for([again.id])
    assert [m.memory_id for m in await svc.store.fingerprint_matches(f, [], [sig], 5)] == [again.id]
    await svc.forget(again.id, "alice", hard=True)
    assert await svc.store.anchors_for([again.id]) == {}
    assert await svc.store.fingerprint_matches(f, [], [sig], 5) == []


def test_imported_history_is_anchored_and_dated_by_the_librarian(tmp_path: Path, db_url: str) -> None:
    repo = make_repo(tmp_path / "shop")
    time.sleep(1.1)                    # commit times have one-second resolution
    when = datetime.now(UTC)           # the old session happened here: after the first commit ...
    time.sleep(1.1)
    (repo / "billing" / "retry.py").write_text("rewritten since\n", "utf-8")
    git(repo, "commit", "-qam", "rewrite")                              # ... and before this one
    ts = when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    entries = [
        {"type": "user", "uuid": "u1", "sessionId": "old", "cwd": str(repo), "timestamp": ts,
         "message": {"role": "user", "content": "tidy billing/retry.py"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "old", "cwd": str(repo), "timestamp": ts,
         "message": {"role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "t", "name": "Edit", "input": {"file_path": str(repo / "billing/retry.py"),
                                                                      "old_string": "a", "new_string": "b"}},
             {"type": "text", "text": "Tidied."}]}},
    ]
    tr = tmp_path / "old.jsonl"
    tr.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIEOK_HOME": str(tmp_path), "GIEOK_USER_ID": "alice",
           "GIEOK_EMBEDDER": "none", "GIEOK_DATABASE_URL": db_url, "OMP_NUM_THREADS": "1"}
    r = subprocess.run([GIEOK, "import", "claude-code", str(tr), "--no-progress"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "stored 2" in r.stdout, r.stderr
    r = subprocess.run([GIEOK, "worker", "--once"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "anchors: " in r.stdout, r.stderr
    r = subprocess.run([GIEOK, "search", "--file", "billing/retry.py", "--json"], env=env, capture_output=True,
                       text=True, timeout=120)
    got = {x["role"]: x for x in json.loads(r.stdout)["results"]}
    assert set(got) == {"user", "assistant"}
    for x in got.values():          # dated by the commit of the session's time, then compared with HEAD
        assert x["possibly_stale"] and x["stale_reason"].startswith("billing/retry.py changed in the latest commit")
