"""The MCP surface agents see, read through the SDK's in-process client: which tools each tool set offers, and
descriptions written for agents (one paragraph, no source indentation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from gieok.core.settings import load_settings
from gieok.mcp.server import build_server

DEFAULT = {"search_memory", "manage_knowledge", "load_context"}
MEMENTO = {"remember", "recall", "pin", "unpin", "forget", "link", "export", "feedback", "summarize_thread"}


@pytest.mark.parametrize(("tool_set", "expected"), [("compact", DEFAULT), ("full", DEFAULT | MEMENTO)])
async def test_tool_sets_and_descriptions(tool_set: str, expected: set[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIEOK_HOME", str(tmp_path))
    monkeypatch.setenv("GIEOK_EMBEDDER", "none")
    monkeypatch.setenv("GIEOK_TOOLS", tool_set)
    async with Client(build_server(load_settings(), run_librarian=False)) as client:
        tools = (await client.list_tools()).tools
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
    assert {t.name for t in tools} == expected
    for t in tools:
        assert t.description and "\n" not in t.description and "  " not in t.description, t.name
    assert {r.uri_template for r in templates} >= {"memory://{memory_id}", "profile://{user_id}"}
    assert [p.name for p in prompts] == ["memory_injection"]
