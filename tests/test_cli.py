"""The command line: help text everywhere, and the main commands run as a user would run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
import typer.main

from gieok.cli import app, main  # noqa: F401

GIEOK = str(Path(sys.executable).with_name("gieok"))


def _commands() -> list[tuple[str, click.Command]]:
    root = typer.main.get_command(app)
    out: list[tuple[str, click.Command]] = []

    def walk(prefix: str, cmd: click.Command) -> None:
        out.append((prefix, cmd))
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(f"{prefix} {name}".strip(), sub)
    walk("", root)
    return out


def test_every_command_and_option_has_help() -> None:
    missing = []
    for name, cmd in _commands():
        if not (cmd.help or "").strip():
            missing.append(name or "gieok")
        for p in cmd.params:
            if isinstance(p, click.Option) and not (p.help or "").strip() and p.name != "help":
                missing.append(f"{name} --{p.name}")
    assert missing == []


def run(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_HOME=str(home), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none", OMP_NUM_THREADS="1")
    return subprocess.run([GIEOK, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)


def test_ingest_search_export_import(tmp_path: Path) -> None:
    r = run("ingest", "팀 회의는 목요일, 커피는 내가 산다", "--platform", "Codex", "--session", "s1", home=tmp_path)
    assert r.returncode == 0, r.stderr
    mid = r.stdout.strip()
    again = run("ingest", "-", "--role", "assistant", "--at", "2026-11-01T09:00:00Z", home=tmp_path,
                stdin="noted: the meetings are on Thursday")
    assert again.returncode == 0
    found = run("search", "회의", "--json", home=tmp_path)
    assert json.loads(found.stdout)["results"][0]["id"] == mid
    found = run("search", "meeting", "--role", "assistant", "--json", home=tmp_path)
    assert len(json.loads(found.stdout)["results"]) == 1
    exported = run("export", "--format", "ndjson", home=tmp_path)
    assert exported.stdout.count("\n") == 2
    other = tmp_path / "other"
    imported = run("import", "ndjson", "-", home=other, stdin=exported.stdout)
    assert imported.returncode == 0 and "imported 2" in imported.stdout
    assert run("export", home=other).stdout == exported.stdout
    js = run("ingest", "--json", "-", home=tmp_path, stdin=json.dumps(
        {"content": "generic platform turn", "role": "assistant", "platform": "hermes-agent", "session_id": "h"}))
    assert js.returncode == 0, js.stderr
    stats = run("stats", "--json", home=tmp_path)
    assert json.loads(stats.stdout)["total"] == 3


def test_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    r = run("ingest", "", home=tmp_path)
    assert r.returncode == 2 and "content" in r.stderr and "Traceback" not in r.stderr
    r = run("ingest", "x", "--role", "robot", home=tmp_path)
    assert r.returncode == 2 and "role" in r.stderr
    r = run("search", "x", "--when", "whenever", home=tmp_path)
    assert r.returncode == 2 and "date_range" in r.stderr
    r = run("search", "x", "--limit", "0", home=tmp_path)
    assert r.returncode == 2 and "limit: 0 is out of range: give a whole number from 1 to 200" in r.stderr
    r = run("import", "ndjson", str(tmp_path / "missing.ndjson"), home=tmp_path)
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_a_value_the_cli_cannot_convert_is_told_in_words(tmp_path: Path) -> None:
    """Typer converts option values with pydantic; its wording ("Input should be a valid integer, unable to parse
    string as an integer") is replaced by what was wrong and what to give, for every command."""
    cases = [
        (["search", "deploy", "--limit", "zero"], "'zero' is not a whole number: give one such as 10"),
        (["bench", "load", "--clients", "0"], "0 is too small: give 1 or more"),
        (["bench", "load", "--worker-nice", "30"], "30 is too large: give 19 or less"),
        (["bench", "load", "--duration", "soon"], "'soon' is not a number: give one such as 0.5"),
        (["bench", "ingest", "--n", "열"], "'열' is not a whole number: give one such as 10"),
    ]
    for argv, said in cases:
        with pytest.raises(typer.BadParameter) as caught:
            typer.main.get_command(app).main(argv, standalone_mode=False)
        assert caught.value.format_message().endswith(said), (argv, caught.value.format_message())
        assert "Input should be" not in caught.value.format_message()
    # As a person sees it: one clear message, exit 2, nothing of pydantic's.
    r = run("search", "deploy", "--limit", "zero", home=tmp_path)
    assert r.returncode == 2 and "'zero' is not a whole number" in " ".join(r.stderr.replace("│", " ").split())
    assert "Input should be" not in r.stderr and "Traceback" not in r.stderr


def test_doctor(tmp_path: Path) -> None:
    r = run("doctor", home=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[ok] database opens" in r.stdout
    bad = run("doctor", "--db", "mysql://nope", home=tmp_path)
    assert bad.returncode == 1 and "FAIL" in bad.stdout and "GIEOK_DATABASE_URL" in bad.stdout
