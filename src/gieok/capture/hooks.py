"""Agent hooks: Claude Code (`gieok hook claude-code`, the event JSON on stdin) and Codex (`gieok hook codex`,
the notify JSON as the last argument) turned into memories.

A hook runs on every prompt, so it must never block or break the agent:
- the whole run is capped at `HOOK_DEADLINE_S` (a watchdog exits 0); any error exits 0 with one line on stderr,
  also appended to `<GIEOK_HOME>/hooks/hook.log`, since agents hide a hook's stderr;
- nothing is lost when the watchdog stops a run: messages wait in `<GIEOK_HOME>/hooks/outbox/` until stored,
  and each run delivers what stopped runs left, in the time it has to spare;
- stdout stays empty except for SessionStart, whose stdout Claude Code adds to the model's context;
- when a server runs (`gieok serve --transport http`) the hook talks to it (`gieok.capture.server_client`,
  connect timeout 0.3 s) instead of opening the database — only when its `/health` reports the
  same store, so a server of another database on the same port is ignored — and opens the database itself
  when nothing answers;
- the path to a running server is light: settings from `gieok.capture.hook_config` (no pydantic-settings),
  transcripts from `gieok.capture.transcript`, messages as plain JSON dicts, a socket for HTTP; the settings
  object, the store (numpy) and the service are imported only when no server answers (`gieok bench hook`
  measures both paths against a bare interpreter start);
- what a turn says about code travels in its row's meta: anchors to the files it touched or named (the
  repository, HEAD and blob ids read from `.git`, no subprocess: `gieok.core.anchors`) and excerpts of tool
  output that shows an error; the librarian indexes both.

Claude Code events (handled here: this is the hook on every prompt; Codex's is `gieok.capture.hook_codex`):
- SessionStart: prints the load_context block for claude-code, the session's model and the project, within
  `CONTEXT_MAX_CHARS` (Claude Code replaces longer hook output with a short preview).
- UserPromptSubmit: stores the prompt (role user, time = now), and any finished turn not yet stored.
- Stop: stores the assistant turns written since the last capture; a per-stream cursor (byte offset) lives in
  `<GIEOK_HOME>/hooks/`. Claude Code may run Stop before the last entry reaches the transcript
  (anthropics/claude-code#15813): when `last_assistant_message` is not in the transcript yet the hook waits up
  to `FLUSH_WAIT_S`, then leaves that turn for the next event, so a turn is stored whole, never in halves.
- SubagentStop: the same for the subagent's transcript (`agent_transcript_path`, or the sidechain entries of
  `transcript_path`); rows are marked is_subagent, with `agent_type` as subagent_role and the model it used.
- SessionEnd: stores whatever is left.
Re-reading is harmless: a turn always gets the same content and time, and the store dedups on them.

The rest is in `gieok.capture.hook_messages`: reading the turns written after a per-stream cursor, building
their messages, and sending them to the server or storing them directly. Two modules rather than more on
purpose: every module on this path is one more file to load on every prompt.
"""

from __future__ import annotations

import _thread
import os
import sys
import time

from gieok.capture.fastjson import loads
from gieok.capture.hook_config import HookConfig
from gieok.capture.hook_messages import (
    HookError,
    StreamState,
    deliver,
    full_settings,
    iso_now,
    message,
    new_items,
    outbox_drain,
    project_hint,
    prune_states,
    session_context,
    split_message,
    with_code,
)
from gieok.capture.transcript import CLAUDE
from gieok.core.anchors import gather, mentions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gieok.capture.hook_config import HookSettings
    from gieok.capture.transcript import Item

HOOK_DEADLINE_S = 5.0
DRAIN_MARGIN_S = 2.0     # draining the outbox starts only with this much of the deadline left, and stops there
_LOG_MAX_BYTES = 1 << 20


# --- entry point -------------------------------------------------------------------------------------------
def run(platform: str, read_input: Callable[[], str], *, deadline_s: float = HOOK_DEADLINE_S) -> int:
    """`gieok hook <platform>`: handle one event. Always returns 0, so the agent never sees a failure."""
    started = time.monotonic()
    _arm_watchdog(deadline_s)
    cfg: HookSettings | None = None
    try:
        cfg = HookConfig.from_env() or full_settings()
        raw = read_input()
        if platform == "claude-code":
            out = handle_claude(_parse(raw, "a Claude Code hook event"), cfg)
        elif platform == "codex":
            # Imported here: the Claude Code hook runs on every prompt and need not load the Codex handler.
            from gieok.capture.hook_codex import handle_codex
            handle_codex(_parse(raw, "a Codex notify payload"), cfg)
            out = None
        else:
            raise HookError(f"unknown platform {platform!r}: use claude-code or codex")
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except Exception as exc:  # a hook must never break the agent: say what went wrong, exit 0
        _report(cfg, platform, exc)
    if cfg is not None:
        try:   # what hooks stopped by their watchdog left, in the time this run has to spare
            outbox_drain(cfg, until=started + deadline_s - DRAIN_MARGIN_S)
        except Exception as exc:
            _report(cfg, platform, exc)
    return 0


def read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise HookError("no event on stdin: the agent pipes its hook event JSON in")
    return sys.stdin.read()


def _parse(raw: str, what: str) -> dict[str, Any]:
    try:
        data = loads(raw)
    except ValueError:
        raise HookError(f"input is not {what} (expected a JSON object, got {raw[:40]!r})") from None
    if not isinstance(data, dict):
        raise HookError(f"input is not {what} (expected a JSON object)")
    return data


