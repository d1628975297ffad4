"""Error fingerprints on real traces (tests/fixtures/traces, produced by real runs: see its README) and on
traces these tests produce themselves with the real interpreters."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gieok.core.fingerprint import fingerprints, mask

TRACES = Path(__file__).parent / "fixtures" / "traces"
PAIRS = {
    "python_json": "python", "python_index": "python", "pytest_long": "python", "pytest_short": "python",
    "node_typeerror": "javascript", "ts_typeerror": "javascript", "go_panic": "go", "rust_panic": "rust",
    "java_exception": "java",
}
# Frames of the standard libraries and runtimes the traces pass through: never part of a fingerprint.
LIBRARY_BITS = ("decoder.py", "__init__.py:loads", "node:internal", "Module._compile", "reduce", "core::",
                "rust_begin_unwind", "panicking", "java.base", "java.lang", "runtime.", "testing.")


def read(name: str) -> str:
    return (TRACES / name).read_text("utf-8")


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_same_bug_on_other_paths_and_lines_has_one_fingerprint(name: str) -> None:
    a, b = fingerprints(read(f"{name}_a.txt")), fingerprints(read(f"{name}_b.txt"))
    assert len(a) == 1, a
    assert [x.digest for x in a] == [x.digest for x in b]
    fp = a[0]
    assert fp.language == PAIRS[name]
    assert fp.frames, "the project's own frames are part of it"
    assert not any(bit in f for f in fp.frames for bit in LIBRARY_BITS), fp.frames
    assert not any(ch.isdigit() for ch in "".join(fp.frames).replace("main.go", "")), fp.frames  # no line numbers
    assert "/tmp/traces" not in fp.message and "alice" not in repr(fp.to_dict())


def test_what_the_fingerprints_hold() -> None:
    py = fingerprints(read("python_json_a.txt"))[0]
    assert (py.error_type, py.frames) == ("JSONDecodeError", ("config.py:load_config", "retry.py:compute_backoff",
                                                              "main.py:<module>"))
    assert py.message == "Expecting property name enclosed in double quotes: line <n> column <n> (char <n>)"
    go = fingerprints(read("go_panic_a.txt"))[0]
    assert (go.error_type, go.message) == ("runtime error", "index out of range [<n>] with length <n>")
    assert go.frames[0] == "retry.go:billing.Backoff"
    rust = fingerprints(read("rust_panic_b.txt"))[0]
    assert rust.message == "index out of bounds: the len is <n> but the index is <n>"
    assert rust.frames == ("retry.rs:billing::backoff", "retry.rs:billing::schedule", "retry.rs:retry::main")
    java = fingerprints(read("java_exception_a.txt"))[0]
    assert java.error_type == "IllegalStateException"
    assert java.message == "attempt <n> exceeds <n> retries for order <n>"
    assert java.frames[0] == "com.acme.billing.Retry.backoff"


def test_java_root_cause_and_go_test_panic() -> None:
    java = fingerprints(read("java_caused_by.txt"))[0]
    assert java.error_type == "NumberFormatException"          # the root cause, not the wrapper
    assert java.frames == ("com.acme.billing.Loader.parseLimit", "com.acme.billing.Loader.load")
    go = fingerprints(read("go_test_panic.txt"))[0]
    assert (go.error_type, go.message) == ("panic", "assignment to entry in nil map")
    assert go.frames == ("retry.go:billing.(*Ledger).Add", "retry_test.go:billing.TestAdd")


def test_different_bugs_have_different_fingerprints() -> None:
    digests = {name: fingerprints(read(f"{name}_a.txt"))[0].digest for name in PAIRS}
    digests["java_caused_by"] = fingerprints(read("java_caused_by.txt"))[0].digest
    digests["go_test_panic"] = fingerprints(read("go_test_panic.txt"))[0].digest
    # pytest's two report styles of one failure agree; everything else differs
    assert digests.pop("pytest_short") == digests["pytest_long"]
    for (n1, d1), (n2, d2) in itertools.combinations(digests.items(), 2):
        assert d1 != d2, (n1, n2)


def test_signature_matches_the_same_error_elsewhere() -> None:
    js = fingerprints(read("node_typeerror_a.txt"))[0]
    ts = fingerprints(read("ts_typeerror_a.txt"))[0]
    assert js.digest != ts.digest and js.signature == ts.signature      # other frames, same error
    bare = fingerprints("it crashed with TypeError: Cannot read properties of undefined (reading 'amount')\n")
    assert [b.signature for b in bare] == [js.signature] and bare[0].frames == ()
    # the IndexError of the script and of pytest: same error, other entry points
    script = fingerprints(read("python_index_a.txt"))[0]
    test = fingerprints(read("pytest_short_a.txt"))[0]
    assert script.digest != test.digest and script.signature == test.signature


def test_quoted_or_indented_paste_is_the_same_trace() -> None:
    plain = read("python_json_a.txt")
    quoted = "\n".join("> " + ln for ln in plain.splitlines())
    indented = "the job failed:\n\n" + "\n".join("    " + ln for ln in plain.splitlines()) + "\n\nany idea?"
    want = fingerprints(plain)[0].digest
    assert fingerprints(quoted)[0].digest == want
    assert fingerprints(indented)[0].digest == want


def test_no_error_no_fingerprint() -> None:
    assert fingerprints("I changed the retry logic; the errors are gone and all tests pass.") == []
    assert fingerprints("") == []
    assert fingerprints(read("pytest_long_a.txt").split("F  ")[0]) == []   # pytest's warning header alone


def test_masking_keeps_words_and_korean() -> None:
    assert mask("order 4711 failed at /home/alice/shop/x.py for 123e4567-e89b-12d3-a456-426614174000 "
                "(0x7ffe3a) https://api.example.com/v1/orders?id=9") == \
        "order <n> failed at <path> for <uuid> (<addr>) <url>"
    a = fingerprints("ValueError: 잘못된 주문 번호 4711 (고객 'kim')")
    b = fingerprints("ValueError: 잘못된 주문 번호 9 (고객 'kim')")
    assert a[0].digest == b[0].digest and a[0].message == "잘못된 주문 번호 <n> (고객 'kim')"
    assert fingerprints("ValueError: 잘못된 주문 번호 9 (고객 'lee')")[0].digest != a[0].digest


def _python_trace(root: Path, pad: int) -> str:
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "ledger.py").write_text("\n" * pad + "def post(entries, key):\n    return entries[key]\n")
    (root / "run.py").write_text("\n" * pad + "from shop.ledger import post\npost({}, 'order-' + '4711')\n")
    r = subprocess.run([sys.executable, "run.py"], cwd=root, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    return r.stderr


def test_a_fresh_python_traceback_from_two_checkouts(tmp_path: Path) -> None:
    a = fingerprints(_python_trace(tmp_path / "alice" / "work", 0))
    b = fingerprints(_python_trace(tmp_path / "ci" / "build-77", 5))
    assert len(a) == 1 and [x.digest for x in a] == [x.digest for x in b]
    assert a[0].error_type == "KeyError" and a[0].frames == ("ledger.py:post", "run.py:<module>")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_fresh_node_stack_from_two_checkouts(tmp_path: Path) -> None:
    out = []
    for d, pad in ((tmp_path / "a", 0), (tmp_path / "b" / "deep", 4)):
        d.mkdir(parents=True)
        (d / "cart.js").write_text("\n" * pad + "function total(c) { return c.items.length; }\n"
                                   "module.exports = { total };\n")
        (d / "main.js").write_text("\n" * pad + "require('./cart').total({});\n")
        r = subprocess.run(["node", "main.js"], cwd=d, capture_output=True, text=True, timeout=30)
        out.append(fingerprints(r.stderr))
    assert len(out[0]) == 1 and out[0][0].digest == out[1][0].digest
    assert out[0][0].error_type == "TypeError" and out[0][0].frames[0] == "cart.js:total"
