"""The librarian's commands as a user runs them: worker --once / --retry-failed, reembed, maintain, tags list and
merge, bench librarian; stats and doctor show the librarian's state. Every command and option has help text."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import typer
import typer.main
from typer.testing import CliRunner

from gieok.cli import app as main_app
from tests.fakes.embedding_server import FakeEmbeddingServer


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    return main_app


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for k in [k for k in os.environ if k.startswith("GIEOK_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("GIEOK_HOME", str(tmp_path))
    monkeypatch.setenv("GIEOK_USER_ID", "alice")
    monkeypatch.setenv("GIEOK_EMBEDDER", "none")
    return tmp_path


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as s:
        yield s


def invoke(cli: typer.Typer, *args: str) -> str:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_every_librarian_command_and_option_has_help(cli: typer.Typer) -> None:
    root = typer.main.get_command(cli)
    missing = []

    def walk(prefix: str, cmd: click.Command) -> None:
        if prefix and not (cmd.help or "").strip():
            missing.append(prefix)
        for p in cmd.params:
            if isinstance(p, click.Option) and not (p.help or "").strip() and p.name != "help":
                missing.append(f"{prefix} --{p.name}")
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(f"{prefix} {name}".strip(), sub)
    walk("", root)
    names = set(root.commands)  # type: ignore[attr-defined]
    assert {"worker", "reembed", "maintain", "tags", "bench"} <= names
    assert missing == []


def test_worker_once_retry_failed_and_stats(cli: typer.Typer, env: Path, server: FakeEmbeddingServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for text in ("deploy on friday", "the release review is at noon", "coffee after standup"):
        invoke(cli, "ingest", text, "--project", "gieok")
    monkeypatch.setenv("GIEOK_EMBEDDER", "openai")
    monkeypatch.setenv("GIEOK_EMBEDDING_URL", server.openai_url)
    monkeypatch.setenv("GIEOK_EMBEDDING_MODEL", "fake")
    server.mode = "unauthorized"
    out = invoke(cli, "worker", "--once")
    assert "handled 3 rows" in out and "failed 3" in out and "maintenance:" in out and "consolidation:" in out
    stats = json.loads(invoke(cli, "stats", "--json"))
    assert stats["failed"] == 3 and "GIEOK_EMBEDDING_API_KEY" in stats["last_error"]["error"]
    assert set(stats["librarian_jobs"]) == {"maintenance", "consolidation", "anchors", "vocabulary"}
    assert "processed_last_hour" in stats
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert "last librarian error" in doctor.output and "maintenance: last finished" in doctor.output
    server.mode = "ok"
    out = invoke(cli, "worker", "--once")
    assert "handled 0 rows" in out  # failed rows wait for their cooldown
    out = invoke(cli, "worker", "--once", "--retry-failed")
    assert "handled 3 rows" in out and "pending 0, failed 0" in out
    stats = json.loads(invoke(cli, "stats", "--json"))
    assert stats["processed_last_hour"] == 3 and stats["last_error"] is None


def test_reembed_switches_models_and_needs_an_embedder(cli: typer.Typer, env: Path, server: FakeEmbeddingServer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    res = CliRunner().invoke(cli, ["reembed"])
    assert res.exit_code == 2 and "GIEOK_EMBEDDER=none" in res.output
    monkeypatch.setenv("GIEOK_EMBEDDER", "openai")
    monkeypatch.setenv("GIEOK_EMBEDDING_URL", server.openai_url)
    monkeypatch.setenv("GIEOK_EMBEDDING_MODEL", "fake-a")
    for text in ("one thing", "another thing"):
        invoke(cli, "ingest", text)
    invoke(cli, "worker", "--once")
    monkeypatch.setenv("GIEOK_EMBEDDING_MODEL", "fake-b")
    assert "2 rows marked" in invoke(cli, "reembed", "--no-wait")
    stats = json.loads(invoke(cli, "stats", "--json"))
    assert stats["pending"] == 2 and stats["by_embedding_model"] == {"openai/fake-a": 2}  # old vectors serve
    out = invoke(cli, "reembed")
    assert "done: 2 rows" in out and "pending 0" in out
    assert json.loads(invoke(cli, "stats", "--json"))["by_embedding_model"] == {"openai/fake-b": 2}


def test_tags_list_merge_and_maintain(cli: typer.Typer, env: Path) -> None:
    invoke(cli, "ingest", "sprint planning notes", "--project", "centrazen")
    invoke(cli, "ingest", "a note on the other spelling", "--project", "centra-zen-app")
    invoke(cli, "worker", "--once")
    listed = json.loads(invoke(cli, "tags", "list", "--json"))
    assert {t["name"] for t in listed} == {"centrazen", "centra-zen-app"}
    out = invoke(cli, "tags", "merge", "centra-zen-app", "centrazen")
    assert "centra-zen-app → centrazen: 1 rows rewritten" in out
    assert "centra-zen-app → centrazen" in invoke(cli, "tags", "list")
    res = CliRunner().invoke(cli, ["tags", "merge", "nope", "centrazen"])
    assert res.exit_code == 2 and "no project tag 'nope'" in res.output
    out = json.loads(invoke(cli, "maintain", "--json"))
    assert out["maintenance"]["users"] == 1 and "rows_considered" in out["consolidation"]
    assert "maintenance: users=1" in invoke(cli, "maintain", "--no-consolidate")


def test_bench_librarian_prints_rows_per_second(cli: typer.Typer, env: Path) -> None:
    out = invoke(cli, "bench", "librarian", "--n", "40", "--embedder", "none")
    assert "rows/s" in out and "40 rows" in out
    res = json.loads(invoke(cli, "bench", "librarian", "--n", "20", "--embedder", "none", "--json"))
    assert res["handled"] == 20 and res["rows_per_s"] > 0
