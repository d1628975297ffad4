"""The layout keeps its shape: every import under src/gieok flows down the layer order and no import cycle exists,
whether the import sits at module level, inside a function or under `if TYPE_CHECKING:`.

Layer order (a module may import its own layer and the layers below it; peers on one rank stay independent):

    core ← store, providers ← retrieval, auth ← memory ← librarian ← app ← gieok (the public surface)
         ← mcp, capture, bench ← cli ← entry

`auth` (API keys, JWTs, the audit log) needs only core and the store, so it sits beside retrieval: the service
and the librarian may use it, and the server layers above do. `gieok/__init__.py` (the public surface for
embedding programs) sits right above `app`, since it re-exports `open_service`; `mcp` reads `__version__` from
it. `gieok.entry` is the console script, above everything.

The checker runs on the real source, and its own tests plant a cycle and an upward edge in a synthetic graph,
so a checker that stopped finding either would fail here instead of passing silently.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "gieok"

# rank of each layer: a module may import layers of a lower rank, and its own layer.
LAYERS: dict[str, int] = {
    "core": 0,
    "store": 1, "providers": 1,
    "retrieval": 2, "auth": 2,
    "memory": 3,
    "librarian": 4,
    "app": 5,
    "gieok": 6,  # gieok/__init__.py, the public surface
    "capture": 7, "ui": 7,
    "mcp": 8,  # the HTTP server mounts the dashboard
    "bench": 9,  # benchmarks drive the layers below them, the hook's and the server's too
    "cli": 10,
    "entry": 11,
}

# Edges the layer order allows but the design does not: (importer prefix, imported prefix) → why not.
FORBIDDEN: dict[tuple[str, str], str] = {
    ("gieok.librarian", "gieok.memory.service"):
        "the librarian takes the store, the embedder and the settings, never the memory service",
}


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    line: int

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} (line {self.line})"


def module_name(path: Path, src: Path = SRC) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(src: Path = SRC) -> dict[str, Path]:
    return {module_name(p, src): p for p in sorted((src / ROOT).rglob("*.py"))}


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([target] if target else [])])


def imports_of(module: str, source: str, modules: Iterable[str], *, is_package: bool = False) -> list[Edge]:
    """Every gieok module `module` imports, wherever in the file the import statement is."""
    known = set(modules)
    edges: list[Edge] = []

    def add(name: str, line: int) -> None:
        # `import gieok.a.b` names gieok.a.b; the longest known prefix is the module that gets loaded.
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        if parts and parts[0] == ROOT:
            dst = ".".join(parts)
            if dst != module and not any(e.dst == dst and e.line == line for e in edges):
                edges.append(Edge(module, dst, line))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module) if node.level
                    else node.module or "")
            for alias in node.names:
                # `from gieok.a import b` loads gieok.a.b when b is a module, else takes a name from gieok.a.
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base, node.lineno)
    return edges


def build_graph(src: Path = SRC) -> dict[str, list[Edge]]:
    mods = discover(src)
    return {m: imports_of(m, p.read_text(encoding="utf-8"), mods, is_package=p.name == "__init__.py")
            for m, p in mods.items()}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_violations(graph: Mapping[str, Iterable[Edge]], layers: Mapping[str, int] = LAYERS,
                     forbidden: Mapping[tuple[str, str], str] = FORBIDDEN) -> list[str]:
    out: list[str] = []
    for src in sorted(graph):
        for e in graph[src]:
            for (a_prefix, b_prefix), why in forbidden.items():
                if _within(e.src, a_prefix) and _within(e.dst, b_prefix):
                    out.append(f"{e}: {a_prefix} may not import {b_prefix}: {why}")
            a, b = layer_of(e.src), layer_of(e.dst)
            if a not in layers:
                out.append(f"{e}: module {e.src} is in no layer; add {a!r} to LAYERS in tests/test_architecture.py")
                continue
            if b not in layers:
                out.append(f"{e}: module {e.dst} is in no layer; add {b!r} to LAYERS in tests/test_architecture.py")
                continue
            if a != b and layers[a] <= layers[b]:
                why = "a peer" if layers[a] == layers[b] else "above it"
                out.append(f"{e}: layer {a} may not import layer {b} ({why})")
    return out


def find_cycles(graph: Mapping[str, Iterable[Edge]]) -> list[list[str]]:
    """One cycle path per strongly connected component with more than one module (Tarjan), e.g.
    [a, b, c, a]."""
    adj: dict[str, list[str]] = {m: sorted({e.dst for e in es}) for m, es in graph.items()}
    for es in list(adj.values()):
        for d in es:
            adj.setdefault(d, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[set[str]] = []
    counter = 0

    def strong(v: str) -> None:  # recursion depth is bounded by the module count (~100)
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in adj[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1 or v in adj[v]:
                comps.append(comp)

    for v in sorted(adj):
        if v not in index:
            strong(v)
    cycles = []
    for comp in comps:
        start = min(comp)
        # breadth-first search inside the component for the shortest way back to `start`
        prev: dict[str, str] = {}
        frontier = [start]
        found: str | None = None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in adj[v]:
                    if w not in comp:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path = [start]
        v = found or start
        back = []
        while v != start:
            back.append(v)
            v = prev[v]
        path.extend(reversed(back))
        path.append(start)
        cycles.append(path)
    return cycles


# --- the real source --------------------------------------------------------------------------------------
def test_the_source_has_no_import_cycle() -> None:
    cycles = find_cycles(build_graph())
    assert not cycles, "import cycles (module-level or inside functions):\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def test_every_import_follows_the_layer_order() -> None:
    bad = layer_violations(build_graph())
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_the_checker_sees_the_whole_source() -> None:
    graph = build_graph()
    assert len(graph) >= 60  # every module under src/gieok, not an empty glob
    # Imports inside functions count: the console script only imports inside main().
    assert {e.dst for e in graph["gieok.entry"]} >= {"gieok.capture.hooks", "gieok.cli"}
    # `from gieok.x import module` is an edge to the module, `from gieok.x import name` one to the package.
    assert "gieok.cli.librarian" in {e.dst for e in graph["gieok.cli"]}


# --- the checker on planted mistakes ----------------------------------------------------------------------
def _graph(*edges: tuple[str, str]) -> dict[str, list[Edge]]:
    g: dict[str, list[Edge]] = {}
    for a, b in edges:
        g.setdefault(a, []).append(Edge(a, b, 1))
        g.setdefault(b, [])
    return g


def test_checker_reports_a_planted_cycle_with_its_path() -> None:
    g = _graph(("gieok.memory.service", "gieok.librarian.consolidate"),
               ("gieok.librarian.consolidate", "gieok.librarian.contradictions"),
               ("gieok.librarian.contradictions", "gieok.memory.service"),
               ("gieok.memory.service", "gieok.core.models"))
    assert find_cycles(g) == [["gieok.librarian.consolidate", "gieok.librarian.contradictions",
                               "gieok.memory.service", "gieok.librarian.consolidate"]]
    assert find_cycles(_graph(("gieok.a.x", "gieok.a.y"), ("gieok.a.y", "gieok.core.z"))) == []


def test_checker_reports_a_planted_upward_edge_by_name() -> None:
    g = _graph(("gieok.core.settings", "gieok.app.runtime"), ("gieok.app.runtime", "gieok.core.settings"),
               ("gieok.capture.hooks", "gieok.ui.app"), ("gieok.memory.ingest", "gieok.nowhere.x"),
               ("gieok.librarian.profile", "gieok.memory.service"), ("gieok.librarian.profile", "gieok.memory.ports"))
    bad = layer_violations(g)
    assert any(v.startswith("gieok.core.settings -> gieok.app.runtime (line 1): layer core may not import "
                            "layer app") for v in bad), bad
    assert any("gieok.capture.hooks -> gieok.ui.app (line 1): layer capture may not import layer ui (a peer)"
               in v for v in bad), bad
    assert any("module gieok.nowhere.x is in no layer" in v for v in bad), bad
    assert any(v.startswith("gieok.librarian.profile -> gieok.memory.service (line 1): gieok.librarian may not "
                            "import gieok.memory.service") for v in bad), bad
    assert len(bad) == 4


def test_checker_parses_every_import_form() -> None:
    src = """
from __future__ import annotations
import os
import gieok.store.base
from gieok import core
from gieok.core import models, errors as e
from gieok.retrieval.search import search
from . import ingest
from ..store import open_store
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from gieok.app.runtime import open_service
def f():
    from gieok.librarian.worker import Librarian
    import gieok.cli
"""
    mods = ["gieok", "gieok.core", "gieok.core.models", "gieok.core.errors", "gieok.store", "gieok.store.base",
            "gieok.retrieval", "gieok.retrieval.search", "gieok.memory", "gieok.memory.service",
            "gieok.memory.ingest", "gieok.app.runtime", "gieok.librarian.worker", "gieok.cli"]
    got = {e.dst for e in imports_of("gieok.memory.service", src, mods)}
    assert got == {"gieok.store.base", "gieok.core", "gieok.core.models", "gieok.core.errors",
                   "gieok.retrieval.search", "gieok.memory.ingest", "gieok.store", "gieok.app.runtime",
                   "gieok.librarian.worker", "gieok.cli"}
