"""The README's commands run as written, in order, as one user's shell session would run them.

Which blocks run: every fenced block whose language is `sh`, `bash` or `shell`, top to bottom. Other fences
(`text` for synopses, `json`, `toml`, `sql`, untagged output) are not run. A new README section therefore
runs as soon as it is written: write blocks that work as written, in the order a reader meets them.

Markers: an HTML comment on the line right above a block's fence.
- `<!-- doctest: skip REASON -->` — not run. Only for what cannot run here (another program's CLI, your own
  PostgreSQL server, a second server on the quick start's port); say why. Keep this list short: a skipped
  block is an untested one.
- `<!-- doctest: elsewhere tests/test_X.py REASON -->` — a recipe for another machine (a container engine, a
  cluster): not run here, and not counted as a skip, because the named test checks the files it uses (the
  Dockerfile is linted, compose.yaml and the chart are validated against their schemas). The test must exist.
- `<!-- doctest: background -->` — a long-running server (`make run`): started in the background, the session
  goes on once `/health` answers, and it is stopped at the end.
- `<!-- doctest: expect "TEXT" -->` — the block's output (stdout and stderr) must contain TEXT: examples
  that depend on each other are checked to fit together.

The session: a temp HOME (so `~/.gieok`, `~/.claude`, `~/.codex` are fresh), no GIEOK_* settings, PATH
without this virtualenv (the quick start says how to add it), the working directory a temp "checkout" with
the Makefile, pyproject.toml and this .venv linked in. Each block runs in bash with `set -eo pipefail` and
hands its environment and working directory to the next, as one terminal would. The server's port is a free
one: `127.0.0.1:8765` in a block becomes `127.0.0.1:<port>` (GIEOK_PORT is set to it, so `make run` and
the CLI agree). What a user already has is provided: Claude Code transcripts in `~/.claude/projects` and
a ChatGPT export in `~/Downloads/chatgpt-export/`, copied from tests/fixtures.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIXTURES = Path(__file__).parent / "fixtures"
VENV = Path(sys.prefix)
SHELL_LANGS = {"sh", "bash", "shell"}
DEFAULT_ADDR = "127.0.0.1:8765"

_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*doctest:\s*(skip|elsewhere|background|expect)\b\s*(.*?)\s*-->\s*$")

# The session runs each block like this: its environment and directory go on to the next block.
_RUNNER = 'set -eo pipefail\nsource "$1"\nenv -0 > "$2"\npwd > "$3"\n'


@dataclass
class Block:
    line: int
    lang: str
    code: str
    skip: str | None = None
    elsewhere: str | None = None
    background: bool = False
    expect: list[str] = field(default_factory=list)


def readme_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1).lower()
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        b = Block(start + 1, lang, "\n".join(lines[i + 1:j]) + "\n")
        k = start - 1
        while k >= 0 and (mk := _MARKER.match(lines[k])):
            kind, arg = mk.groups()
            if kind == "skip":
                b.skip = arg or "(no reason given)"
            elif kind == "elsewhere":
                b.elsewhere = arg
            elif kind == "background":
                b.background = True
            else:
                b.expect.append(arg.strip().strip('"'))
            k -= 1
        blocks.append(b)
        i = j + 1
    return blocks


def test_readme_markers_parse() -> None:
    """The parser itself, on a small README: what runs, what is skipped and why, what is expected."""
    text = ('# t\n<!-- doctest: skip needs a tool -->\n```sh\nnope\n```\n```text\nsynopsis\n```\n'
            '<!-- doctest: elsewhere tests/test_deploy_files.py needs a cluster -->\n```sh\nhelm\n```\n'
            '<!-- doctest: background -->\n<!-- doctest: expect "ok" -->\n```bash\nserve\n```\n```json\n{}\n```\n')
    bs = [b for b in readme_blocks(text) if b.lang in SHELL_LANGS]
    assert [(b.code, b.skip, b.elsewhere, b.background, b.expect) for b in bs] == [
        ("nope\n", "needs a tool", None, False, []),
        ("helm\n", None, "tests/test_deploy_files.py needs a cluster", False, []),
        ("serve\n", None, None, True, ["ok"])]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session_env(home: Path, port: int) -> dict[str, str]:
    venv_bin = str(VENV / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIEOK_", "CODEX_", "VIRTUAL_ENV", "PYTEST_", "VENV"))}
    env.update(HOME=str(home), PATH=path, GIEOK_PORT=str(port), OMP_NUM_THREADS="1")
    return env


def _user_data(home: Path) -> None:
    shutil.copytree(FIXTURES / "claude_code" / "projects", home / ".claude" / "projects")
    export = home / "Downloads" / "chatgpt-export"
    export.mkdir(parents=True)
    shutil.copy(FIXTURES / "chatgpt" / "conversations.json", export / "conversations.json")


def _wait_health(port: int, proc: subprocess.Popen[str], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the background block exited early ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).json().get("ok"):
                return
        except Exception:
            time.sleep(0.3)
    pytest.fail(f"the background block did not serve /health in {timeout:g} s:\n{log.read_text()[-3000:]}")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("curl") is None, reason="needs make and curl")
def test_readme_runs_in_order(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "checkout"
    home.mkdir()
    work.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        (work / name).symlink_to(ROOT / name)
    (work / ".venv").symlink_to(VENV, target_is_directory=True)
    if subprocess.run(["make", "-q", "install"], cwd=work, capture_output=True).returncode != 0:
        pytest.skip(f"{VENV} is not installed from this pyproject.toml: run `make install-test` first")
    _user_data(home)
    port = _free_port()
    env = _session_env(home, port)
    cwd = work
    background: list[subprocess.Popen[str]] = []
    ran = skipped = elsewhere = 0
    try:
        for n, b in enumerate(readme_blocks(README.read_text(encoding="utf-8"))):
            if b.lang not in SHELL_LANGS:
                continue
            if b.elsewhere is not None:
                test_file, _, reason = b.elsewhere.partition(" ")
                assert (ROOT / test_file).is_file() and reason, (
                    f"README.md line {b.line}: `elsewhere` names the test that checks this recipe, then why")
                elsewhere += 1
                continue
            if b.skip:
                assert b.skip != "(no reason given)", f"README.md line {b.line}: say why the block cannot run"
                skipped += 1
                continue
            code = b.code.replace(DEFAULT_ADDR, f"127.0.0.1:{port}")
            script = tmp_path / f"block{n}.sh"
            script.write_text(code, encoding="utf-8")
            where = f"README.md line {b.line}:\n{b.code}"
            if b.background:
                log = tmp_path / f"block{n}.log"
                with open(log, "w") as out:
                    proc = subprocess.Popen(["bash", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
                background.append(proc)
                _wait_health(port, proc, log)
                for text in b.expect:
                    assert text in log.read_text(), f"{where}\nexpected {text!r} in its output"
                ran += 1
                continue
            env_file, cwd_file = tmp_path / "env", tmp_path / "cwd"
            r = subprocess.run(["bash", "-c", _RUNNER, "readme", str(script), str(env_file), str(cwd_file)],
                               cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
            output = r.stdout + r.stderr
            assert r.returncode == 0, f"{where}\nexited {r.returncode}:\n{output[-4000:]}"
            for text in b.expect:
                assert text in output, f"{where}\nexpected {text!r} in:\n{output[-4000:]}"
            env = dict(kv.split("=", 1) for kv in env_file.read_text().split("\0") if "=" in kv)
            cwd = Path(cwd_file.read_text().strip())
            ran += 1
    finally:
        for proc in background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)
    # Skips are for what cannot run here; once they outnumber the blocks that run, the README is no longer
    # what is tested.
    assert ran >= 6 and skipped < ran, (ran, skipped, elsewhere)
