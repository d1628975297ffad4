"""Error fingerprints: the same failure recognised again, whoever pasted it and wherever the code lived.

A fingerprint is (language, error type, message with the variable parts masked, the project's own frames
nearest the error). It is meant to be equal for two runs of the same bug on different machines, checkouts and
line numbers, and different for different bugs, so:
- line and column numbers never enter it, and a frame is its file's *name* plus its function: checkouts live
  at different paths (`/home/alice/shop/...` vs `/builds/ci-381/shop/...`);
- the message keeps its words and quoted names (`'customer_id'`, `reading 'amount'`) but numbers, hex ids,
  UUIDs, paths, URLs and addresses become placeholders: "index 7" and "index 9" are one bug;
- library and runtime frames (site-packages, the standard library, node_modules, node:internal, GOROOT,
  /rustc/, java.*, …) are left out: they are the same for every bug that passes through them; at most
  `MAX_FRAMES` project frames are kept, innermost first;
- the error type is its last dotted component: pytest prints `json.decoder.JSONDecodeError`, a log
  `JSONDecodeError`.
Each fingerprint has two digests: `digest` over everything, and `signature` over type and message only,
which still matches when the code around the error has moved on (other frames).

Traces recognised: Python (tracebacks, pytest's long and short reports), JavaScript/TypeScript (V8 `at …`
stacks, Node's uncaught-error header), Go (panics with goroutine stacks), Rust (panics, with or without a
backtrace; compiler errors `error[E…]`), Java and other JVM languages (`at pkg.Class.method(File.java:N)`,
`Caused by:` chains: the root cause counts). Single error lines without a stack (`TypeError: …`) get a
fingerprint without frames.

Pure and fast (regular expressions over the text; a long paste costs well under a millisecond per KiB).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

MAX_FRAMES = 3
MAX_FINGERPRINTS = 5
MAX_MESSAGE_CHARS = 240
# Longer texts are fingerprinted on their first and last parts: errors sit at one end of a log.
MAX_SCAN_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class Fingerprint:
    language: str                 # python | javascript | go | rust | java | unknown
    error_type: str
    message: str                  # masked
    frames: tuple[str, ...] = ()  # "file:function", innermost first

    @property
    def digest(self) -> str:
        return _digest(self.language, self.error_type, self.message, *self.frames)

    @property
    def signature(self) -> str:
        # Without the language: a bare error line ("TypeError: …", language unknown) matches the same
        # error's full trace.
        return _digest(self.error_type, self.message)

    def describe(self) -> str:
        where = f" in {self.frames[0]}" if self.frames else ""
        msg = f": {self.message}" if self.message else ""
        return f"{self.error_type}{msg}{where}"

    def to_dict(self) -> dict[str, object]:
        return {"language": self.language, "error_type": self.error_type, "message": self.message,
                "frames": list(self.frames), "digest": self.digest, "signature": self.signature}


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]


# --- masking ---------------------------------------------------------------------------------------------
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "<url>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<addr>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"), "<email>"),
    # Windows and POSIX paths (two or more components), and ./relative ones.
    (re.compile(r"(?:\b[A-Za-z]:\\|\\\\)[^\s'\"`:,;()]+"), "<path>"),
    (re.compile(r"(?<![\w<])(?:\.{1,2})?(?:/[\w.@+~-]+){2,}/?"), "<path>"),
    (re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"(?<![\w<])[-+]?\d+(?:[.,:]\d+)*(?:e[-+]?\d+)?(?=\b|[a-zA-Z%])", re.I), "<n>"),
)


def mask(message: str) -> str:
    """The message with its run-specific parts replaced by placeholders, whitespace collapsed, bounded."""
    out = " ".join(message.split())
    for pattern, repl in _MASKS:
        out = pattern.sub(repl, out)
    return out[:MAX_MESSAGE_CHARS]


def _short_type(name: str) -> str:
    name = name.strip().strip(":")
    return name.rsplit(".", 1)[-1] if "." in name and not name.startswith(".") else name


def _basename(path: str) -> str:
    path = path.strip().strip("()").split("?", 1)[0]
    if path.startswith("file://"):
        path = path[7:]
    return re.split(r"[\\/]", path.rstrip("/\\"))[-1]


# Where library and runtime code lives, in any of the languages: frames from here are not the project's.
_LIBRARY_PATH = re.compile(
    r"site-packages|dist-packages|[\\/]lib[\\/]python\d|[\\/]python\d+(?:\.\d+)?[\\/]lib[\\/]|<frozen|"
    r"[\\/]\.?pyenv[\\/]|[\\/]lib[\\/]pypy|node_modules|^node:|^internal[\\/]|\(?node:internal|<anonymous>|"
    r"\bnative\b|[\\/]rustc[\\/][0-9a-f]+|[\\/]\.cargo[\\/]registry|[\\/]\.rustup[\\/]|^/rustc/|"
    r"[\\/]go[\\/]src[\\/]runtime|[\\/]go[\\/]pkg[\\/]mod|[\\/]usr[\\/](?:local[\\/])?(?:lib[\\/])?go(?:-[\d.]+)?[\\/]src|"
    r"[\\/]src[\\/]runtime[\\/]|[\\/]pkg[\\/]mod[\\/]|^<", re.I)
_JAVA_LIBRARY = re.compile(
    r"^(?:java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|groovy|org\.junit|junit|org\.gradle|org\.apache\.maven|"
    r"org\.springframework|org\.hibernate|io\.netty|reactor|org\.eclipse|org\.testng|worker\.org\.gradle|"
    r"jdk\.internal)\.")
_RUST_LIBRARY_FN = re.compile(r"^(?:<.* as )?(?:std|core|alloc|tokio|futures|test|backtrace)::|^__rust|"
                              r"rust_begin_unwind|^_start|^__libc")
_GO_LIBRARY_FN = re.compile(r"^(?:runtime|testing|reflect|sync|http|internal|syscall|os|panic)\.")


def _keep(frames: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for f in frames:
        if f not in out:
            out.append(f)
        if len(out) >= MAX_FRAMES:
            break
    return tuple(out)


# --- Python ----------------------------------------------------------------------------------------------
_PY_TB = re.compile(r"^([ \t>]*)Traceback \(most recent call last\):\s*$", re.M)
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)')
_PY_EXC_LINE = re.compile(r"^((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault|"
                          r"Failure|Timeout|Iteration|Stop\w*|Error\w*)?)(?::\s?(.*))?$")
_PY_PLAIN_EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*$")


def _python_tracebacks(text: str) -> list[Fingerprint]:
    out: list[Fingerprint] = []
    heads = list(_PY_TB.finditer(text))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        # A quoted or indented paste: the whole traceback carries the Traceback line's indentation.
        indent = head.group(1)
        lines = [ln[len(indent):] if ln.startswith(indent) else ln for ln in text[head.end():end].splitlines()]
        frames: list[str] = []
        exc: tuple[str, str] | None = None
        for line in lines:
            fm = _PY_FRAME.match(line)
            if fm:
                if not _LIBRARY_PATH.search(fm.group(1)):
                    frames.append(f"{_basename(fm.group(1))}:{fm.group(2)}")
                continue
            if line.startswith((" ", "\t")) or not line.strip():
                continue
            em = _PY_EXC_LINE.match(line.strip())
            if em and (em.group(2) is not None or _PY_PLAIN_EXC.match(em.group(1))):
                # Only the exception's first line: whatever follows a pasted traceback is the user's prose
                # (or a closing ``` fence), and a multi-line message's first line names it well enough.
                exc = (em.group(1), (em.group(2) or "").rstrip("`").rstrip())
                break
        if exc is not None:
            out.append(Fingerprint("python", _short_type(exc[0]), mask(exc[1]), _keep(frames[::-1])))
    return out


# pytest: `path.py:12: in func` (short) and `path.py:12: ErrorType` (long) frame lines; `E   Type: msg`.
_PYTEST_FRAME = re.compile(r"^([^\s:][^:\n]*\.py):\d+:(?: in (\S+)| ([A-Z]\w*))?[ \t]*$", re.M)
_PYTEST_E = re.compile(r"^E {2,}((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s?(.*))?$", re.M)
_PYTEST_DEF = re.compile(r"^\s{4}(?:async )?def (\w+)\(", re.M)


def _pytest_reports(text: str) -> list[Fingerprint]:
    """pytest's failure sections: each `___ test name ___` section is one failure."""
    out: list[Fingerprint] = []
    sections = re.split(r"^_{3,} .+ _{3,}\s*$", text, flags=re.M)
    for sec in sections[1:]:
        sec = re.split(r"^={3,} ", sec, maxsplit=1, flags=re.M)[0]
        em = _PYTEST_E.search(sec)
        located = [fm for fm in _PYTEST_FRAME.finditer(sec)]
        if em is not None:
            etype, msg = em.group(1), em.group(2) or ""
        else:
            # `assert a == b`: the long report names the type on its last location line.
            typed = [fm.group(3) for fm in located if fm.group(3)]
            first_e = re.search(r"^E {2,}(\S.*)$", sec, re.M)
            if not typed or first_e is None:
                continue
            etype, msg = typed[-1], first_e.group(1)
        frames: list[str] = []
        for fm in located:
            path, func = fm.group(1), fm.group(2)
            if func is None:
                # Long report: the function is the `def` shown above this location line.
                defs = _PYTEST_DEF.findall(sec[:fm.start()])
                func = defs[-1] if defs else "?"
            if not _LIBRARY_PATH.search(path):
                frames.append(f"{_basename(path)}:{func}")
        out.append(Fingerprint("python", _short_type(etype), mask(msg), _keep(frames[::-1])))
    return out


