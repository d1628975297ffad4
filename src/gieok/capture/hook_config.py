"""The few settings a hook needs, read from the environment without pydantic-settings.

Every prompt waits for the hook, and importing pydantic-settings (with pydantic) costs several times a bare
interpreter start, so the hook's path to a running server reads its settings here: the same `GIEOK_*`
variables, the same defaults and the same bounds as `gieok.core.settings.Settings` (`tests/test_hook_fast.py`
checks that both read the same environment alike). Anything this reader is unsure of (a value that does not
parse, or is out of bounds) makes `from_env` return None, and the hook then builds the real `Settings`,
which names the bad variable. Hooks that find no server, and SessionStart without one, use the real
settings anyway: they open the database.

stdlib `os` only, and no dataclasses or typing at run time (see `gieok.capture.transcript`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Protocol

    class HookSettings(Protocol):
        """What the hook reads: a `HookConfig`, or the full `Settings` (tests, the direct path)."""

        @property
        def home(self) -> str | Path: ...
        @property
        def user_id(self) -> str: ...
        @property
        def host(self) -> str: ...
        @property
        def port(self) -> int: ...
        @property
        def max_content_bytes(self) -> int: ...
        @property
        def token_budget(self) -> int: ...
        @property
        def chars_per_token(self) -> float: ...
        @property
        def agent_model(self) -> str: ...
        @property
        def database_url(self) -> str: ...
        @property
        def resolved_database_url(self) -> str: ...


class HookConfig:
    __slots__ = ("agent_model", "chars_per_token", "database_url", "home", "host", "max_content_bytes", "port",
                 "token_budget", "user_id")

    def __init__(self, *, home: str, user_id: str, host: str = "127.0.0.1", port: int = 8765,
                 max_content_bytes: int = 65536, token_budget: int = 8000, chars_per_token: float = 1.7,
                 agent_model: str = "", database_url: str = "") -> None:
        self.home = home
        self.user_id = user_id
        self.host = host
        self.port = port
        self.max_content_bytes = max_content_bytes
        self.token_budget = token_budget
        self.chars_per_token = chars_per_token
        self.agent_model = agent_model
        self.database_url = database_url

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{os.path.join(self.home, 'memory.db')}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HookConfig | None:
        """The hook's settings from `GIEOK_*` (names case-insensitive, as pydantic-settings reads them), or
        None when a value needs the real settings to explain what is wrong with it."""
        env = {k.lower(): v for k, v in (os.environ if environ is None else environ).items()
               if k[:6].lower() == "gieok_"}
        try:
            port = int(env.get("gieok_port", "8765"))
            max_bytes = int(env.get("gieok_max_content_bytes", "65536"))
            budget = int(env.get("gieok_token_budget", "8000"))
            cpt = float(env.get("gieok_chars_per_token", "1.7"))
        except ValueError:
            return None
        if max_bytes < 1 or budget < 100 or not cpt > 0:
            return None
        home = env.get("gieok_home") or "~/.gieok"
        return cls(home=os.path.expanduser(home), user_id=env["gieok_user_id"] if "gieok_user_id" in env
                   else _os_user(), host=env.get("gieok_host", "127.0.0.1"), port=port, max_content_bytes=max_bytes,
                   token_budget=budget, chars_per_token=cpt, agent_model=env.get("gieok_agent_model", ""),
                   database_url=env.get("gieok_database_url", ""))


def _os_user() -> str:
    # As `gieok.core.settings._os_user`: the login name, or a stable fallback where there is no passwd entry.
    import getpass
    try:
        return getpass.getuser()
    except Exception:
        return "default"
