"""The catalogue of secrets `gieok.core.redact` finds: one detector a kind (some kinds have several), each a
regex with the literal markers or the secret-like names where it is tried, and the check that turns a match
into the span to redact. Kinds, strongest first (`KINDS`, the order that names a merged span):

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

Look-alikes left alone: git hashes, UUIDs, base64 blobs (`data:image/png;base64,…`), `sk-` inside words
(`task-sk-learn`, `risk-free`) and short `sk-` ids, URLs without a password (`https://user@host`), "password"
in prose, `DEBUG=true`, `PORT=8080`. Text around a secret, Korean included, is never consumed: the character
classes of tokens and unquoted values are ASCII (Python's Unicode word class would swallow Hangul).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gieok.core.secret_words import is_code, is_placeholder, is_secret_name

__all__ = ["GATE_CHARS", "KEY_VALUES", "KINDS", "TOKENS", "KeyValue", "Token"]

_AUTH_SCHEME = re.compile(r"(?:bearer|basic|token)\s+", re.IGNORECASE)
_STRING_PREFIXES = frozenset({"f", "b", "r", "u", "rb", "br", "fr", "rf"})

_Span = tuple[int, int]
_SpanFn = Callable[[re.Match[str]], _Span | None]


@dataclass(frozen=True, slots=True)
class Token:
    """A secret found from a literal marker (`sk-`, `AIza`, `-----BEGIN`, `://`)."""

    kind: str
    pattern: re.Pattern[str]  # `.match`ed where a marker occurs, never searched across the whole text
    span: _SpanFn
    markers: tuple[str, ...]
    gate: str = ""  # one of these characters must occur first; a one-character `in` is a memchr
    lower: bool = False  # markers are looked up in the lower-cased text (case-insensitive kinds)
    back: str = ""  # the match starts this run of characters before the marker (a URL scheme before `://`)


@dataclass(frozen=True, slots=True)
class KeyValue:
    """`name <separator> value`, tried at every start of a name that contains a `NAME_STEMS` stem."""

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
    return None if is_placeholder(m.group("s")) else m.span("s")


def _bare_bearer(m: re.Match[str]) -> _Span | None:
    tok = m.group("s")
    return m.span("s") if _has_digit(tok) and not is_placeholder(tok) else None


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
        return None if is_placeholder(m.group("q")) else m.span("q")
    start, end = m.span("s")
    value = m.group("s")
    if korean:  # the value runs to the Hangul after it: punctuation before that belongs to it
        return None if is_placeholder(value) else (start, end)
    trimmed = value.rstrip(_TRAILING_PUNCT)
    end -= len(value) - len(trimmed)
    value = trimmed
    if len(value) < 4 or is_placeholder(value) or value.lower() in _PROSE_NOT_SECRET:
        return None
    looks_secret = (_has_digit(value) or any(not c.isalnum() for c in value)
                    or (any(c.islower() for c in value) and any(c.isupper() for c in value[1:])))
    return (start, end) if looks_secret else None


_VALUE_GROUPS = ("dq", "sq", "uq")


def _key_value(m: re.Match[str]) -> _Span | None:
    name = m.group("name")
    if not is_secret_name(name):
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
    if is_placeholder(value) or (group == "uq" and is_code(value, name)):
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

TOKENS: tuple[Token, ...] = (
    Token(
        "private",
        re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL),
        _whole,
        ("<private",),
        gate="<",
        lower=True,
    ),
    Token(
        "private_key",
        re.compile(rf"-----BEGIN{_PEM_LABEL}.*?(?:-----END{_PEM_LABEL}|\Z)", re.DOTALL),
        _whole,
        ("-----BEGIN",),
        gate="-",
    ),
    Token(
        "anthropic_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-ant-(?P<body>[A-Za-z0-9_\-]{{20,}}))"),
        _random_looking,
        ("sk-ant-",),
        gate="-",
    ),
    Token(
        "openai_key",
        re.compile(
            rf"{_NOT_TOKEN_BEFORE}(?P<s>sk-(?:(?:proj|svcacct|admin)-(?P<body>[A-Za-z0-9_\-]{{20,}})"
            rf"|(?P<legacy>[A-Za-z0-9]{{20,}}){_NOT_TOKEN_AFTER}))"
        ),
        lambda m: m.span("s") if _has_digit(m.group("body") or m.group("legacy")) else None,
        ("sk-",),
        gate="-",
    ),
    Token(
        "google_api_key",
        re.compile(rf"{_NOT_TOKEN_BEFORE}AIza[0-9A-Za-z_\-]{{35}}{_NOT_TOKEN_AFTER}"),
        _whole,
        ("AIza",),
    ),
    Token(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?![A-Za-z0-9_])"),
        _whole,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        gate="_",
    ),
    Token(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9_])"),
        _whole,
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        gate="_",
    ),
    Token(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _whole,
        ("AKIA", "ASIA"),
    ),
    Token(
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9\-])(?P<s>xox[baprs]-(?P<body>[A-Za-z0-9\-]{10,}))"),
        _random_looking,
        ("xox",),
        gate="-",
    ),
    Token(
        "slack_token",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]+)"),
        _secret_group,
        ("hooks.slack.com/",),
        gate="/",
    ),
    Token(
        "jwt",
        re.compile(rf"{_NOT_TOKEN_BEFORE}eyJ[A-Za-z0-9_\-]{{4,}}\.eyJ[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]*"),
        _whole,
        ("eyJ",),
        gate=".",
    ),
    Token(
        # Greedy password up to the last `@` before the host, so an unescaped `p@ss` is redacted whole.
        "url_password",
        re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:(?P<s>[^\s/?#]+)@(?=[A-Za-z0-9\[])"),
        _not_placeholder,
        ("://",),
        gate="@",
        back="+.-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    ),
    Token(
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
    Token(
        # Outside a header only a long, digit-bearing credential counts: "Bearer of bad news" stays.
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9])Bearer\s+(?P<s>[A-Za-z0-9\-._~+/]{20,}=*)"),
        _bare_bearer,
        ("Bearer",),
    ),
    Token(
        "basic_auth",
        re.compile(r"authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}=*)", re.IGNORECASE),
        _not_placeholder,
        ("authorization",),
        gate=":=",
        lower=True,
    ),
    Token(
        "prose_password",
        re.compile(r"(?:password|passphrase|passcode|passwd)\s+(?:is|was|=|:)\s*(?:now\s+|still\s+)?"
                   r"(?:[\"“'‘`](?P<q>[^\"”'’`\n]{1,100})[\"”'’`]|(?P<s>[!-~]{4,100}))", re.IGNORECASE),
        lambda m: _prose_secret(m),
        ("password", "passphrase", "passcode", "passwd"),
        lower=True,
    ),
    Token(
        "prose_password",
        re.compile(r"(?:비밀번호|비번|패스워드)\s*(?:는|은|이|가|:|=)?\s*(?:[\"“'‘`](?P<q>[^\"”'’`\n]{1,100})[\"”'’`]|"
                   r"(?P<s>[!-~]{4,100}?))(?=[^!-~]|$)"),
        lambda m: _prose_secret(m, korean=True),
        ("비밀번호", "비번", "패스워드"),
    ),
)

KEY_VALUES: tuple[KeyValue, ...] = (
    KeyValue(
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
    KeyValue(
        "query_secret",
        re.compile(rf"[?&]{_NAME}=(?P<uq>[^&#\s\"'<>`]+)"),
        _key_value,
        gate="=",
        before="?&",
    ),
    KeyValue(
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
    KeyValue(
        # JSON / Python dict / Ruby hash with a quoted key: `"api_key": "…"`, `'token' => '…'`, `"pin": 1234`.
        "env_secret",
        re.compile(rf"(?P<q>[\"']){_NAME}(?P=q)\s*(?::|=>)\s*(?:{_DQ}|{_SQ}|(?P<uq>{_UQ}))?"),
        _key_value,
        gate=":=",
        before="\"'",
    ),
    KeyValue(
        # Bare key, quoted value: JS objects, YAML, Ruby — `apiKey: "…"`, `password: '…'`.
        "env_secret",
        re.compile(rf"(?<![A-Za-z0-9_./+\"'\-]){_NAME}[ \t]*(?::|=>)[ \t]*(?:{_DQ}|{_SQ})"),
        _key_value,
        gate=":=",
    ),
    KeyValue(
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
# Looked up once per message; each detector then checks its own gate against this set.
GATE_CHARS = "".join(sorted({c for tok in TOKENS for c in tok.gate} | {c for kv in KEY_VALUES for c in kv.gate}))
