"""The MCP tools, one module each. `DEFAULT` is the compact set agents see (few tools with rich parameters:
agents use one or two tools well and ignore the rest); `MEMENTO` is added with GIEOK_TOOLS=full."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gieok.mcp.tools import (
    export,
    feedback,
    forget,
    link,
    load_context,
    manage_knowledge,
    pin,
    recall,
    remember,
    search_memory,
    summarize_thread,
    unpin,
)

Tool = Callable[..., Any]


def description(tool: Tool) -> str:
    """The docstring as agents should read it: one paragraph, without the source's indentation."""
    return " ".join((tool.__doc__ or "").split())

DEFAULT: tuple[Tool, ...] = (search_memory.search_memory, manage_knowledge.manage_knowledge,
                             load_context.load_context)
MEMENTO: tuple[Tool, ...] = (remember.remember, recall.recall, pin.pin, unpin.unpin, forget.forget, link.link,
                             export.export, feedback.feedback, summarize_thread.summarize_thread)
