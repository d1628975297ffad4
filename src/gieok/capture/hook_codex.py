"""The Codex hook (`gieok hook codex`, the notify JSON as the last argument): each finished turn into messages."""

from __future__ import annotations

import os
import time

from gieok.capture.hook_messages import HookError, StreamState, deliver, iso, message, project_hint, split_message
from gieok.core.anchors import gather, mentions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gieok.capture.hook_config import HookSettings


def handle_codex(p: dict[str, Any], cfg: HookSettings) -> None:
    """Codex runs its `notify` program after each turn with the user's inputs and the last answer; it gives no
    times or model, so the rows are stamped now (inputs first) and the model comes from Codex's config. Its
    payload names no tool calls: anchors come from the files the texts mention."""
    if p.get("type") != "agent-turn-complete":
        return
    thread = str(p.get("thread-id") or p.get("thread_id") or "")
    turn = str(p.get("turn-id") or p.get("turn_id") or "")
    cwd = str(p.get("cwd") or os.getcwd())
    project = project_hint(cwd)
    model = _codex_model() or cfg.agent_model
    inputs = [s for s in p.get("input-messages") or p.get("input_messages") or [] if isinstance(s, str) and s.strip()]
    last = p.get("last-assistant-message") or p.get("last_assistant_message")
    state = StreamState(cfg.home, "codex", thread or "no-thread")
    with state.locked():
        cur = state.load()
        seen = list(cur.turns or [])
        if turn and turn in seen:
            return              # Codex re-sent a turn it already reported
        now = time.time_ns() // 1000
        texts = [("user", s) for s in inputs] + ([("assistant", last)] if isinstance(last, str) and last.strip()
                                                 else [])
        msgs = []
        for i, (role, text) in enumerate(texts):
            meta: dict[str, Any] = {"turn_id": turn} if turn else {}
            anchors = gather(mentions(text), cwd)
            if anchors:
                meta["anchors"] = anchors
            msgs.append(message(cfg, text, role=role, platform="codex", model=model, session_id=thread,
                                project=project, created_at=iso(now + i), meta=meta))
        errors = deliver(cfg, [x for m in msgs for x in split_message(m, cfg.max_content_bytes)])
        cur.turns = ([*seen, turn] if turn else seen)[-100:]
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


def _codex_model() -> str:
    home = os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex")
    try:
        import tomllib
        with open(os.path.join(home, "config.toml"), "rb") as fh:
            return str(tomllib.load(fh).get("model") or "")
    except (OSError, ValueError):
        return ""