# --- JavaScript / TypeScript (V8 stacks) ----------------------------------------------------------------
_JS_AT = re.compile(r"^\s+at (?:(?:async |new )?([^\s(][^(]*?) \((.+?)\)|(.+?))\s*$")
_JS_LOC = re.compile(r"^(.*?):\d+(?::\d+)?$")
_JS_HEAD = re.compile(r"^(?:Uncaught )?((?:[A-Z]\w*)?(?:Error|Exception)|[A-Z]\w*Error|Error)(?: \[(\w+)\])?:\s?(.*)$")
_JS_EXT = re.compile(r"\.(?:m?[jt]sx?|cjs|cts|mts|vue|svelte|coffee)$", re.I)


def _js_stacks(text: str) -> list[Fingerprint]:
    out: list[Fingerprint] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not _JS_AT.match(lines[i]) or " at " not in lines[i] or _java_frame(lines[i]):
            i += 1
            continue
        # The header is the nearest error line above the first `at`.
        head: re.Match[str] | None = None
        for k in range(i - 1, max(-1, i - 6), -1):
            head = _JS_HEAD.match(lines[k].strip())
            if head:
                break
        frames: list[str] = []
        while i < len(lines) and (m := _JS_AT.match(lines[i])) and not _java_frame(lines[i]):
            func, loc = (m.group(1), m.group(2)) if m.group(2) else ("<anonymous>", m.group(3))
            lm = _JS_LOC.match(loc.strip())
            path = lm.group(1) if lm else loc
            if _JS_EXT.search(path.split("?", 1)[0]) and not _LIBRARY_PATH.search(path):
                name = func.split(" [as ", 1)[0].strip()
                if name.startswith(("Object.<anonymous>", "<anonymous>")) or not name:
                    name = "<anonymous>"
                # V8 names a function by its receiver's type when it has one; a plain object (`exports.f`,
                # `module.exports = {f}`) says nothing, and the same function called bare has no prefix.
                name = name.removeprefix("Object.")
                frames.append(f"{_basename(path)}:{name}")
            i += 1
        if head is not None:
            etype = head.group(2) or head.group(1)
            out.append(Fingerprint("javascript", etype, mask(head.group(3)), _keep(frames)))
    return out


