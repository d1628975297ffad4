"""Output made for people: stats as tables that say whose memories they count (and doctor likewise), search
with a header line and notes in words, imports of the wrong kind refused with the importer that fits."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.test_cli_browse import ingest, run

FIXTURES = Path(__file__).parent / "fixtures"
TRANSCRIPT = FIXTURES / "claude_code" / "projects" / "-home-dev-shop" / "3f6d2c1e-8b4a-4f0e-9c2d-7a1b5e9f0c31.jsonl"


def test_stats_is_a_table_naming_the_user_and_doctor_names_the_database(tmp_path: Path) -> None:
    for i in range(3):
        ingest(tmp_path, f"alice note {i}", "--platform", "codex")
    run("ingest", "bob's note", "--user", "bob", home=tmp_path)
    run("add", "a pinned fact", home=tmp_path)
    out = run("stats", home=tmp_path).stdout
    assert "user alice" in out and "holds 5 memories of 2 user(s); 1 belong to others" in out
    assert "Memories" in out and "Librarian" in out and "Periodic jobs" not in out
    assert "{" not in out and max(len(line) for line in out.splitlines()) < 160   # no JSON blobs
    js = json.loads(run("stats", "--json", home=tmp_path).stdout)
    assert js["user"] == "alice" and js["total"] == 4 and js["all_users_total"] == 5
    everyone = run("stats", "--all-users", home=tmp_path).stdout
    assert "all 2 users" in everyone
    run("maintain", home=tmp_path)
    assert "Periodic jobs" in run("stats", home=tmp_path).stdout
    doctor = run("doctor", home=tmp_path).stdout
    assert "5 memories of 2 user(s) in the database (alice: 4)" in doctor


def test_search_has_a_header_and_plain_output_in_a_pipe(tmp_path: Path) -> None:
    mid = ingest(tmp_path, "팀 회의는 목요일 오후 3시")
    out = run("search", "회의", home=tmp_path).stdout
    lines = out.splitlines()
    assert lines[0] == "1 memory of user alice for '회의' (keywords)"
    assert mid in lines[1] and "팀 회의는 목요일" in lines[2]
    assert "\x1b[" not in out          # colour only on a terminal
    empty = run("search", "nothing like this", home=tmp_path).stdout
    assert empty.startswith("0 memories of user alice")


def test_import_of_the_wrong_kind_says_what_fits_and_fails(tmp_path: Path) -> None:
    ingest(tmp_path, "exported once")
    export = tmp_path / "memories.ndjson"
    run("export", "-o", str(export), home=tmp_path)
    wrong = run("import", "claude-code", str(export), home=tmp_path, ok=2)
    assert "holds no Claude Code transcript" in wrong.stderr
    assert f"gieok import ndjson {export}" in wrong.stderr
    wrong = run("import", "ndjson", str(TRANSCRIPT), home=tmp_path, ok=2)
    assert f"gieok import claude-code {TRANSCRIPT}" in wrong.stderr
    wrong = run("import", "chatgpt", str(export), home=tmp_path, ok=2)
    assert "gieok import ndjson" in wrong.stderr
    wrong = run("import", "ndjson", str(FIXTURES / "chatgpt" / "conversations.json"), home=tmp_path, ok=2)
    assert "gieok import chatgpt" in wrong.stderr
    empty_dir = tmp_path / "nothing"
    empty_dir.mkdir()
    assert "no Claude Code transcripts" in run("import", "claude-code", str(empty_dir), home=tmp_path,
                                               ok=2).stderr
    right = run("import", "claude-code", str(TRANSCRIPT), home=tmp_path)
    assert right.stdout.startswith("read ") and "stored 0" not in right.stdout


def test_export_help_does_not_promise_a_backup() -> None:
    out = " ".join(run("export", "--help", home=Path("/nonexistent")).stdout.split())
    assert "round-trips" not in out and "Not a backup" in out and "gieok copy --to sqlite:///backup.db" in out


def test_times_are_shown_in_the_readers_zone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime

    from gieok.cli.render import when

    stored = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    monkeypatch.setenv("TZ", "Asia/Seoul")
    time.tzset()
    try:
        assert when(stored) == "2026-12-02 08:30"      # KST is UTC+9: the next morning
        ingest(tmp_path, "서울에서 쓴 메모", "--at", "2026-12-01T23:30:00Z")
        assert "2026-12-02 08:30" in run("search", "메모", home=tmp_path).stdout
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        assert when(stored) == "2026-12-01 23:30"       # a server with no zone set shows UTC
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
