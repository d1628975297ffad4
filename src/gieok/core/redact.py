"""Secret redaction on the hot path: every captured message passes here before it is stored, embedded or sent.

`redact(text)` returns the redacted text and the `Redaction`s it made, as spans of the *original* text. Each
secret becomes `[REDACTED:<kind>]`. Kinds, strongest first — overlapping findings are merged into one span (a
partial redaction would leak the rest) and the strongest kind names it, so `sk-ant-…` is an anthropic_key and
`OPENAI_API_KEY=sk-…` an openai_key:

    private          `<private>…</private>`, tags included (case-insensitive; unclosed → to the end of the text)
    private_key      the whole `-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----` block (RSA, EC,
                     OPENSSH, ENCRYPTED, PGP …); a block with no END line → to the end of the text
    anthropic_key    `sk-ant-…`
    openai_key       `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, and legacy `sk-` + 20 or more alphanumerics
    google_api_key   `AIza` + 35 characters
    github_token     `ghp_ gho_ ghu_ ghs_ ghr_` + 36 or more alphanumerics, `github_pat_…`
    stripe_key       `sk_live_` / `sk_test_` / `rk_live_` / `rk_test_` + 16 or more alphanumerics
    aws_access_key   `AKIA` / `ASIA` + 16 upper-case alphanumerics
    aws_secret_key   a 40-character secret, only when labelled (`aws_secret_access_key = …`, `SecretAccessKey`)
    slack_token      `xox[baprs]-…`, and the secret path of a `https://hooks.slack.com/services/…` webhook
    jwt              `eyJ….eyJ….…` (header and payload both JSON objects)
    url_password     the password of `scheme://user:PASSWORD@host`; scheme, user and host are kept
    bearer_token     `Authorization: Bearer …` / `Token …`, and a long `Bearer …` credential anywhere else
    basic_auth       `Authorization: Basic …`
    query_secret     a URL query value with a secret-like name (`?access_token=…`, `&X-Amz-Signature=…`)
    env_secret       the value in `NAME=value`, `export NAME=value`, `--name=value`, `"name": "value"`,
                     `name: "value"`, or a YAML line `name: value`, when NAME is secret-like; `NAME=` stays
    prose_password   a password said in prose: "the db password is hunter2", "my passphrase is 'x y z'",
                     "비밀번호는 qwer1234" — the value must look like one (quoted, or holding a digit, a symbol
                     or mixed case; Korean labels take any 4+ ASCII characters), so "the password is wrong"
                     and "the password is required" stay

Secret-like names (`_is_secret_name`): split into words (snake, kebab, dotted, camelCase), one word is password,
passwd, pwd, pass, passphrase, secret, token, key (qualified: `api_key`, not `key`), credential(s), auth,
authorization, private, dsn, signature or apikey — or a run-together `DBPASSWORD`, `AUTHTOKEN`, `SECRETKEY`.
Not secret-like: names that describe a secret (`TOKEN_URL`, `KEY_PATH`, `AUTH_TYPE`, `SECRET_NAME`), counters
(`max_tokens`, `MAX_TOKEN`, `token_count`), `primary_key` / `public_key` / `sort_key`, and the shell's `PWD`.

Values left alone because they hold no secret (`_is_placeholder`): empty; already redacted; a reference or
template (`$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`, `{{ var }}`, `<your key>`); `your-key-here`, anything starting
with "your" or ending in "-here"; masks (`****`, `xxxx`, `...`); booleans and nulls; the stock dummies
(`changeme`, `placeholder`, `secret`, `password`, `token`, `value`, `example`, `todo`); an elided `sk-...`.
Keeping `changeme` is deliberate: it is what templates and docs say, and hiding it would bury the instruction
while protecting nothing an attacker would not try first. Unquoted values that are code, not data, stay too
(`api_key=os.environ["K"]`, `token=get_token()`, `password=self.password`, `api_key=api_key`).

Look-alikes left alone: git hashes, UUIDs, base64 blobs (`data:image/png;base64,…`), `sk-` inside words
(`task-sk-learn`, `risk-free`) and short `sk-` ids, URLs without a password (`https://user@host`), "password"
in prose, `DEBUG=true`, `PORT=8080`. Text around a secret, Korean included, is never consumed: the character
classes of tokens and unquoted values are ASCII (Python's Unicode word class would swallow Hangul).

Cost: a detector's regex is only *matched* at the places where its literal marker occurs (found with
`str.find`), never searched across the text, so a message with no marker costs a few substring checks.
`redact` is idempotent: a placeholder is never itself a secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["KINDS", "Redaction", "redact", "redact_json"]


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
    "primary", "foreign", "public", "pub", "sort", "partition", "hash", "unique", "composite", "range",
    "cache", "hot", "idempotency", "dedup", "lookup", "dict", "map", "row", "column", "group", "order", "join",
    "shortcut", "index", "cursor", "object", "bucket", "item",
})
# Every secret-like name contains one of these (lower-cased): the key-value detectors start from their hits.
_NAME_STEMS = ("key", "secret", "token", "pass", "pwd", "cred", "auth", "private", "dsn", "signature")


@lru_cache(maxsize=4096)  # the same few names (`key`, `max_tokens`, `api_key`) recur in every message
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
    "", "changeme", "change_me", "change-me", "placeholder", "todo", "tbd", "fixme", "xxx", "secret",
    "password", "passwd", "pass", "token", "key", "apikey", "api_key", "api-key", "value", "example", "dummy",
    "redacted", "none", "null", "nil", "undefined", "true", "false", "yes", "no", "on", "off", "enabled",
    "disabled", "required", "optional",
})
_MASK = re.compile(r"[xX*•·.…\W_]+")  # `****`, `xxxx-xxxx`, `...`, `|` (a YAML block marker)
_TEMPLATE_START = ("$", "<", "{{", "[redacted:", "your", "{your")
_AUTH_SCHEME = re.compile(r"(?:bearer|basic|token)\s+", re.IGNORECASE)
# `os.environ["K"]`, `get_token()`, `cfg.secret` — an expression, not a literal.
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[(\[]")
_STRING_PREFIXES = frozenset({"f", "b", "r", "u", "rb", "br", "fr", "rf"})
_IDENT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _is_placeholder(value: str) -> bool:
    low = value.strip().lower()
    if low in _PLACEHOLDER_WORDS or low.startswith(_TEMPLATE_START) or "[redacted:" in low:
        return True
    if len(low) > 2 and low[0] == low[-1] == "%":
        return True  # `%DB_PASSWORD%` (Windows); a lone leading `%` is URL-encoding, `%40bc` is a password
    if low.endswith(("-here", "_here", " here", "here>")) or _MASK.fullmatch(low):
        return True
    # An elided example (`sk-...`, `ghp_…`) shows a prefix, not a secret.
    return low.endswith(("...", "…")) and len(low.rstrip(".…")) <= 8


def _is_code(value: str, name: str) -> bool:
    if _CALL.match(value):
        return True
    if value.lower() == name.lower():
        return True  # `f(api_key=api_key)`: a keyword argument passed through
    # `password=self.password`, `token=process.env.GITHUB_TOKEN`: an attribute, not a literal. A lone
    # identifier is *not* code here: `JWT_SECRET=my_secret_key` in a .env file is a (weak) real secret.
    _, dot, last = value.rpartition(".")
    return bool(dot) and _IDENT_PATH.fullmatch(value) is not None and _is_secret_name(last)


# --- detectors ---------------------------------------------------------------------------------------------

_Span = tuple[int, int]
_SpanFn = Callable[[re.Match[str]], _Span | None]


@dataclass(frozen=True, slots=True)
class _Token:
    """A secret found from a literal marker (`sk-`, `AIza`, `-----BEGIN`, `://`)."""

    kind: str
    pattern: re.Pattern[str]  # `.match`ed where a marker occurs, never searched across the whole text
    span: _SpanFn
    markers: tuple[str, ...]
    gate: str = ""  # one of these characters must occur first; a one-character `in` is a memchr
    lower: bool = False  # markers are looked up in the lower-cased text (case-insensitive kinds)
    back: str = ""  # the match starts this run of characters before the marker (a URL scheme before `://`)


@dataclass(frozen=True, slots=True)
class _KeyValue:
    """`name <separator> value`, tried at every start of a name that contains a `_NAME_STEMS` stem."""

    kind: str
    pattern: re.Pattern[str]
    span: _SpanFn
    gate: str  # separator characters; one must occur in the text
    before: str = ""  # the match starts one character before the name, and that character is one of these
    line: bool = False  # the match starts where the name's line starts (YAML)


def _whole(m: re.Match[str]) -> _Span | None:
    return m.span()


def _secret_group(m: re.Match[str]) -> _Span | None:
    return m.span("s")


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _random_looking(m: re.Match[str]) -> _Span | None:
    # Real keys are random, so 20+ characters always carry a digit; `sk-this-is-not-a-key-honest` does not.
    body = m.group("body")
    return m.span("s") if body is not None and _has_digit(body) else None


def _not_placeholder(m: re.Match[str]) -> _Span | None:
    return None if _is_placeholder(m.group("s")) else m.span("s")


def _bare_bearer(m: re.Match[str]) -> _Span | None:
    tok = m.group("s")
    return m.span("s") if _has_digit(tok) and not _is_placeholder(tok) else None


# Words that follow "the password is" in prose without being the password.
_PROSE_NOT_SECRET = frozenset({
    "wrong", "right", "correct", "incorrect", "invalid", "valid", "required", "optional", "missing", "empty",
    "blank", "set", "unset", "changed", "reset", "expired", "stored", "saved", "hashed", "encrypted", "hidden",
    "weak", "strong", "too", "not", "the", "a", "an", "in", "on", "at", "for", "being", "case-sensitive",
    "same", "different", "new", "old", "short", "long", "secure", "insecure", "ok", "fine", "good", "bad",
})
_TRAILING_PUNCT = ".,;:!?)]}'\"”’"


def _prose_secret(m: re.Match[str], korean: bool = False) -> _Span | None:
    if m.group("q") is not None:
        return None if _is_placeholder(m.group("q")) else m.span("q")
    start, end = m.span("s")
    value = m.group("s")
    if korean:  # the value runs to the Hangul after it: punctuation before that belongs to it
        return None if _is_placeholder(value) else (start, end)
    trimmed = value.rstrip(_TRAILING_PUNCT)
    end -= len(value) - len(trimmed)
    value = trimmed
    if len(value) < 4 or _is_placeholder(value) or value.lower() in _PROSE_NOT_SECRET:
        return None
    looks_secret = (_has_digit(value) or any(not c.isalnum() for c in value)
                    or (any(c.islower() for c in value) and any(c.isupper() for c in value[1:])))
    return (start, end) if looks_secret else None


_VALUE_GROUPS = ("dq", "sq", "uq")


def _key_value(m: re.Match[str]) -> _Span | None:
    name = m.group("name")
    if not _is_secret_name(name):
        return None
    group = next((g for g in _VALUE_GROUPS if g in m.re.groupindex and m.group(g) is not None), None)
    if group is None:
        return None
    value = m.group(group)
    start, end = m.span(group)
    # `"Authorization": "Bearer abc"` keeps its scheme, as the header rule does.
    scheme = _AUTH_SCHEME.match(value)
    if scheme:
        start += scheme.end()
        value = value[scheme.end():]
    if group == "uq" and m.string[end:end + 1] in ("'", '"') and (
        value.lower() in _STRING_PREFIXES or (value.isalpha() and m.string[end] == "'")
    ):
        return None  # the `f` of `f"Bearer {token}"` opens a string; the `don` of "'secret': don't" is prose
    if _is_placeholder(value) or (group == "uq" and _is_code(value, name)):
        return None
    return start, end


# Token boundaries are ASCII on purpose: `\w` matches Hangul, and "키는sk-…입니다" keeps its Korean.
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
_PEM_LABEL = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

_TOKENS: tuple[_Token, ...] = (
    _Token(
        "private",
        re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL),
        _whole,
        ("<private",),
        gate="<",
        lower=True,
    ),
    _Token(
        "private_key",
        re.compile(rf"-----BEGIN{_PEM_LABEL}.*?(?:-----END{_PEM_LABEL}|\Z)", re.DOTALL),
        _whole,
        ("-----BEGIN",),
        gate="-",
    ),
    _Token(
        "anthropic_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-ant-(?P<body>[A-Za-z0-9_\-]{{20,}}))"),
        _random_looking,
        ("sk-ant-",),
        gate="-",
    ),
    _Token(
        "openai_key",
        re.compile(
            rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-(?:(?:proj|svcacct|admin)-(?P<body>[A-Za-z0-9_\-]{{20,}})"
            rf"|(?P<legacy>[A-Za-z0-9]{{20,}}){_NOT_TOKEN_AFTER}))"
        ),
        lambda m: m.span("s") if _has_digit(m.group("body") or m.group("legacy")) else None,
        ("sk-",),
        gate="-",
    ),
    _Token(
        "google_api_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}AIza[0-9A-Za-z_\-]{{35}}{_NOT_TOKEN_AFTER}"),
        _whole,
        ("AIza",),
    ),
    _Token(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?![A-Za-z0-9_])"),
        _whole,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        gate="_",
    ),
    _Token(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9_])"),
        _whole,
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        gate="_",
    ),
    _Token(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _whole,
        ("AKIA", "ASIA"),
    ),
    _Token(
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9\-])(?P<s>xox[baprs]-(?P<body>[A-Za-z0-9\-]{10,}))"),
        _random_looking,
        ("xox",),
        gate="-",
    ),
    _Token(
        "slack_token",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]+)"),
        _secret_group,
        ("hooks.slack.com/",),
        gate="/",
    ),
    _Token(
        "jwt",
        re.compile(rf"{_NOT_TOKEN_BEFORE}eyJ[A-Za-z0-9_\-]{{4,}}\.eyJ[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]*"),
        _whole,
        ("eyJ",),
        gate=".",
    ),
    _Token(
        # Greedy password up to the last `@` before the host, so an unescaped `p@ss` is redacted whole.
        "url_password",
        re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:(?P<s>[^\s/?#]+)@(?=[A-Za-z0-9\[])"),
        _not_placeholder,
        ("://",),
        gate="@",
        back="+.-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    ),
    _Token(
        "bearer_token",
        re.compile(
            r"authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token)\s+(?P<s>[A-Za-z0-9\-._~+/]{8,}=*)",
            re.IGNORECASE,
        ),
        _not_placeholder,
        ("authorization",),
        gate=":=",
        lower=True,
    ),
    _Token(
        # Outside a header only a long, digit-bearing credential counts: "Bearer of bad news" stays.
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9])Bearer\s+(?P<s>[A-Za-z0-9\-._~+/]{20,}=*)"),
        _bare_bearer,
        ("Bearer",),
    ),
    _Token(
        "basic_auth",
        re.compile(r"authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}=*)", re.IGNORECASE),
        _not_placeholder,
        ("authorization",),
        gate=":=",
        lower=True,
    ),
    _Token(
        "prose_password",
        re.compile(r"(?:password|passphrase|passcode|passwd)\s+(?:is|was|=|:)\s*(?:now\s+|still\s+)?"
                   r"(?:[\"“'‘`](?P<q>[^\"”'’`\n]{1,100})[\"”'’`]|(?P<s>[!-~]{4,100}))", re.IGNORECASE),
        lambda m: _prose_secret(m),
        ("password", "passphrase", "passcode", "passwd"),
        lower=True,
    ),
    _Token(
        "prose_password",
        re.compile(r"(?:비밀번호|비번|패스워드)\s*(?:는|은|이|가|:|=)?\s*(?:[\"“'‘`](?P<q>[^\"”'’`\n]{1,100})[\"”'’`]|"
                   r"(?P<s>[!-~]{4,100}?))(?=[^!-~]|$)"),
        lambda m: _prose_secret(m, korean=True),
        ("비밀번호", "비번", "패스워드"),
    ),
)

_KEY_VALUES: tuple[_KeyValue, ...] = (
    _KeyValue(
        # A bare 40-character base64 string is too common (hashes, blobs) to flag without its label.
        "aws_secret_key",
        re.compile(
            r"[a-z0-9_.\-]*?secret[_\-.]?(?:access[_\-.]?)?key[\"']?\s*(?::|=>|=)\s*[\"']?"
            r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            re.IGNORECASE,
        ),
        _secret_group,
        gate=":=",
    ),
    _KeyValue(
        "query_secret",
        re.compile(rf"[?&]{_NAME}=(?P<uq>[^&#\s\"'<>`]+)"),
        _key_value,
        gate="=",
        before="?&",
    ),
    _KeyValue(
        # NAME=value (`export X=…`, `X=… cmd`, `--password=…`, kwargs, `$pw = "…"`); not after `/` `+`
        # (base64), `.` or `x-` (inside a name), `?` `&` (query_secret's). After a space, an unquoted value
        # that is itself `NAME=` means this one was empty (`API_KEY= DEBUG=1`), and the value must end the
        # line: `password = hunter2` is an ini file, `token = await get()` is code.
        "env_secret",
        re.compile(
            rf"(?<![A-Za-z0-9_./+?&])(?<![A-Za-z0-9_]-){_NAME}[ \t]*[:?]?=(?!=)(?P<sp>[ \t]+)?"
            rf"(?:{_DQ}|{_SQ}|(?(sp)(?!{_BARE_ASSIGN}))(?P<uq>{_UQ})(?(sp){_ENDS_LINE}))?"
        ),
        _key_value,
        gate="=",
    ),
    _KeyValue(
        # JSON / Python dict / Ruby hash with a quoted key: `"api_key": "…"`, `'token' => '…'`, `"pin": 1234`.
        "env_secret",
        re.compile(rf"(?P<q>[\"']){_NAME}(?P=q)\s*(?::|=>)\s*(?:{_DQ}|{_SQ}|(?P<uq>{_UQ}))?"),
        _key_value,
        gate=":=",
        before="\"'",
    ),
    _KeyValue(
        # Bare key, quoted value: JS objects, YAML, Ruby — `apiKey: "…"`, `password: '…'`.
        "env_secret",
        re.compile(rf"(?<![A-Za-z0-9_./+\"'\-]){_NAME}[ \t]*(?::|=>)[ \t]*(?:{_DQ}|{_SQ})"),
        _key_value,
        gate=":=",
    ),
    _KeyValue(
        # A YAML line with an unquoted value, only when the value is one word to the end of the line:
        # "password: hunter2" is a secret, "Password: must be 12 characters long" is prose.
        "env_secret",
        re.compile(
            rf"[ \t]*(?:-[ \t]+)?{_NAME}[ \t]*:[ \t]+(?P<uq>[^\s\"'#|>&*!\[{{]\S*)[ \t\r]*(?:#[^\n]*)?(?:\n|\Z)"
        ),
        _key_value,
        gate=":",
        line=True,
    ),
)

KINDS: tuple[str, ...] = (
    "private", "private_key", "anthropic_key", "openai_key", "google_api_key", "github_token", "stripe_key",
    "aws_access_key", "aws_secret_key", "slack_token", "jwt", "url_password", "bearer_token", "basic_auth",
    "query_secret", "env_secret", "prose_password",
)
_RANK = {kind: i for i, kind in enumerate(KINDS)}
# Looked up once per message; each detector then checks its own gate against this set.
_GATE_CHARS = "".join(sorted({c for tok in _TOKENS for c in tok.gate} | {c for kv in _KEY_VALUES for c in kv.gate}))

_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"
_NAME_LEAD = "0123456789.-"  # may sit inside a name but not start one (`--password`, `.env.token`)
_SCHEME_LEAD = "0123456789+.-"  # likewise for a URL scheme
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(text: str) -> str:
    # Hits in the lower-cased copy index the original, so its length must not change; a few letters (`İ`)
    # lower to two characters, and then only ASCII is folded.
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _run_start(hay: str, end: int, chars: str, lead: str, limit: int = 80) -> int:
    """Where the run of `chars` that ends at `end` starts, skipping any `lead` characters it begins with."""
    head = hay[max(0, end - limit):end]
    start = end - (len(head) - len(head.rstrip(chars)))
    run = hay[start:end]
    return start + len(run) - len(run.lstrip(lead))


# The rest of a name after its stem, then a separator (`=`, `:=`, `?=`, `:`, `=>`), maybe after a closing quote.
_NAME_REST_AND_SEP = re.compile(r"[a-z0-9_.\-]*(?=[\"']?[ \t]*[:=?])")


def _name_starts(text: str, lowered: str) -> list[int]:
    """Starts of secret-like names followed by a separator: the only places key-value patterns are tried."""
    seen: set[int] = set()  # name ends: several stems (`secret_key`) find the same name
    starts: list[int] = []
    for stem in _NAME_STEMS:
        hit = lowered.find(stem)
        while hit != -1:
            rest = _NAME_REST_AND_SEP.match(lowered, hit)
            if rest is None:  # "the key point", "token count": prose or code, not an assignment
                hit = lowered.find(stem, hit + len(stem))
                continue
            end = rest.end()
            if end not in seen:
                seen.add(end)
                start = _run_start(lowered, hit, _NAME_CHARS, _NAME_LEAD)
                if _is_secret_name(text[start:end]):
                    starts.append(start)
            hit = lowered.find(stem, end)
    return sorted(starts)


def _find(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    lowered: str | None = None
    present = {c for c in _GATE_CHARS if c in text}

    for tok in _TOKENS:
        if tok.gate and present.isdisjoint(tok.gate):
            continue
        if tok.lower:
            if lowered is None:
                lowered = _lower(text)
            hay = lowered
        else:
            hay = text
        for marker in tok.markers:
            hit = hay.find(marker)
            covered = 0  # a marker inside this detector's previous match is part of it
            while hit != -1:
                start = _run_start(hay, hit, tok.back, _SCHEME_LEAD) if tok.back else hit
                if start >= covered and (m := tok.pattern.match(text, start)) is not None:
                    covered = m.end()
                    if (span := tok.span(m)) is not None and span[0] < span[1]:
                        found.append((span[0], span[1], tok.kind))
                hit = hay.find(marker, hit + 1)

    if ":" not in present and "=" not in present:
        return found
    if lowered is None:
        lowered = _lower(text)
    starts = _name_starts(text, lowered)
    for kv in _KEY_VALUES:
        if not starts or present.isdisjoint(kv.gate):
            continue
        tried: set[int] = set()
        for name_start in starts:
            if kv.line:
                anchor = text.rfind("\n", 0, name_start) + 1
                if text[anchor:name_start].strip(" \t-"):
                    continue  # not the first word of its line
            elif kv.before:
                anchor = name_start - 1
                if anchor < 0 or text[anchor] not in kv.before:
                    continue
            else:
                anchor = name_start
            if anchor in tried:
                continue
            tried.add(anchor)
            m = kv.pattern.match(text, anchor)
            if m is not None and (span := kv.span(m)) is not None and span[0] < span[1]:
                found.append((span[0], span[1], kv.kind))
    return found


def _merge(found: list[tuple[int, int, str]]) -> list[Redaction]:
    # Overlaps become their union (a partial redaction would leak the rest of the secret), named by the
    # strongest kind: `API_KEY=sk-…` is one openai_key span, not an env_secret.
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


def redact_json(value: object) -> tuple[object, list[str]]:
    """Redact every string inside a JSON-like value (meta): strings as `redact` does, and the whole value of a
    key whose name is secret-like (`{"api_key": "abc"}`: a bare value carries no marker of its own). Returns
    the new value and the kinds found."""
    kinds: list[str] = []

    def walk(v: object) -> object:
        if isinstance(v, str):
            out, found = redact(v)
            kinds.extend(r.kind for r in found)
            return out
        if isinstance(v, dict):
            res: dict[object, object] = {}
            for k, item in v.items():
                if isinstance(k, str) and _is_secret_name(k) and isinstance(item, str | int | float) \
                        and not isinstance(item, bool) and not _is_placeholder(str(item)):
                    res[k] = _placeholder("env_secret")
                    kinds.append("env_secret")
                else:
                    res[k] = walk(item)
            return res
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), kinds