# --- Java / JVM ----------------------------------------------------------------------------------------
# `at java.base/java.lang.Integer.parseInt(Integer.java:668)`: a module or class-loader prefix may come first.
_JAVA_AT = re.compile(r"^\s*at (?:[\w.$-]*(?:@[^/\s]+)?/+)?((?:[\w$]+\.)+[\w$<>]+)\(([^)]*)\)\s*$")
_JAVA_HEAD = re.compile(r"^(?:Exception in thread \"[^\"]*\" |Caused by: )?((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*"
                        r"(?:Exception|Error|Throwable|Failure)?)(?::\s?(.*))?$")


def _java_frame(line: str) -> bool:
    m = _JAVA_AT.match(line)
    return bool(m and (m.group(2).endswith((".java", "Native Method", "Unknown Source")) or
                       re.search(r"\.(?:java|kt|scala|groovy|clj):\d+$", m.group(2))))


@dataclass(slots=True)
class _JavaBlock:
    error_type: str
    message: str
    frames: list[str]          # the project's frames
    depth: int = 0             # all frames, library ones included


def _java_traces(text: str) -> list[Fingerprint]:
    traces: list[list[_JavaBlock]] = []
    block: _JavaBlock | None = None
    for line in text.splitlines():
        if _java_frame(line):
            if block is not None:
                m = _JAVA_AT.match(line)
                assert m is not None
                block.depth += 1
                if not _JAVA_LIBRARY.match(m.group(1)):
                    block.frames.append(m.group(1))
            continue
        s = line.strip()
        hm = _JAVA_HEAD.match(s)
        if not hm or not (s.startswith(("Exception in thread", "Caused by:")) or "." in hm.group(1)):
            continue
        block = _JavaBlock(hm.group(1), hm.group(2) or "", [])
        if s.startswith("Caused by:") and traces:
            traces[-1].append(block)
        else:
            traces.append([block])
    out: list[Fingerprint] = []
    for blocks in traces:
        framed = [b for b in blocks if b.depth]
        if not framed:
            continue                # a dotted name and a colon, but no stack: not a trace
        root = framed[-1]           # the deepest cause with frames of its own
        # A cause's stack is cut ("... 12 more"): the chain's project frames still say where.
        frames = root.frames or [f for b in blocks for f in b.frames]
        out.append(Fingerprint("java", _short_type(root.error_type), mask(root.message), _keep(frames)))
    return out


