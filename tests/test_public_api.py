"""The public surface: `import gieok` gives an embedding program what it needs (open a service, settings, the
input and result types, the error tree), it is complete, and importing it stays light for the hook path."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import gieok
import gieok.core.errors as errors_module

INIT = Path(gieok.__file__)


def test_every_exported_name_resolves_to_its_definition() -> None:
    assert sorted(gieok.__all__) == sorted(["__version__", *gieok._EXPORTS])
    assert len(set(gieok.__all__)) == len(gieok.__all__)
    for name in gieok.__all__:
        value = getattr(gieok, name)
        if name != "__version__":
            home = sys.modules[gieok._EXPORTS[name]]
            assert value is getattr(home, name), name
    assert set(gieok.__all__) <= set(dir(gieok))


def test_every_error_class_is_exported() -> None:
    classes = {name for name, obj in vars(errors_module).items()
               if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == errors_module.__name__}
    assert classes >= {"GieokError", "InvalidInput", "NotFound", "StoreError", "ProviderError"}
    assert classes <= set(gieok.__all__), classes - set(gieok.__all__)
    assert all(issubclass(getattr(gieok, c), gieok.GieokError) for c in classes)


def test_what_an_embedding_program_needs_is_there() -> None:
    assert {"open_service", "Settings", "load_settings", "MemoryService", "MessageIn", "Identity", "Memory",
            "SearchFilters", "GieokError"} <= set(gieok.__all__)


def test_the_type_checking_imports_match_the_lazy_table() -> None:
    # Type checkers and tests/test_architecture.py see the TYPE_CHECKING imports; __getattr__ uses the table.
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                for alias in stmt.names:
                    seen[alias.asname or alias.name] = stmt.module
    assert seen == gieok._EXPORTS


def test_unknown_names_are_attribute_errors() -> None:
    try:
        gieok.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("gieok.no_such_thing resolved")


def test_import_gieok_stays_light() -> None:
    # A fresh interpreter: importing the package loads no other gieok module and none of the heavy libraries.
    code = ("import sys, gieok; print(sorted(m for m in sys.modules if m == 'gieok' or m.startswith('gieok.'))); "
            "print(sorted(m for m in ('pydantic', 'numpy', 'httpx', 'psycopg', 'sqlite3', 'anyio') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    mods, heavy = out.stdout.splitlines()
    assert mods == "['gieok', 'gieok.core', 'gieok.core.version']"
    assert heavy == "[]"
    # and touching one name loads only what that name needs
    code = ("import sys, gieok; gieok.GieokError; "
            "print(sorted(m for m in sys.modules if m.startswith('gieok.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "['gieok.core', 'gieok.core.errors', 'gieok.core.version']"
