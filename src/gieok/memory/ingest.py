"""The hot path: validate, normalise, hash and build the raw row. No embedding, no LLM, no network.

Everything here is pure and cheap (tens of microseconds), so capture never waits.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gieok.core.columns import GIVEN_COLUMNS
from gieok.core.dates import not_in_future, parse_time, utcnow
from gieok.core.errors import InvalidInput
from gieok.core.gitfiles import clean_remote
from gieok.core.ids import is_uuid, uuid7
from gieok.core.models import KINDS, PRIVACY, ROLES, SOURCES, Identity, Memory
from gieok.core.redact import redact
from gieok.core.text import index_text

_MAX_ID = 200
# Tool output excerpts a capture keeps for error fingerprints (gieok.capture.transcript): bounded here too,
# whoever sends them.
MAX_TOOL_ERRORS = 3
MAX_TOOL_ERROR_CHARS = 4000


@dataclass(slots=True)
class MessageIn:
    """One message to remember, as a client sends it. Only `content` and `user_id` are required."""

    content: str
    user_id: str
    role: str = "user"
    kind: str = "episodic"
    source: str = "chat"
    title: str = ""
    agent_platform: str = ""
    agent_model: str = ""
    is_subagent: bool = False
    subagent_model: str = ""
    subagent_role: str = ""
    session_id: str = ""
    project: str = ""
    p_tags: list[str] = field(default_factory=list)
    d_tags: list[str] = field(default_factory=list)
    privacy_scope: str = "private"
    team: str = ""
    importance: float = 0.5
    is_pinned: bool = False
    created_at: str | datetime | None = None
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def norm_label(value: str | None) -> str:
    """Identity labels are stored lower(trim()) so 'Researcher ' and 'researcher' are one role (seed 2-A d)."""
    return " ".join((value or "").split()).lower()


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _plain_id(field_name: str, value: str) -> str:
    value = value.strip()
    if len(value) > _MAX_ID or any(ch in value for ch in "\x00\n\r\t"):
        raise InvalidInput(field_name, f"must be at most {_MAX_ID} characters without control characters")
    return value


def _choice(field_name: str, value: str, allowed: tuple[str, ...]) -> str:
    v = norm_label(value)
    if v not in allowed:
        raise InvalidInput(field_name, f"{value!r} is not one of {', '.join(allowed)}")
    return v


def prepare(msg: MessageIn, *, max_bytes: int, redact_secrets: bool = True,
            now: datetime | None = None) -> tuple[Memory, str]:
    """Validate and normalise a message into a row and its full-text form. Raises InvalidInput naming the
    field; builds nothing partial."""
    if not isinstance(msg.content, str):
        raise InvalidInput("content", "must be a string")
    content = unicodedata.normalize("NFC", msg.content).replace("\x00", "")
    if not content.strip():
        raise InvalidInput("content", "is empty: send the message text to remember")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput("content", f"is {size} bytes, over the {max_bytes}-byte limit "
                                      "(split it, or raise GIEOK_MAX_CONTENT_BYTES)")
    user_id = _plain_id("user_id", msg.user_id or "")
    if not user_id:
        raise InvalidInput("user_id", "is empty: set GIEOK_USER_ID or pass user_id")
    role = _choice("role", msg.role, ROLES)
    kind = _choice("kind", msg.kind, KINDS)
    source = _choice("source", msg.source, SOURCES)
    privacy = _choice("privacy_scope", msg.privacy_scope or "private", PRIVACY)
    team = check_team(privacy, msg.team)
    try:
        importance = float(msg.importance)
    except (TypeError, ValueError):
        raise InvalidInput("importance", f"{msg.importance!r} is not a number between 0 and 1") from None
    if not 0.0 <= importance <= 1.0:
        raise InvalidInput("importance", f"{importance} is outside 0..1")
    if msg.id is not None and not is_uuid(msg.id.lower()):
        raise InvalidInput("id", f"{msg.id!r} is not a UUID")
    now = now or utcnow()
    created = not_in_future(parse_time(msg.created_at, "created_at"), "created_at", now) \
        if msg.created_at not in (None, "") else now
    title = msg.title or ""
    meta = _code_meta(dict(msg.meta))
    if redact_secrets:
        content, found = redact(content)
        if title:
            title, found_t = redact(title)
            found = found + found_t
        if meta.get("tool_errors"):
            kept = []
            for excerpt in meta["tool_errors"]:
                excerpt, found_e = redact(excerpt)
                kept.append(excerpt)
                found = found + found_e
            meta["tool_errors"] = kept
        if found:
            meta["redacted"] = sorted({r.kind for r in found})
    memory = Memory(
        id=msg.id.lower() if msg.id else uuid7(int(created.timestamp() * 1000) if msg.created_at else None),
        user_id=user_id,
        content=content,
        role=role,
        kind=kind,
        source=source,
        title=title.strip(),
        agent_platform=norm_label(msg.agent_platform),
        agent_model=norm_label(msg.agent_model),
        is_subagent=bool(msg.is_subagent or msg.subagent_role or msg.subagent_model),
        subagent_model=norm_label(msg.subagent_model),
        subagent_role=norm_label(msg.subagent_role),
        session_id=_plain_id("session_id", msg.session_id or ""),
        project=" ".join((msg.project or "").split()),
        p_tags=[t for t in (norm_label(t) for t in msg.p_tags) if t],
        d_tags=[t for t in (norm_label(t) for t in msg.d_tags) if t],
        privacy_scope=privacy,
        team=team,
        importance=importance,
        is_pinned=bool(msg.is_pinned),
        content_hash=content_hash(content),
        created_at=created,
        updated_at=now,
        meta=meta,
    )
    return memory, index_text(f"{memory.title}\n{content}" if memory.title else content)


def check_team(privacy: str, team: str | None) -> str:
    """A `team` memory names its team; a private or public one names none."""
    t = _plain_id("team", team or "")
    if privacy == "team" and not t:
        raise InvalidInput("team", "is required with privacy_scope=team: name the team to share with")
    if privacy != "team" and t:
        raise InvalidInput("team", f"is only for privacy_scope=team (this memory is {privacy})")
    return t


def _code_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The parts of meta about code as the store may keep them: tool error excerpts bounded (strings only),
    anchors' remote URLs without credentials. The librarian validates anchors fully when it indexes them."""
    errors = meta.get("tool_errors")
    if errors is not None:
        kept = [e[:MAX_TOOL_ERROR_CHARS] for e in errors if isinstance(e, str)] if isinstance(errors, list) else []
        if kept:
            meta["tool_errors"] = kept[:MAX_TOOL_ERRORS]
        else:
            meta.pop("tool_errors")
    anchors = meta.get("anchors")
    if isinstance(anchors, list):
        meta["anchors"] = [{**a, "remote": clean_remote(a["remote"])} if isinstance(a, dict)
                           and isinstance(a.get("remote"), str) else a for a in anchors]
    return meta



