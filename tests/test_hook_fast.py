"""The hook's light path to a running server: what it imports (no pydantic-settings, no numpy, no service),
its settings reader against the real `Settings`, its HTTP client, and anchors and tool errors arriving through
the server."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gieok.capture import fastjson
from gieok.capture.hook_config import HookConfig
from gieok.capture.hook_messages import _query
from gieok.capture.server_client import _parse
from gieok.core.settings import Settings
from tests.test_anchors import git, make_repo
from tests.test_hooks import Growing, event, hook_env, rows, server  # noqa: F401 (fixture)

GIEOK = str(Path(sys.executable).with_name("gieok"))
HEAVY = ("pydantic", "pydantic_settings", "numpy", "gieok.memory.service", "gieok.store", "gieok.core.settings",
         "gieok.memory.ingest", "http.client", "typer", "mcp",
         # what the light path does without (each measured at a noticeable part of a bare start)
         "re", "json", "socket", "threading", "hashlib", "typing", "dataclasses", "pathlib", "urllib", "datetime")


@pytest.mark.parametrize("env", [
    {},
    {"GIEOK_HOME": "~/elsewhere", "GIEOK_PORT": "9001", "GIEOK_HOST": "0.0.0.0", "GIEOK_USER_ID": "kim",
     "GIEOK_MAX_CONTENT_BYTES": "1000", "GIEOK_TOKEN_BUDGET": "500", "GIEOK_CHARS_PER_TOKEN": "2.5",
     "GIEOK_AGENT_MODEL": "gpt-5.5", "GIEOK_DATABASE_URL": "postgresql://db/gieok"},
    {"gieok_port": "9002", "gieok_user_id": "lower"},          # pydantic-settings reads names in any case
])
def test_reads_the_environment_as_settings_does(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in __import__("os").environ if k.lower().startswith("gieok_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    fast = HookConfig.from_env()
    full = Settings()
    assert fast is not None
    for name in ("user_id", "host", "port", "max_content_bytes", "token_budget", "chars_per_token", "agent_model",
                 "database_url", "resolved_database_url"):
        assert getattr(fast, name) == getattr(full, name), name
    assert Path(fast.home) == full.home


@pytest.mark.parametrize("bad", [{"GIEOK_PORT": "eighty"}, {"GIEOK_TOKEN_BUDGET": "10"},
                                 {"GIEOK_CHARS_PER_TOKEN": "0"}, {"GIEOK_MAX_CONTENT_BYTES": "x"}])
def test_unsure_values_go_to_the_real_settings(bad: dict[str, str]) -> None:
    assert HookConfig.from_env(bad) is None


def test_http_replies_are_read_whole() -> None:
    assert _parse(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra") == (200, b"{}")
    assert _parse(b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n: 1\r\n"
                  b"1\r\n}\r\n0\r\n\r\n") == (400, b'{"a": 1}')
    assert _parse(b"garbage") is None and _parse(b"SMTP 220\r\n\r\n") is None


@pytest.mark.parametrize("doc", ['{"a": [1, 2.5, -3e10, true, false, null, "회의 ☕ \\u0000\\n"], "b": {}}',
                                 " [ ] ", "12345678901234567890", '"x"', "NaN", '{"k": -Infinity, "k2": 1E-7}'])
def test_fastjson_reads_and_writes_as_json_does(doc: str) -> None:
    assert repr(fastjson.loads(doc)) == repr(json.loads(doc))
    assert fastjson.loads(doc.encode()) == json.loads(doc) or doc == "NaN"
    assert fastjson.dumps(json.loads(doc)) == json.dumps(json.loads(doc), ensure_ascii=False)


@pytest.mark.parametrize("bad", ["", "{", "[1,]", '{"a": 1} x', "\ufeff{}", b"\xff\xfe"])
def test_fastjson_refuses_what_json_refuses(bad: str | bytes) -> None:
    with pytest.raises(ValueError):
        fastjson.loads(bad)
    with pytest.raises(TypeError, match="not JSON serializable"):
        fastjson.dumps({"x": object()})


def test_query_strings_are_encoded_as_urllib_does() -> None:
    from urllib.parse import parse_qs
    params = {"model": "opus 4/5", "project": "센트라젠 작업&x=1", "budget": 500, "user_id": "a+b"}
    assert parse_qs(_query(params)) == {k: [str(v)] for k, v in params.items()}


def imported_modules(stderr: str) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \| (.+)$", stderr, re.M)}


def test_with_a_server_the_hook_imports_nothing_heavy(tmp_path: Path,
                                                      server: tuple[dict[str, str], Path]) -> None:  # noqa: F811
    env, db = server
    repo = make_repo(tmp_path / "shop")
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)
    g.to("u-01")
    ev = event("UserPromptSubmit", tr, repo, prompt="why does billing/retry.py:3 retry twice?")
    r = subprocess.run([sys.executable, "-X", "importtime", GIEOK, "hook", "claude-code"], input=json.dumps(ev),
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    mods = imported_modules(r.stderr)
    assert "gieok.capture.hooks" in mods and "gieok.capture.server_client" in mods
    assert sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)) == []
    leftover = "\n".join(ln for ln in r.stderr.splitlines() if not ln.startswith("import time:"))
    assert leftover == ""
    [got] = rows(db, "role='user'")
    anchors = json.loads(got["meta"])["anchors"]
    assert anchors == [{"root": str(repo), "remote": "https://github.com/acme/shop.git", "path": "billing/retry.py",
                        "via": "mention", "commit": git(repo, "rev-parse", "HEAD"),
                        "blob": git(repo, "hash-object", "billing/retry.py"), "lines": [3, 3]}]


def test_without_a_server_the_hook_still_writes_anchors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    env = hook_env(tmp_path)
    tr = tmp_path / "t.jsonl"
    entries = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "cwd": str(repo), "timestamp": "2026-11-30T09:00:00.000Z",
         "message": {"role": "user", "content": "fix the retry"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "cwd": str(repo), "timestamp": "2026-11-30T09:00:01.000Z",
         "message": {"role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}]}},
        {"type": "user", "uuid": "r1", "sessionId": "s", "cwd": str(repo), "timestamp": "2026-11-30T09:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                  "content": "E   KeyError: 'customer_id'\nGITHUB_TOKEN=ghp_"
                                                             "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"}]}},
        {"type": "assistant", "uuid": "a2", "sessionId": "s", "cwd": str(repo), "timestamp": "2026-11-30T09:00:03.000Z",
         "message": {"role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "t2", "name": "Write",
              "input": {"file_path": str(repo / "billing" / "retry.py"), "content": "x"}},
             {"type": "text", "text": "Done."}]}},
    ]
    tr.write_text("".join(json.dumps(e) + "\n" for e in entries), "utf-8")
    r = subprocess.run([GIEOK, "hook", "claude-code"], env=env, capture_output=True, text=True, timeout=60,
                       input=json.dumps({"session_id": "s", "transcript_path": str(tr), "cwd": str(repo),
                                         "hook_event_name": "Stop", "last_assistant_message": "Done."}))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    with sqlite3.connect(tmp_path / "memory.db") as con:
        [meta] = [json.loads(m) for (m,) in con.execute("SELECT meta FROM memory WHERE role = 'assistant'")]
    assert [a["path"] for a in meta["anchors"]] == ["billing/retry.py"] and meta["anchors"][0]["via"] == "write"
    assert "KeyError: 'customer_id'" in meta["tool_errors"][0]
    assert "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5" not in json.dumps(meta)     # redacted like the content
    assert "github_token" in meta["redacted"]
