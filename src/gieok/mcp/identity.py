"""Who is calling: tool arguments > HTTP headers > the client's initialize info > GIEOK_ environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gieok.core.models import Identity
from gieok.memory.ingest import norm_label

HEADER = "x-gieok-"

# clientInfo.name as real clients send it → our platform label.
_CLIENT_NAMES = {
    "claude-code": "claude-code", "claude code": "claude-code", "claude-ai": "claude-desktop",
    "codex": "codex", "codex-mcp-client": "codex", "cursor": "cursor", "cursor-vscode": "cursor",
    "chatgpt": "chatgpt", "openai-mcp": "chatgpt", "hermes-agent": "hermes-agent", "openclaw": "openclaw",
    "windsurf": "windsurf", "vscode": "vscode", "visual studio code": "vscode",
}


def platform_from_client(name: str | None) -> str:
    n = norm_label(name)
    if not n:
        return ""
    for key, label in _CLIENT_NAMES.items():
        if n == key or n.startswith(key):
            return label
    return n


def resolve_identity(base: Identity, *, headers: Mapping[str, str] | None, client_name: str | None,
                     args: Mapping[str, Any]) -> Identity:
    h = {k.lower(): v for k, v in (headers or {}).items()}

    def pick(arg: str, header: str, env_value: str, client_value: str = "") -> str:
        v = args.get(arg)
        if v:
            return str(v)
        if h.get(HEADER + header):
            return h[HEADER + header]
        return env_value or client_value

    platform = pick("platform", "platform", base.agent_platform, platform_from_client(client_name))
    sub_role = pick("subagent_role", "subagent-role", base.subagent_role)
    sub_model = pick("subagent_model", "subagent-model", base.subagent_model)
    return Identity(
        user_id=pick("user_id", "user", base.user_id),
        agent_platform=norm_label(platform),
        agent_model=norm_label(pick("model", "model", base.agent_model)),
        is_subagent=bool(sub_role or sub_model),
        subagent_model=norm_label(sub_model),
        subagent_role=norm_label(sub_role),
        session_id=pick("session_id", "session", base.session_id),
        project=pick("project", "project", base.project),
    )