def _arm_watchdog(seconds: float) -> None:
    # A bare `_thread` rather than `threading.Timer`: the same OS thread without importing `threading` on
    # every prompt, and like a daemon thread it never keeps the process alive.
    def give_up() -> None:
        time.sleep(seconds)
        try:
            sys.stderr.write(f"gieok hook: gave up after {seconds:g} s so the agent is not held up "
                             "(its messages wait in hooks/outbox for the next hook run)\n")
            sys.stderr.flush()
        finally:
            os._exit(0)
    _thread.start_new_thread(give_up, ())


def _report(cfg: HookSettings | None, platform: str, exc: Exception) -> None:
    line = f"gieok hook {platform}: {exc if isinstance(exc, HookError) else f'{type(exc).__name__}: {exc}'}"
    line = " ".join(line.split())[:500]
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    if cfg is None:
        return
    try:
        log = os.path.join(os.fspath(cfg.home), "hooks", "hook.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        if os.path.exists(log) and os.path.getsize(log) > _LOG_MAX_BYTES:
            os.replace(log, log[:-4] + ".log.1")
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{iso_now()} {line}\n")
    except OSError:
        pass


# --- Claude Code -------------------------------------------------------------------------------------------
def handle_claude(ev: dict[str, Any], cfg: HookSettings) -> str | None:
    name = str(ev.get("hook_event_name") or "")
    session = str(ev.get("session_id") or "")
    if not name or not session:
        raise HookError("event has no hook_event_name/session_id: is this a Claude Code hook event?")
    cwd = str(ev.get("cwd") or os.getcwd())
    project = project_hint(cwd)
    transcript = os.path.expanduser(str(ev["transcript_path"])) if ev.get("transcript_path") else None
    main = StreamState(cfg.home, session)

    if name == "SubagentStop":
        _capture_subagent(ev, cfg, session, project, cwd, transcript, main)
        return None
    with main.locked():
        cur = main.load()
        if name == "SessionStart" and ev.get("model"):
            cur.model = str(ev["model"])
        msgs: list[dict[str, Any]] = []
        new_offset = None
        if transcript is not None and os.path.exists(transcript):
            mode = {"Stop": "stop", "UserPromptSubmit": "prompt"}.get(name, "end")
            items, new_offset = new_items(transcript, cur, lambda e: not e.get("isSidechain"), mode=mode,
                                          last_message=ev.get("last_assistant_message") if name == "Stop" else None)
            for it in items:
                if it.role == "assistant":      # prompts were stored when submitted (UserPromptSubmit)
                    cur.model = it.model or cur.model
                    msgs.append(_turn_message(cfg, it, session, project, cwd, model=it.model))
        prompt = str(ev.get("prompt") or "")
        if name == "UserPromptSubmit" and prompt.strip():
            meta: dict[str, Any] = {}
            anchors = gather(mentions(prompt), cwd)
            if anchors:
                meta["anchors"] = anchors
            msgs.append(message(cfg, prompt, role="user", platform=CLAUDE, model=cur.model, session_id=session,
                                project=project, created_at=iso_now(), meta=meta))
        errors = deliver(cfg, [p for m in msgs for p in split_message(m, cfg.max_content_bytes)])
        if transcript is not None and new_offset is not None:
            cur.path, cur.offset = str(transcript), new_offset
        main.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")
    if name == "SessionStart":
        prune_states(cfg.home)
        return session_context(cfg, model=cur.model, project=project)
    return None


def _turn_message(cfg: HookSettings, it: Item, session: str, project: str, cwd: str, **kw: Any) -> dict[str, Any]:
    return message(cfg, it.text, role=it.role, platform=CLAUDE, session_id=it.session_id or session,
                   project=project, created_at=it.created_at, meta=with_code({"uuid": it.uuid}, it, cwd), **kw)


def _capture_subagent(ev: dict[str, Any], cfg: HookSettings, session: str, project: str, cwd: str,
                      transcript: str | None, main: StreamState) -> None:
    agent_id = str(ev.get("agent_id") or "")
    role = str(ev.get("agent_type") or "")
    own = ev.get("agent_transcript_path")
    path = os.path.expanduser(str(own)) if own else transcript
    if path is None or not os.path.exists(path):
        raise HookError("SubagentStop without a readable agent_transcript_path/transcript_path")

    def keep(e: dict[str, Any]) -> bool:   # in the old layout subagents share the main file as sidechains
        return bool(own) or (bool(e.get("isSidechain")) and (not agent_id or e.get("agentId") == agent_id))

    state = StreamState(cfg.home, session, f"agent-{agent_id or 'sidechain'}")
    main_model = main.load().model
    with state.locked():
        cur = state.load()
        items, offset = new_items(path, cur, keep, mode="stop", last_message=ev.get("last_assistant_message"))
        msgs: list[dict[str, Any]] = []
        for it in items:
            m = _turn_message(cfg, it, session, project, cwd, model=main_model, is_subagent=True,
                              subagent_role=role, subagent_model=it.model if it.role == "assistant" else "")
            m["meta"]["agent_id"] = agent_id
            if it.role == "user":           # the main agent's task for the subagent, not the user's words
                m["role"] = "system"
                m["meta"]["subagent_task"] = True
            msgs.append(m)
        errors = deliver(cfg, [p for m in msgs for p in split_message(m, cfg.max_content_bytes)])
        cur.path, cur.offset = str(path), offset
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


# --- without the CLI ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """`python -m gieok.capture.hooks claude-code|codex [payload]`: the hook without the CLI around it."""
    args = sys.argv[1:] if argv is None else argv
    platform = args[0] if args else ""
    if platform == "codex" and len(args) > 1:
        return run(platform, lambda: args[-1])
    return run(platform, read_stdin)


if __name__ == "__main__":
    sys.exit(main())
