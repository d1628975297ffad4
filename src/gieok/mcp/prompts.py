"""The MCP prompt `memory_injection(query, token_budget)`: the context block as a user message."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage

from gieok.mcp.caller import caller
from gieok.mcp.deps import service
from gieok.memory.context import load_context
from gieok.memory.service import MemoryService


async def memory_injection(query: str, ctx: Context, token_budget: int = 2000) -> list[UserMessage]:
    svc = service(ctx)
    c = await caller(ctx, svc, "prompt memory_injection")
    block = await load_context(svc, c.ident, query=query, token_budget=int(token_budget), viewer=c.principal)
    c.audit_shared(block.sections)
    return [UserMessage(f"Relevant memory (from gieok):\n\n{block.text}")]


def register_prompts(mcp: MCPServer[MemoryService]) -> None:
    mcp.prompt(description="Memory to inject before answering: profile, pinned, recent and relevant "
                           "memories.")(memory_injection)
