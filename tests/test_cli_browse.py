"""The commands a user reaches for, run as the installed `gieok` script: list (newest first, filters, pages),
show, edit, pin/unpin, forget (soft and --hard), --version; and help text written for people."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from gieok import __version__
from gieok.cli import app


class Result:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = code, stdout, stderr


def run(*args: str, home: Path, ok: int | None = 0) -> Result:
    """One command in process (each `gieok` start costs a second or more on a busy machine); the script
    itself is exercised by test_cli.py and the README test."""
    env = {k: None for k in os.environ if k.startswith("GIEOK_")}
    env.update(GIEOK_HOME=str(home), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none", COLUMNS="250")
    r = CliRunner().invoke(app, list(args), env=env, terminal_width=250)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    res = Result(r.exit_code, r.stdout, r.stderr)
    if ok is not None:
        assert res.returncode == ok, res.stdout + res.stderr
    return res


def ingest(home: Path, text: str, *args: str) -> str:
    return run("ingest", text, *args, home=home).stdout.strip()


def test_list_pages_newest_first_with_filters(tmp_path: Path) -> None:
    ids = [ingest(tmp_path, f"note {i} about the 결제 module", "--at", f"2026-11-{10 + i:02d}T09:00:00Z",
                  "--platform", "codex" if i % 2 else "claude-code") for i in range(5)]
    page1 = json.loads(run("list", "--limit", "2", "--json", home=tmp_path).stdout)
    assert [r["id"] for r in page1["results"]] == [ids[4], ids[3]] and page1["next_after"] == ids[3]
    page2 = json.loads(run("list", "--limit", "2", "--after", ids[3], "--json", home=tmp_path).stdout)
    assert [r["id"] for r in page2["results"]] == [ids[2], ids[1]]
    codex = json.loads(run("list", "--platform", "codex", "--json", home=tmp_path).stdout)
    assert [r["id"] for r in codex["results"]] == [ids[3], ids[1]]
    window = json.loads(run("list", "--when", "2026-11-11..2026-11-12", "--json", home=tmp_path).stdout)
    assert {r["id"] for r in window["results"]} == {ids[1], ids[2]}
    human = run("list", "--limit", "2", home=tmp_path).stdout
    assert human.splitlines()[0] == "2 memories of user alice, newest first"
    assert f"--after {ids[3]}" in human and "note 4 about the 결제 module" in human
    # Another user's list does not show alice's memories.
    assert "no memories of user bob" in run("list", "--user", "bob", home=tmp_path).stdout


def test_show_edit_pin_unpin(tmp_path: Path) -> None:
    mid = ingest(tmp_path, "The staging password rotates monthly", "--project", "shop")
    shown = run("show", mid, home=tmp_path).stdout
    assert mid in shown and "The staging password rotates monthly" in shown and "opened 1" in shown
    assert json.loads(run("show", mid, "--json", home=tmp_path).stdout)["view_count"] == 2
    edited = run("edit", mid, "--content", "The staging password rotates weekly", "--importance", "0.9",
                 "--kind", "semantic", home=tmp_path)
    assert "edited" in edited.stdout
    m = json.loads(run("show", mid, "--json", home=tmp_path).stdout)
    assert (m["content"], m["importance"], m["kind"], m["edit_count"]) == \
        ("The staging password rotates weekly", 0.9, "semantic", 1)
    assert "pinned" in run("pin", mid, home=tmp_path).stdout
    assert json.loads(run("show", mid, "--json", home=tmp_path).stdout)["is_pinned"] is True
    run("unpin", mid, home=tmp_path)
    assert json.loads(run("show", mid, "--json", home=tmp_path).stdout)["is_pinned"] is False
    bad = run("edit", mid, "--kind", "dream", home=tmp_path, ok=2)
    assert "kind" in bad.stderr and "Traceback" not in bad.stderr
    nothing = run("edit", mid, home=tmp_path, ok=2)
    assert "nothing to update" in nothing.stderr
    other = run("show", mid, "--user", "bob", home=tmp_path, ok=2)
    assert "no memory" in other.stderr


def test_forget_soft_then_hard_erases_a_leaked_secret(tmp_path: Path) -> None:
    leak = ingest(tmp_path, "my token is hunter2-not-a-pattern-the-redactor-knows")
    keep = ingest(tmp_path, "deploys go out on Tuesdays")
    soft = run("forget", leak, home=tmp_path)
    assert "hidden from search" in soft.stdout and f"gieok forget {leak} --hard" in soft.stdout
    assert leak not in run("list", home=tmp_path).stdout
    assert run("show", leak, home=tmp_path, ok=2).returncode == 2
    # A softly forgotten row is still in the file; --hard takes it out (no prompt without a terminal).
    hard = run("forget", leak, "--hard", home=tmp_path)
    assert "erased" in hard.stdout
    with sqlite3.connect(tmp_path / "memory.db") as db:
        assert db.execute("SELECT count(*) FROM memory WHERE id = ?", (leak,)).fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM memory WHERE content LIKE '%hunter2%'").fetchone()[0] == 0
    assert keep in run("list", home=tmp_path).stdout
    assert "no memory" in run("forget", leak, "--hard", home=tmp_path, ok=2).stderr


def test_version() -> None:
    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"gieok {__version__}"


def _help(*args: str) -> str:
    r = CliRunner().invoke(app, [*args, "--help"], terminal_width=250, env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    return r.output


def test_help_has_no_type_markers_for_flags_and_whole_sentences() -> None:
    import typer.main
    root = typer.main.get_command(app)
    top = _help()
    paths: list[list[str]] = []

    def walk(prefix: list[str], cmd: object) -> None:
        paths.append(prefix)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk([*prefix, name], sub)
    walk([], root)
    assert len(paths) > 30
    for path in paths:
        out = _help(*path)
        assert "<bool>" not in out, path
    # On a wide terminal each command's summary (its first paragraph) sits on one line of the listing:
    # a docstring's own line breaks no longer cut sentences in half.
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        first = " ".join((cmd.help or "").split("\n\n")[0].split())
        line = next((ln for ln in top.splitlines() if re.search(rf"│ {re.escape(name)}\s", ln)), "")
        assert first[:60] in line, (name, line)
