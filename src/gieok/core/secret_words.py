"""Which names are secret-like and which values hold no secret: the vocabulary the redaction detectors
(`gieok.core.secret_patterns`) and `redact_json` judge names and values by.

Secret-like names (`is_secret_name`): split into words (snake, kebab, dotted, camelCase), one word is password,
passwd, pwd, pass, passphrase, secret, token, key (qualified: `api_key`, not `key`), credential(s), auth,
authorization, private, dsn, signature or apikey — or a run-together `DBPASSWORD`, `AUTHTOKEN`, `SECRETKEY`.
Not secret-like: names that describe a secret (`TOKEN_URL`, `KEY_PATH`, `AUTH_TYPE`, `SECRET_NAME`), counters
(`max_tokens`, `MAX_TOKEN`, `token_count`), `primary_key` / `public_key` / `sort_key`, and the shell's `PWD`.

Values left alone because they hold no secret (`is_placeholder`): empty; already redacted; a reference or
template (`$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`, `{{ var }}`, `<your key>`); `your-key-here`, anything starting
with "your" or ending in "-here"; masks (`****`, `xxxx`, `...`); booleans and nulls; the stock dummies
(`changeme`, `placeholder`, `secret`, `password`, `token`, `value`, `example`, `todo`); an elided `sk-...`.
Keeping `changeme` is deliberate: it is what templates and docs say, and hiding it would bury the instruction
while protecting nothing an attacker would not try first. Unquoted values that are code, not data, stay too
(`api_key=os.environ["K"]`, `token=get_token()`, `password=self.password`, `api_key=api_key`).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["NAME_STEMS", "is_code", "is_placeholder", "is_secret_name"]


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
NAME_STEMS = ("key", "secret", "token", "pass", "pwd", "cred", "auth", "private", "dsn", "signature")


@lru_cache(maxsize=4096)  # the same few names (`key`, `max_tokens`, `api_key`) recur in every message
def is_secret_name(name: str) -> bool:
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
# `os.environ["K"]`, `get_token()`, `cfg.secret` — an expression, not a literal.
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[(\[]")
_IDENT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def is_placeholder(value: str) -> bool:
    low = value.strip().lower()
    if low in _PLACEHOLDER_WORDS or low.startswith(_TEMPLATE_START) or "[redacted:" in low:
        return True
    if len(low) > 2 and low[0] == low[-1] == "%":
        return True  # `%DB_PASSWORD%` (Windows); a lone leading `%` is URL-encoding, `%40bc` is a password
    if low.endswith(("-here", "_here", " here", "here>")) or _MASK.fullmatch(low):
        return True
    # An elided example (`sk-...`, `ghp_…`) shows a prefix, not a secret.
    return low.endswith(("...", "…")) and len(low.rstrip(".…")) <= 8


def is_code(value: str, name: str) -> bool:
    if _CALL.match(value):
        return True
    if value.lower() == name.lower():
        return True  # `f(api_key=api_key)`: a keyword argument passed through
    # `password=self.password`, `token=process.env.GITHUB_TOKEN`: an attribute, not a literal. A lone
    # identifier is *not* code here: `JWT_SECRET=my_secret_key` in a .env file is a (weak) real secret.
    _, dot, last = value.rpartition(".")
    return bool(dot) and _IDENT_PATH.fullmatch(value) is not None and is_secret_name(last)
