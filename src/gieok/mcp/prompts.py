"""The MCP prompt `memory_injection(query, token_budget)`: the context block as a user message.

Prompt arguments arrive as strings (or not at all): `token_budget` is read here, and a bad one is an
invalid-params error naming it, never "Internal server error".
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from gieok.core.errors import AuthError, GieokError
from gieok.core.limits import check_query
from gieok.mcp.caller import caller
from gieok.mcp.deps import service
from gieok.memory.context import load_context
from gieok.memory.service import MemoryService

DEFAULT_BUDGET = 2000


def _budget(value: str | int | None) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_BUDGET
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or len(text) > 7 or not 100 <= int(text) <= 200_000:
        raise MCPError(code=INVALID_PARAMS, message=f"token_budget: {text[:20]!r} is not a whole number of "
                                                    "tokens in 100..200000")
    return int(text)


async def memory_injection(ctx: Context, query: str = "", token_budget: str | int | None = None) -> list[UserMessage]:
    svc = service(ctx)
    c = await caller(ctx, svc, "prompt memory_injection")
    try:
        block = await load_context(svc, c.ident, query=check_query(query) or None,
                                   token_budget=_budget(token_budget), viewer=c.principal)
    except AuthError:
        raise
    except GieokError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
    c.audit_shared(block.sections)
    return [UserMessage(f"Relevant memory (from gieok):\n\n{block.text}")]


def register_prompts(mcp: MCPServer[MemoryService]) -> None:
    mcp.prompt(description="Memory to inject before answering: profile, pinned, recent and relevant "
                           "memories.")(memory_injection)
