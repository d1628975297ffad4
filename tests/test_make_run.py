"""Getting running: `gieok serve` checks its port before it says it is serving and names what holds it; a
second `make run` says a gieok server is already there instead of dying with Errno 98; `make run` tells how
to reach bare `gieok` commands; `make shim` / `make unshim` manage the ~/.local/bin link, and only on request.

The make tests run the real Makefile in a temp "checkout" (Makefile, pyproject.toml and this .venv linked in),
as tests/test_readme.py does."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import ROOT, VENV, _free_port, _session_env, _wait_health

GIEOK = str(Path(sys.executable).with_name("gieok"))


def test_serve_names_what_holds_the_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
        env.update(GIEOK_HOME=str(tmp_path), GIEOK_EMBEDDER="none", OMP_NUM_THREADS="1")
        r = subprocess.run([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert f"port {port} on 127.0.0.1 is taken by process {os.getpid()}" in r.stderr
    assert "--port or GIEOK_PORT" in r.stderr
    assert "gieok is serving" not in r.stderr and "Errno 98" not in r.stderr and "Traceback" not in r.stderr


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        (work / name).symlink_to(ROOT / name)
    (work / ".venv").symlink_to(VENV, target_is_directory=True)
    if subprocess.run(["make", "-q", "install"], cwd=work, capture_output=True).returncode != 0:
        pytest.skip(f"{VENV} is not installed from this pyproject.toml: run `make install-test` first")
    (tmp_path / "home").mkdir()
    return work


def test_a_second_make_run_says_one_is_running(checkout: Path) -> None:
    port = _free_port()
    env = _session_env(checkout.parent / "home", port)
    env["GIEOK_EMBEDDER"] = "none"
    log = checkout.parent / "first.log"
    with open(log, "w") as out:
        first = subprocess.Popen(["make", "run"], cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
    try:
        _wait_health(port, first, log, timeout=120)
        text = log.read_text()
        assert "tip: gieok is " in text and "export PATH=" in text and "make shim" in text
        assert f"MCP (Streamable HTTP)  http://127.0.0.1:{port}/mcp" in text and "Ctrl-C stops it" in text
        second = subprocess.run(["make", "run"], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode != 0
        assert "a gieok server" in second.stderr and f"http://127.0.0.1:{port}/mcp" in second.stderr
        assert "Errno 98" not in second.stdout + second.stderr
        assert first.poll() is None          # the first one keeps serving
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        try:
            first.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(5)


def test_make_shim_links_only_when_asked(checkout: Path) -> None:
    home = checkout.parent / "home"
    env = _session_env(home, _free_port())
    link = home / ".local" / "bin" / "gieok"
    assert not link.exists()
    r = subprocess.run(["make", "shim"], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert link.is_symlink() and Path(os.readlink(link)) == (checkout / ".venv" / "bin" / "gieok").absolute()
    assert "is not on your PATH" in r.stdout
    assert subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=60).returncode == 0
    r = subprocess.run(["make", "unshim"], cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not link.exists()