# --- Go -----------------------------------------------------------------------------------------------
_GO_PANIC = re.compile(r"^(panic|fatal error): (.+?)(?: \[recovered\])?$", re.M)
_GO_FUNC = re.compile(r"^((?:[\w.-]+/)*[\w.-]+\.[\w.*()$]+)\((?:[^)]*)\)$")
_GO_FILE = re.compile(r"^\t(.+?\.go):\d+(?: \+0x[0-9a-f]+)?$")


def _go_panics(text: str) -> list[Fingerprint]:
    out: list[Fingerprint] = []
    for pm in _GO_PANIC.finditer(text):
        msg = pm.group(2)
        if msg.startswith(("runtime error: ", "goroutine ")) and pm.group(1) == "panic":
            etype = "runtime error"
            msg = msg[len("runtime error: "):] if msg.startswith("runtime error: ") else msg
        else:
            etype = pm.group(1)
        rest = text[pm.end():pm.end() + 20_000].splitlines()
        frames: list[str] = []
        seen_goroutine = False
        func: str | None = None
        for line in rest:
            if line.startswith("goroutine "):
                if seen_goroutine:
                    break                       # only the panicking goroutine's stack
                seen_goroutine = True
                continue
            fm = _GO_FUNC.match(line)
            if fm:
                func = fm.group(1)
                continue
            lm = _GO_FILE.match(line)
            if lm and func is not None:
                name = func.rsplit("/", 1)[-1]
                if not _GO_LIBRARY_FN.match(name) and not _LIBRARY_PATH.search(lm.group(1)):
                    frames.append(f"{_basename(lm.group(1))}:{name}")
                func = None
            elif seen_goroutine and not line.strip():
                break
        out.append(Fingerprint("go", etype, mask(msg), _keep(frames)))
    return out