# A message's own columns (gieok.core.columns) and the short names `platform` and `model`; not the pin, which
# this form has never taken.
FIELDS = frozenset(GIVEN_COLUMNS) - {"is_pinned"} | {"platform", "model"}


def message_from_json(item: dict[str, Any], base: Identity) -> MessageIn:
    """The fields `gieok ingest --json` and POST /v1/messages take."""
    unknown = set(item) - FIELDS
    if unknown:
        raise InvalidInput(sorted(unknown)[0], f"unknown field; accepted fields: {', '.join(sorted(FIELDS))}")
    content = item.get("content")
    if not isinstance(content, str):
        raise InvalidInput("content", "is required and must be a string")
    return MessageIn(
        content=content, user_id=str(item.get("user_id") or base.user_id), role=str(item.get("role", "user")),
        kind=str(item.get("kind", "episodic")), source=str(item.get("source", "chat")),
        title=str(item.get("title", "")),
        agent_platform=str(item.get("agent_platform") or item.get("platform") or base.agent_platform),
        agent_model=str(item.get("agent_model") or item.get("model") or base.agent_model),
        subagent_role=str(item.get("subagent_role") or base.subagent_role),
        is_subagent=bool(item.get("is_subagent", base.is_subagent)),
        subagent_model=str(item.get("subagent_model") or base.subagent_model),
        session_id=str(item.get("session_id") or base.session_id), project=str(item.get("project") or base.project),
        created_at=item.get("created_at"), id=item.get("id"),
        importance=item.get("importance", 0.5), meta=dict(item.get("meta") or {}),
        p_tags=list(item.get("p_tags") or []), d_tags=list(item.get("d_tags") or []),
        privacy_scope=str(item.get("privacy_scope") or "private"), team=str(item.get("team") or ""),
    )
