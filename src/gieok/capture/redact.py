"""Secret redaction on the hot path: runs on every captured message before it is stored, embedded or sent out.

`redact(text)` returns the redacted text and the `Redaction` spans it removed (offsets into the *original* text).
Each secret becomes `[REDACTED:<kind>]`. Kinds, strongest first (when two findings overlap they are merged into
one span and the earlier kind in this list names it, so `sk-ant-…` is an anthropic_key, never an openai_key):

    private          `<private>…</private>` blocks, tags included (case-insensitive; unclosed → to the end)
    private_key      a whole `-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----` block
                     (RSA / EC / OPENSSH / PGP / PKCS#8; a block with no END line → to the end of the text)
    anthropic_key    `sk-ant-…`
    openai_key       `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, legacy `sk-` + 20+ alphanumerics
    google_api_key   `AIza` + 35 characters
    github_token     `ghp_ gho_ ghu_ ghs_ ghr_` + 36+ alphanumerics, `github_pat_…`
    aws_access_key   `AKIA` / `ASIA` + 16 upper-case alphanumerics
    aws_secret_key   40-character secret, only when labelled (`aws_secret_access_key = …`, `SecretAccessKey`)
    slack_token      `xox[baprs]-…`, and the secret path of `https://hooks.slack.com/services/…` webhooks
    jwt              `eyJ….eyJ….…` (header and payload both JSON objects)
    url_password     the password in `scheme://user:PASSWORD@host`; scheme, user and host are kept
    bearer_token     `Authorization: Bearer …` / `Token …`, and a long `Bearer …` credential anywhere
    basic_auth       `Authorization: Basic …`
    query_secret     a URL query value whose name is secret-like (`?access_token=…`, `&X-Amz-Signature=…`)
    env_secret       the value of `NAME=value` / `export NAME=value` / `"name": "value"` / `name: value` (YAML
                     line) where NAME is secret-like; `NAME=` is kept, only the value goes

Secret-like names (`_is_secret_name`): the name is split into words (snake, kebab, dotted, camelCase) and a word
must be one of password/passwd/pwd/pass/passphrase, secret, token, key (not alone), credential(s), auth,
authorization, private, dsn, signature, apikey — or a run-together form such as `DBPASSWORD`, `AUTHTOKEN`,
`SECRETKEY`. Not secret: names that *describe* a secret (`TOKEN_URL`, `KEY_PATH`, `AUTH_TYPE`, `SECRET_NAME`),
counters (`max_tokens`, `MAX_TOKEN`, `token_count`), plain `key`, `primary_key` / `public_key` / `sort_key`, and
the shell's `PWD` (the working directory).

Values that are left alone because they hold no secret (`_is_placeholder`): empty; already redacted; a variable
reference or template (`$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`, `{{ var }}`, `<your key>`); `your-key-here` and
anything starting with "your" or ending in "here"; masks (`****`, `xxxx`, `...`); booleans and nulls; the usual
dummies (`changeme`, `placeholder`, `secret`, `password`, `token`, `value`, `example`, `todo`); an elided
example such as `sk-...`. `changeme` and friends are deliberately *kept*: they are what docs and templates
say, and redacting them would bury the instruction while hiding nothing an attacker would not guess first.
Unquoted values that are code, not data, are kept too (`api_key=os.environ["K"]`, `token=get_token()`,
`password=self.password`, `api_key=api_key`).

Look-alikes that are not touched: git hashes, UUIDs, base64 blobs (`data:image/png;base64,…`), `sk-` inside
words (`task-sk-learn`, `risk-free`) or short `sk-` ids, URLs with no password (`https://user@host`), the word
"password" in prose, `DEBUG=true`, `PORT=8080`. Text around a secret (Korean included) is never consumed:
every token character class here is ASCII.

Cost: each detector has literal markers that must occur in the text before its regex runs, so a message with no
marker costs a handful of substring checks; `redact` is idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["KINDS", "Redaction", "redact"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """One removed secret: its kind and its `[start, end)` span in the original text."""

    kind: str
    start: int
    end: int


def _placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# --- secret-like names -------------------------------------------------------------------------------------

# camelCase / snake / kebab / dotted → words; "APIKey" → API, Key.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_SECRET_WORDS = frozenset({
    "password", "passwords", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "key",
    "credential", "credentials", "creds", "auth", "authorization", "private", "dsn", "signature", "apikey",
})
# Run-together upper-case names (`DBPASSWORD`, `AUTHTOKEN`) are one "word"; match them by what they end with.
_SECRET_SUFFIXES = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey",
    "credential", "credentials",
)
# The last word says the value is *about* the secret, not the secret itself: `TOKEN_URL`, `KEY_PATH`.
_META_WORDS = frozenset({
    "id", "type", "url", "uri", "endpoint", "host", "port", "domain", "name", "path", "file", "dir", "helper",
    "enabled", "method", "mode", "provider", "header", "prefix", "field", "format", "version", "policy",
    "expiry", "expires", "expiration", "ttl", "timeout", "in", "at", "env", "var", "hint", "length", "len",
})
# Any of these makes it a number about tokens/keys (LLM configs are full of `max_tokens`).
_COUNTER_WORDS = frozenset({"max", "min", "num", "count", "limit", "total", "size", "budget"})
# `key` is only a secret with a qualifier, and not with these (database and data-structure vocabulary).
_PLAIN_KEY_QUALIFIERS = frozenset({
    "primary", "foreign", "public", "pub", "sort", "partition", "hash", "unique", "composite", "range", "cache",
    "hot", "idempotency", "dedup", "lookup", "dict", "map", "row", "column", "group", "order", "join", "shortcut",
    "index", "cursor", "s3", "object", "bucket", "item",
})
# Cheap gate before the key-value regexes: a name can only be secret-like if one of these is in the text.
_NAME_STEMS = ("key", "secret", "token", "pass", "pwd", "cred", "auth", "private", "dsn", "signature")


def _is_secret_name(name: str) -> bool:
    words = [w.lower() for w in _WORD.findall(name)]
    if not words or words[-1] in _META_WORDS or _COUNTER_WORDS.intersection(words):
        return False
    if words == ["pwd"]:  # the shell's working directory, `PWD=/home/me`
        return False
    for i, word in enumerate(words):
        if word == "key":
            if i > 0 and words[i - 1] not in _PLAIN_KEY_QUALIFIERS:
                return True
        elif word in _SECRET_WORDS or word.endswith(_SECRET_SUFFIXES):
            return True
    return False


# --- values that hold no secret ----------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset({
    "", "changeme", "change_me", "change-me", "placeholder", "todo", "tbd", "fixme", "xxx", "secret", "password",
    "passwd", "pass", "token", "key", "apikey", "api_key", "api-key", "value", "example", "dummy", "redacted",
    "none", "null", "nil", "undefined", "true", "false", "yes", "no", "on", "off", "enabled", "disabled",
    "required", "optional",
})
_MASK = re.compile(r"[xX*•·.…\W_]+")  # `****`, `xxxx-xxxx`, `...`, `|` (a YAML block marker)
_TEMPLATE_START = ("$", "<", "{{", "%", "[redacted:", "your", "{your")
_AUTH_SCHEME = re.compile(r"(?:bearer|basic|token)\s+", re.IGNORECASE)
# `os.environ["K"]`, `get_token()`, `cfg.secret` — an expression, not a literal.
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[(\[]")
_STRING_PREFIXES = frozenset({"f", "b", "r", "u", "rb", "br", "fr", "rf"})
_IDENT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _is_placeholder(value: str) -> bool:
    low = value.strip().lower()
    if low in _PLACEHOLDER_WORDS or low.startswith(_TEMPLATE_START) or "[redacted:" in low:
        return True
    if low.endswith(("-here", "_here", " here", "here>")) or _MASK.fullmatch(low):
        return True
    # An elided example (`sk-...`, `ghp_…`) shows a prefix, not a secret.
    return low.endswith(("...", "…")) and len(low.rstrip(".…")) <= 8


def _is_code(value: str, name: str) -> bool:
    if _CALL.match(value):
        return True
    # `api_key=api_key`, `password=self.password`, `token=process.env.GITHUB_TOKEN`: a variable, not a literal.
    if _IDENT_PATH.fullmatch(value):
        last = value.rsplit(".", 1)[-1]
        return last.lower() == name.lower() or _is_secret_name(last)
    return False


# --- detectors ---------------------------------------------------------------------------------------------

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    span: Callable[[re.Match[str]], Span | None]
    markers: tuple[str, ...]  # at least one must occur in the text, else the regex is not run
    lower_markers: tuple[str, ...] = ()  # and, if given, one of these in the lower-cased text


def _whole(m: re.Match[str]) -> Span | None:
    return m.span()


def _secret_group(m: re.Match[str]) -> Span | None:
    return m.span("s")


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _random_looking(m: re.Match[str]) -> Span | None:
    # Real keys are random, so 20+ characters always carry a digit; `sk-this-is-not-a-key-honest` does not.
    return m.span("s") if _has_digit(m.group("body")) else None


def _auth_header(m: re.Match[str]) -> Span | None:
    return None if _is_placeholder(m.group("s")) else m.span("s")


def _bare_bearer(m: re.Match[str]) -> Span | None:
    tok = m.group("s")
    return m.span("s") if _has_digit(tok) and not _is_placeholder(tok) else None


def _url_password(m: re.Match[str]) -> Span | None:
    return None if _is_placeholder(m.group("s")) else m.span("s")


_VALUE_GROUPS = ("dq", "sq", "uq")


def _key_value(m: re.Match[str]) -> Span | None:
    name = m.group("name")
    if not _is_secret_name(name):
        return None
    group = next((g for g in _VALUE_GROUPS if g in m.re.groupindex and m.group(g) is not None), None)
    if group is None:
        return None
    value = m.group(group)
    start, end = m.span(group)
    # `"Authorization": "Bearer abc"` keeps the scheme, like the header rule does.
    scheme = _AUTH_SCHEME.match(value)
    if scheme:
        start += scheme.end()
        value = value[scheme.end():]
    if group == "uq" and value.lower() in _STRING_PREFIXES and m.string[end:end + 1] in ("'", '"'):
        return None  # `"Authorization": f"Bearer {token}"`: the `f` opens a string, it is not the value
    if _is_placeholder(value) or (group == "uq" and _is_code(value, name)):
        return None
    return start, end


# Token boundaries are ASCII on purpose: Python's \w matches Hangul, and "키는sk-…입니다" must keep its Korean.
_NOT_TOKEN_BEFORE = r"(?<![A-Za-z0-9_\-])"
_NOT_TOKEN_AFTER = r"(?![A-Za-z0-9_\-])"
# An unquoted value: printable ASCII up to whitespace, a quote or a backtick; `, ; ) } ]` only inside it, so
# `f(api_key=abc, x=1)` and "`TOKEN=abc`" lose `abc`, not their punctuation. Non-ASCII ends it (Korean prose).
_UQ_CHAR = r"[^\s\"'`,;)}\]\x80-\U0010ffff]"
_UQ = rf"(?:{_UQ_CHAR}|[,;)}}\]](?={_UQ_CHAR}))+"
_DQ = r"\"(?P<dq>(?:[^\"\\\n]|\\.)*)\""
_SQ = r"'(?P<sq>[^'\n]*)'"
_NAME = r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)"
_BARE_ASSIGN = r"[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*[:?]?="
_ENDS_LINE = r"(?=[;,]?[ \t\r]*(?:\n|\Z|#|//))"

_PRIVATE_BLOCK = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

_DETECTORS: tuple[_Detector, ...] = (
    _Detector("private", _PRIVATE_BLOCK, _whole, ("<",), ("<private",)),
    _Detector("private_key", _PRIVATE_KEY, _whole, ("PRIVATE KEY",)),
    _Detector(
        "anthropic_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-ant-(?P<body>[A-Za-z0-9_\-]{{20,}}))"),
        _random_looking,
        ("sk-ant-",),
    ),
    _Detector(
        "openai_key",
        re.compile(
            rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-(?:(?:proj|svcacct|admin)-(?P<body>[A-Za-z0-9_\-]{{20,}})"
            rf"|(?P<legacy>[A-Za-z0-9]{{20,}}){_NOT_TOKEN_AFTER}))"
        ),
        lambda m: m.span("s") if _has_digit(m.group("body") or m.group("legacy")) else None,
        ("sk-",),
    ),
    _Detector(
        "google_api_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}AIza[0-9A-Za-z_\-]{{35}}{_NOT_TOKEN_AFTER}"),
        _whole,
        ("AIza",),
    ),
    _Detector(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?![A-Za-z0-9_])"),
        _whole,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Detector(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _whole,
        ("AKIA", "ASIA"),
    ),
    _Detector(
        # A bare 40-char base64 string is too common (hashes, blobs) to flag without its label.
        "aws_secret_key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:aws[_\-.]?)?secret[_\-.]?(?:access[_\-.]?)?key[\"']?\s*(?::|=>|=)\s*[\"']?"
            r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            re.IGNORECASE,
        ),
        _secret_group,
        (":", "="),
        ("secret",),
    ),
    _Detector(
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9\-])(?P<s>xox[baprs]-(?P<body>[A-Za-z0-9\-]{10,}))"),
        _random_looking,
        ("xox",),
    ),
    _Detector(
        "slack_token",
        re.compile(r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]+)"),
        _secret_group,
        ("hooks.slack.com",),
    ),
    _Detector(
        "jwt",
        re.compile(rf"{_NOT_TOKEN_BEFORE}eyJ[A-Za-z0-9_\-]{{4,}}\.eyJ[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]*"),
        _whole,
        ("eyJ",),
    ),
    _Detector(
        # Greedy password up to the last `@` before the host, so an unescaped `p@ss` is still all redacted.
        "url_password",
        re.compile(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:(?P<s>[^\s/?#]+)@(?=[A-Za-z0-9\[])"
        ),
        _url_password,
        ("://",),
    ),
    _Detector(
        "bearer_token",
        re.compile(
            r"\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token)\s+(?P<s>[A-Za-z0-9\-._~+/]{8,}=*)",
            re.IGNORECASE,
        ),
        _auth_header,
        (":", "="),
        ("authorization",),
    ),
    _Detector(
        # Outside a header only a long, digit-bearing credential counts: "Bearer of bad news" stays.
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9])Bearer\s+(?P<s>[A-Za-z0-9\-._~+/]{20,}=*)"),
        _bare_bearer,
        ("Bearer",),
    ),
    _Detector(
        "basic_auth",
        re.compile(
            r"\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}=*)", re.IGNORECASE
        ),
        _auth_header,
        (":", "="),
        ("authorization",),
    ),
    _Detector(
        "query_secret",
        re.compile(rf"[?&]{_NAME}=(?P<uq>[^&#\s\"'<>`]+)"),
        _key_value,
        ("=",),
        _NAME_STEMS,
    ),
    _Detector(
        # NAME=value anywhere a name starts (`export X=…`, `X=… cmd`, `--password=…`, kwargs, `$pw = "…"`);
        # not after `/` `+` (base64), `.` or `x-` (inside a name), `?` `&` (query_secret's). After a space,
        # an unquoted value that is itself `NAME=` means this value was empty (`API_KEY= DEBUG=1`), and the
        # value must end the line: `password = hunter2` is an ini file, `token = await get()` is code.
        "env_secret",
        re.compile(
            rf"(?<![A-Za-z0-9_./+?&])(?<![A-Za-z0-9_]-){_NAME}[ \t]*[:?]?=(?!=)(?P<sp>[ \t]+)?"
            rf"(?:{_DQ}|{_SQ}|(?(sp)(?!{_BARE_ASSIGN}))(?P<uq>{_UQ})(?(sp){_ENDS_LINE}))?"
        ),
        _key_value,
        ("=",),
        _NAME_STEMS,
    ),
    _Detector(
        # JSON / Python dict / Ruby hash with a quoted key: `"api_key": "…"`, `'token' => '…'`, `"pin": 1234`.
        "env_secret",
        re.compile(
            rf"(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\- ]*)(?P=q)\s*(?::|=>)\s*(?:{_DQ}|{_SQ}|(?P<uq>{_UQ}))?"
        ),
        _key_value,
        (":", "=>"),
        _NAME_STEMS,
    ),
    _Detector(
        # Bare key, quoted value: JS objects, YAML, Ruby — `apiKey: "…"`, `password: '…'`.
        "env_secret",
        re.compile(rf"(?<![A-Za-z0-9_./+\"'\-]){_NAME}[ \t]*(?::|=>)[ \t]*(?:{_DQ}|{_SQ})"),
        _key_value,
        (":", "=>"),
        _NAME_STEMS,
    ),
    _Detector(
        # A YAML line with an unquoted value only when that value is one word to the end of the line:
        # "password: hunter2" is a secret, "Password: must be 12 characters long" is prose.
        "env_secret",
        re.compile(
            rf"^[ \t]*(?:-[ \t]+)?{_NAME}[ \t]*:[ \t]+(?P<uq>[^\s\"'#|>&*!\[{{]\S*)[ \t\r]*(?:#[^\n]*)?$",
            re.MULTILINE,
        ),
        _key_value,
        (":",),
        _NAME_STEMS,
    ),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(d.kind for d in _DETECTORS))
_RANK = {kind: i for i, kind in enumerate(KINDS)}


def _find(text: str) -> list[tuple[int, int, str]]:
    lowered: str | None = None
    found: list[tuple[int, int, str]] = []
    for det in _DETECTORS:
        if not any(m in text for m in det.markers):
            continue
        if det.lower_markers:
            if lowered is None:
                lowered = text.lower()
            if not any(m in lowered for m in det.lower_markers):
                continue
        for match in det.pattern.finditer(text):
            span = det.span(match)
            if span is not None and span[0] < span[1]:
                found.append((span[0], span[1], det.kind))
    return found


def _merge(found: list[tuple[int, int, str]]) -> list[Redaction]:
    # Overlaps are merged into their union (a partial redaction would leak the rest of the secret); the
    # strongest kind names it, e.g. `API_KEY=sk-…` is one openai_key span, not an env_secret.
    found.sort()
    merged: list[Redaction] = []
    for start, end, kind in found:
        if merged and start < merged[-1].end:
            last = merged[-1]
            best = kind if _RANK[kind] < _RANK[last.kind] else last.kind
            merged[-1] = Redaction(best, last.start, max(last.end, end))
        else:
            merged.append(Redaction(kind, start, end))
    return merged


def redact(text: str) -> tuple[str, list[Redaction]]:
    """Replace every secret in `text` with `[REDACTED:<kind>]`; return the new text and the original spans."""
    found = _find(text)
    if not found:
        return text, []
    spans = _merge(found)
    parts: list[str] = []
    pos = 0
    for r in spans:
        parts.append(text[pos:r.start])
        parts.append(_placeholder(r.kind))
        pos = r.end
    parts.append(text[pos:])
    return "".join(parts), spans