# --- Rust ---------------------------------------------------------------------------------------------
_RUST_PANIC_NEW = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at ([^\n]+?):\d+:\d+:\n(.+)$", re.M)
_RUST_PANIC_OLD = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at '(.+?)', ([^\n]+?):\d+:\d+$", re.M)
_RUST_FRAME = re.compile(r"^\s*\d+: (\S.*?)\s*$")
_RUST_AT = re.compile(r"^\s+at (.+?):\d+(?::\d+)?$")
_RUST_COMPILE = re.compile(r"^error\[(E\d{4})\]: (.+)\n\s*--> ([^\n]+?):\d+:\d+$", re.M)


def _rust_panics(text: str) -> list[Fingerprint]:
    out: list[Fingerprint] = []
    found: list[tuple[int, str, str]] = []
    for m in _RUST_PANIC_NEW.finditer(text):
        found.append((m.end(), m.group(2), m.group(1)))
    for m in _RUST_PANIC_OLD.finditer(text):
        found.append((m.end(), m.group(1), m.group(2)))
    for end, msg, location in sorted(found):
        frames: list[str] = []
        rest = text[end:end + 20_000].splitlines()
        if any(ln.strip() == "stack backtrace:" for ln in rest[:3]):
            func: str | None = None
            for line in rest:
                fm = _RUST_FRAME.match(line)
                if fm and not line.lstrip().startswith("at "):
                    func = re.sub(r"::h[0-9a-f]{16}$", "", fm.group(1))
                    continue
                am = _RUST_AT.match(line)
                if am and func is not None:
                    if not _RUST_LIBRARY_FN.match(func) and not _LIBRARY_PATH.search(am.group(1)):
                        frames.append(f"{_basename(am.group(1))}:{'::'.join(func.split('::')[-2:])}")
                    func = None
                elif line.startswith("note:") or (not line.strip() and frames):
                    break
        if not frames:
            frames = [_basename(location)]
        out.append(Fingerprint("rust", "panic", mask(msg), _keep(frames)))
    for m in _RUST_COMPILE.finditer(text):
        out.append(Fingerprint("rust", m.group(1), mask(m.group(2)), (_basename(m.group(3)),)))
    return out


# --- single error lines --------------------------------------------------------------------------------
# Anywhere in a line ("it fails with TypeError: …", "`KeyError: 'id'`"), not only at its start.
_LINE_ERROR = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))(?: \[(\w+)\])?:"
                         r"[ \t]?(\S.*)$", re.M)


def _error_lines(text: str) -> list[Fingerprint]:
    out = []
    for m in _LINE_ERROR.finditer(text):
        msg = m.group(3).strip().rstrip("`").rstrip()
        out.append(Fingerprint("unknown", m.group(2) or _short_type(m.group(1)), mask(msg)))
    return out


def fingerprints(text: str, limit: int = MAX_FINGERPRINTS) -> list[Fingerprint]:
    """The error fingerprints found in `text`, each once, traces before bare error lines."""
    if len(text) > MAX_SCAN_CHARS:
        half = MAX_SCAN_CHARS // 2
        text = text[:half] + "\n\n" + text[-half:]
    if not _maybe_error(text):
        return []
    found: list[Fingerprint] = []
    for finder in (_python_tracebacks, _pytest_reports, _js_stacks, _java_traces, _go_panics, _rust_panics):
        found.extend(finder(text))
    if not found:
        found = _error_lines(text)
    out: list[Fingerprint] = []
    seen: set[str] = set()
    for fp in found:
        if fp.digest not in seen:
            seen.add(fp.digest)
            out.append(fp)
    return out[:limit]


_HINT = re.compile(r"Error|Exception|Traceback|panic|panicked|error\[E|fatal error|Caused by", re.I)


def _maybe_error(text: str) -> bool:
    # Most chat turns hold no error at all: one cheap scan before the real parsers.
    return bool(_HINT.search(text))
