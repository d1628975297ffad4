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
from gieok.core.limits import MAX_ID_CHARS, MAX_TITLE_CHARS, check_label, check_meta, check_str, check_tags
from gieok.core.models import KINDS, PRIVACY, ROLES, SOURCES, Identity, Memory
from gieok.core.redact import redact
from gieok.core.redact_json import redact_json
from gieok.core.text import row_index_text

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
    return check_label(field_name, value, MAX_ID_CHARS).strip()


def _choice(field_name: str, value: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise InvalidInput(field_name, f"must be one of {', '.join(allowed)}")
    v = norm_label(value)
    if v not in allowed:
        raise InvalidInput(field_name, f"{value[:80]!r} is not one of {', '.join(allowed)}")
    return v


class _Redactor:
    """Redacts every stored text field of one message and remembers which kinds it found."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.kinds: set[str] = set()

    def text(self, value: str) -> str:
        if not self.enabled or not value:
            return value
        out, found = redact(value)
        self.kinds.update(r.kind for r in found)
        return out

    def json(self, value: dict[str, Any]) -> dict[str, Any]:
        if not self.enabled or not value:
            return value
        out, kinds = redact_json(value)
        self.kinds.update(kinds)
        return out if isinstance(out, dict) else value


def prepare(msg: MessageIn, *, max_bytes: int, redact_secrets: bool = True,
            now: datetime | None = None) -> tuple[Memory, str]:
    """Validate and normalise a message into a row and its full-text form. Raises InvalidInput naming the
    field; builds nothing partial. Secrets are redacted from every stored text field, not only content."""
    content = unicodedata.normalize("NFC", check_str("content", msg.content, max_chars=max_bytes, strip_nul=True))
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
    if isinstance(msg.importance, bool):
        raise InvalidInput("importance", "must be a number between 0 and 1, not true/false")
    try:
        importance = float(msg.importance)
    except (TypeError, ValueError):
        raise InvalidInput("importance", f"{str(msg.importance)[:40]!r} is not a number between 0 and 1") from None
    if not 0.0 <= importance <= 1.0:
        raise InvalidInput("importance", f"{importance} is outside 0..1")
    if msg.id is not None and (not isinstance(msg.id, str) or not is_uuid(msg.id.lower())):
        raise InvalidInput("id", f"{str(msg.id)[:60]!r} is not a UUID")
    labels = {f: norm_label(check_label(f, getattr(msg, f) or ""))
              for f in ("agent_platform", "agent_model", "subagent_model", "subagent_role")}
    session_id = _plain_id("session_id", msg.session_id or "")
    project = " ".join(check_label("project", msg.project or "").split())
    title = check_str("title", msg.title or "", max_chars=MAX_TITLE_CHARS, strip_nul=True).strip()
    p_tags = [t for t in (norm_label(t) for t in check_tags("p_tags", msg.p_tags)) if t]
    d_tags = [t for t in (norm_label(t) for t in check_tags("d_tags", msg.d_tags)) if t]
    meta = check_meta("meta", msg.meta)
    now = now or utcnow()
    if msg.created_at not in (None, ""):
        if not isinstance(msg.created_at, str | datetime):
            raise InvalidInput("created_at", "must be an ISO-8601 string (e.g. 2026-11-30T09:30:00Z)")
        created = not_in_future(parse_time(msg.created_at, "created_at"), "created_at", now)
    else:
        created = now
    meta = _code_meta(dict(meta))
    red = _Redactor(redact_secrets)
    content, title, project, session_id = red.text(content), red.text(title), red.text(project), red.text(session_id)
    labels = {k: red.text(v) for k, v in labels.items()}
    p_tags, d_tags = [red.text(t) for t in p_tags], [red.text(t) for t in d_tags]
    meta = red.json(meta)   # every string in meta, tool error excerpts included
    if red.kinds:
        meta = {**meta, "redacted": sorted(red.kinds | set(meta.get("redacted") or []))}
    memory = Memory(
        id=msg.id.lower() if msg.id else uuid7(int(created.timestamp() * 1000) if msg.created_at else None),
        user_id=user_id,
        content=content,
        role=role,
        kind=kind,
        source=source,
        title=title,
        agent_platform=labels["agent_platform"],
        agent_model=labels["agent_model"],
        is_subagent=bool(msg.is_subagent or labels["subagent_role"] or labels["subagent_model"]),
        subagent_model=labels["subagent_model"],
        subagent_role=labels["subagent_role"],
        session_id=session_id,
        project=project,
        p_tags=p_tags,
        d_tags=d_tags,
        privacy_scope=privacy,
        team=team,
        importance=importance,
        is_pinned=bool(msg.is_pinned),
        content_hash=content_hash(content),
        created_at=created,
        updated_at=now,
        meta=meta,
    )
    return memory, row_index_text(memory.title, content)


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


def _opt_str(item: dict[str, Any], *names: str) -> str | None:
    """The first of `names` present in `item` as a non-empty value, which must be a string."""
    for name in names:
        v = item.get(name)
        if v is None or v == "":
            continue
        if not isinstance(v, str):
            raise InvalidInput(name, f"must be a string, not {type(v).__name__}")
        return v
    return None


def message_from_json(item: dict[str, Any], base: Identity) -> MessageIn:
    """The fields `gieok ingest --json` and POST /v1/messages take. Types are checked here (a JSON body can
    hold anything); values are checked by `prepare`."""
    unknown = set(item) - FIELDS
    if unknown:
        name = sorted(str(k) for k in unknown)[0][:60]
        raise InvalidInput(name, f"unknown field; accepted fields: {', '.join(sorted(FIELDS))}")
    content = item.get("content")
    if not isinstance(content, str):
        raise InvalidInput("content", "is required and must be a string")
    is_sub = item.get("is_subagent", base.is_subagent)
    if not isinstance(is_sub, bool):
        raise InvalidInput("is_subagent", "must be true or false")
    importance = item.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidInput("importance", "must be a number between 0 and 1")
    meta = item.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidInput("meta", f"must be a JSON object, not {type(meta).__name__}")
    for tags in ("p_tags", "d_tags"):
        if item.get(tags) is not None and not isinstance(item[tags], list):
            raise InvalidInput(tags, "must be a list of strings")
    created = item.get("created_at")
    if created is not None and not isinstance(created, str):
        raise InvalidInput("created_at", "must be an ISO-8601 string (e.g. 2026-11-30T09:30:00Z)")
    mid = item.get("id")
    if mid is not None and not isinstance(mid, str):
        raise InvalidInput("id", "must be a UUID string")
    return MessageIn(
        content=content, user_id=_opt_str(item, "user_id") or base.user_id,
        role=_opt_str(item, "role") or "user", kind=_opt_str(item, "kind") or "episodic",
        source=_opt_str(item, "source") or "chat", title=_opt_str(item, "title") or "",
        agent_platform=_opt_str(item, "agent_platform", "platform") or base.agent_platform,
        agent_model=_opt_str(item, "agent_model", "model") or base.agent_model,
        subagent_role=_opt_str(item, "subagent_role") or base.subagent_role,
        is_subagent=is_sub,
        subagent_model=_opt_str(item, "subagent_model") or base.subagent_model,
        session_id=_opt_str(item, "session_id") or base.session_id,
        project=_opt_str(item, "project") or base.project,
        created_at=created or None, id=mid, importance=importance, meta=dict(meta or {}),
        p_tags=list(item.get("p_tags") or []), d_tags=list(item.get("d_tags") or []),
        privacy_scope=_opt_str(item, "privacy_scope") or "private", team=_opt_str(item, "team") or "",
    )
