"""Secret redaction: every kind is caught with exact output, look-alikes survive, spans index the original.

The fake secrets are assembled from pieces at import time so this file never contains a string that a secret
scanner (or this module) would flag as a leaked credential.
"""

from __future__ import annotations

import pytest

from gieok.core.redact import Redaction, redact
from gieok.core.secret_patterns import KINDS

ALNUM = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm"
UPPER = "QWERTYUIOP0123456789ASDFGHJKL"


def fake(n: int, chars: str = ALNUM) -> str:
    """`n` characters cycled from `chars`: random-looking enough for the detectors, stable for asserts."""
    return (chars * (n // len(chars) + 1))[:n]


def R(kind: str) -> str:
    return f"[REDACTED:{kind}]"


OPENAI_LEGACY = "sk-" + fake(48)
OPENAI_PROJ = "sk-" + "proj-" + fake(74, ALNUM + "_-")
OPENAI_SVC = "sk-" + "svcacct-" + fake(60, ALNUM + "-")
ANTHROPIC = "sk-" + "ant-" + "api03-" + fake(93, ALNUM + "_-") + "AA"
GOOGLE = "AI" + "za" + "Sy" + fake(33, ALNUM + "_-")
GH_CLASSIC = "gh" + "p_" + fake(36)
GH_APP = "gh" + "s_" + fake(36)
GH_OAUTH = "gh" + "o_" + fake(36)
GH_FINE = "github" + "_pat_" + "11" + fake(20, UPPER) + "_" + fake(59)
AWS_ACCESS = "AK" + "IA" + fake(16, UPPER)
AWS_STS = "AS" + "IA" + fake(16, UPPER)
AWS_SECRET = fake(40, ALNUM + "/+")
SLACK_BOT = "xo" + "xb-" + "2837465019" + "-" + "4918273645012" + "-" + fake(24)
SLACK_USER = "xo" + "xp-" + "2837465019" + "-" + fake(30)
SLACK_HOOK_PATH = "T" + fake(8, UPPER) + "/B" + fake(10, UPPER) + "/" + fake(24)
JWT = (
    "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ik1pbnN1In0"
    + "." + fake(43, ALNUM + "_-")
)
OPAQUE = fake(32, ALNUM + "._~-")
PASSWORD = "Tr0ub4dor" + "&3x"
STRIPE_LIVE = "sk" + "_live_" + fake(24)
STRIPE_RESTRICTED = "rk" + "_live_" + fake(30)


def pem(label: str) -> str:
    body = fake(64, ALNUM + "+/") + "\n" + fake(64, ALNUM + "+/") + "\n" + fake(22, ALNUM) + "=="
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# (text, redacted text, kinds found in order)
TRUE_POSITIVES: list[tuple[str, str, list[str]]] = [
    # openai_key
    (f"my key is {OPENAI_LEGACY}.", f"my key is {R('openai_key')}.", ["openai_key"]),
    (f"export OPENAI_API_KEY={OPENAI_PROJ}\n", f"export OPENAI_API_KEY={R('openai_key')}\n", ["openai_key"]),
    (f"svc: {OPENAI_SVC}", f"svc: {R('openai_key')}", ["openai_key"]),
    # anthropic_key wins over openai_key on the same `sk-` token
    (f"use {ANTHROPIC} now", f"use {R('anthropic_key')} now", ["anthropic_key"]),
    (f'ANTHROPIC_API_KEY="{ANTHROPIC}"', f'ANTHROPIC_API_KEY="{R("anthropic_key")}"', ["anthropic_key"]),
    # google_api_key: `key` alone is not a secret-like name, the AIza shape is what is caught
    (
        f"https://maps.googleapis.com/maps/api/js?key={GOOGLE}&v=3",
        f"https://maps.googleapis.com/maps/api/js?key={R('google_api_key')}&v=3",
        ["google_api_key"],
    ),
    # github_token
    (f"token {GH_CLASSIC} expires", f"token {R('github_token')} expires", ["github_token"]),
    (f"gh auth login --with-token <<< {GH_OAUTH}", f"gh auth login --with-token <<< {R('github_token')}",
     ["github_token"]),
    (f"GITHUB_TOKEN={GH_FINE}", f"GITHUB_TOKEN={R('github_token')}", ["github_token"]),
    (
        f"git clone https://x-access-token:{GH_APP}@github.com/org/repo.git",
        f"git clone https://x-access-token:{R('github_token')}@github.com/org/repo.git",
        ["github_token"],
    ),
    # aws_access_key (an `_id` name is not an env_secret, the AKIA shape is what is caught)
    (f"aws_access_key_id = {AWS_ACCESS}\n", f"aws_access_key_id = {R('aws_access_key')}\n", ["aws_access_key"]),
    # stripe_key: bare, with no name around it
    (f"charge with {STRIPE_LIVE} today", f"charge with {R('stripe_key')} today", ["stripe_key"]),
    (f"restricted {STRIPE_RESTRICTED}", f"restricted {R('stripe_key')}", ["stripe_key"]),
    # prose_password: said in a sentence, English and Korean
    ("the db password is hunter2.", f"the db password is {R('prose_password')}.", ["prose_password"]),
    (f"My password is now {PASSWORD}", f"My password is now {R('prose_password')}", ["prose_password"]),
    ('the passphrase is "correct horse battery"', f'the passphrase is "{R("prose_password")}"',
     ["prose_password"]),
    ("DB 비밀번호는 qwer1234!야", f"DB 비밀번호는 {R('prose_password')}야", ["prose_password"]),
    ("서버 패스워드: Passw0rd 입니다", f"서버 패스워드: {R('prose_password')} 입니다", ["prose_password"]),
    (f'{{"AccessKeyId": "{AWS_STS}"}}', f'{{"AccessKeyId": "{R("aws_access_key")}"}}', ["aws_access_key"]),
    # aws_secret_key, only when labelled
    (
        f"[default]\naws_secret_access_key = {AWS_SECRET}\n",
        f"[default]\naws_secret_access_key = {R('aws_secret_key')}\n",
        ["aws_secret_key"],
    ),
    (f'"SecretAccessKey": "{AWS_SECRET}",', f'"SecretAccessKey": "{R("aws_secret_key")}",', ["aws_secret_key"]),
    # slack_token
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", f"SLACK_BOT_TOKEN={R('slack_token')}", ["slack_token"]),
    (f"user token {SLACK_USER}", f"user token {R('slack_token')}", ["slack_token"]),
    (
        f"post to https://hooks.slack.com/services/{SLACK_HOOK_PATH} please",
        f"post to https://hooks.slack.com/services/{R('slack_token')} please",
        ["slack_token"],
    ),
    # jwt
    (f"session cookie: {JWT};", f"session cookie: {R('jwt')};", ["jwt"]),
    # private_key: the whole block, any algorithm
    (f"here:\n{pem('RSA PRIVATE KEY')}\nthanks", f"here:\n{R('private_key')}\nthanks", ["private_key"]),
    (f"{pem('OPENSSH PRIVATE KEY')}\n", f"{R('private_key')}\n", ["private_key"]),
    (f"a {pem('EC PRIVATE KEY')} b", f"a {R('private_key')} b", ["private_key"]),
    (f"{pem('PRIVATE KEY')}", R("private_key"), ["private_key"]),
    (f"{pem('ENCRYPTED PRIVATE KEY')}", R("private_key"), ["private_key"]),
    # A truncated block (no END line) still leaks key material: everything to the end goes.
    ("key:\n-----BEGIN RSA PRIVATE KEY-----\n" + fake(64) + "\n(truncated)", f"key:\n{R('private_key')}",
     ["private_key"]),
    # url_password: scheme, user and host stay
    (
        f"DATABASE_URL=postgresql://app:{PASSWORD}@db.internal:5432/prod",
        f"DATABASE_URL=postgresql://app:{R('url_password')}@db.internal:5432/prod",
        ["url_password"],
    ),
    (
        "redis://default:" + "p@ss" + "w0rd@cache:6379/0",  # an unescaped @ in the password
        f"redis://default:{R('url_password')}@cache:6379/0",
        ["url_password"],
    ),
    ("amqp://:" + "s3cret" + "@mq/", f"amqp://:{R('url_password')}@mq/", ["url_password"]),
    # env_secret: NAME= stays, the value goes
    (f"DB_PASSWORD={PASSWORD}", f"DB_PASSWORD={R('env_secret')}", ["env_secret"]),
    (f"export STRIPE_SECRET_KEY={PASSWORD}\n", f"export STRIPE_SECRET_KEY={R('env_secret')}\n", ["env_secret"]),
    (f"mysql --password={PASSWORD} -h db", f"mysql --password={R('env_secret')} -h db", ["env_secret"]),
    (f"JWT_SECRET='{PASSWORD}'", f"JWT_SECRET='{R('env_secret')}'", ["env_secret"]),
    ('PASSPHRASE="correct horse battery"', f'PASSPHRASE="{R("env_secret")}"', ["env_secret"]),
    ("JWT_SECRET=my_super_secret_key", f"JWT_SECRET={R('env_secret')}", ["env_secret"]),
    (
        "SENTRY_DSN=https://" + fake(32, "0123456789abcdef") + "@o1.ingest.sentry.io/42",
        f"SENTRY_DSN={R('env_secret')}",
        ["env_secret"],
    ),
    ("clientSecret = " + PASSWORD + "\n", f"clientSecret = {R('env_secret')}\n", ["env_secret"]),
    (f"f(api_key={PASSWORD}, retries=3)", f"f(api_key={R('env_secret')}, retries=3)", ["env_secret"]),
    (f"`API_KEY={PASSWORD}`", f"`API_KEY={R('env_secret')}`", ["env_secret"]),
    ("DBPASSWORD=" + PASSWORD, f"DBPASSWORD={R('env_secret')}", ["env_secret"]),
    ("SMTP_PASS=%40" + "bc123x", f"SMTP_PASS={R('env_secret')}", ["env_secret"]),  # URL-encoded, not %VAR%
    (
        f'{{"api_key": "{PASSWORD}", "max_tokens": 1000}}',
        f'{{"api_key": "{R("env_secret")}", "max_tokens": 1000}}',
        ["env_secret"],
    ),
    (f"{{'password': '{PASSWORD}'}}", f"{{'password': '{R('env_secret')}'}}", ["env_secret"]),
    (f'{{ apiKey: "{PASSWORD}" }}', f'{{ apiKey: "{R("env_secret")}" }}', ["env_secret"]),
    ('{"pin_password": 482913}', f'{{"pin_password": {R("env_secret")}}}', ["env_secret"]),
    (
        f"db:\n  user: app\n  password: {PASSWORD}\n  port: 5432\n",
        f"db:\n  user: app\n  password: {R('env_secret')}\n  port: 5432\n",
        ["env_secret"],
    ),
    (f"  - auth_token: {PASSWORD}  # prod\n", f"  - auth_token: {R('env_secret')}  # prod\n", ["env_secret"]),
    (f"Password: {PASSWORD}", f"Password: {R('env_secret')}", ["env_secret"]),
    # bearer_token / basic_auth
    (
        f"curl -H 'Authorization: Bearer {OPAQUE}' https://api.example.com",
        f"curl -H 'Authorization: Bearer {R('bearer_token')}' https://api.example.com",
        ["bearer_token"],
    ),
    (f"authorization: bearer {OPAQUE}\n", f"authorization: bearer {R('bearer_token')}\n", ["bearer_token"]),
    (
        f'headers = {{"Authorization": "Bearer {OPAQUE}"}}',
        f'headers = {{"Authorization": "Bearer {R("bearer_token")}"}}',
        ["bearer_token"],
    ),
    (f"Authorization: Token {OPAQUE}", f"Authorization: Token {R('bearer_token')}", ["bearer_token"]),
    (f"send Bearer {OPAQUE} with it", f"send Bearer {R('bearer_token')} with it", ["bearer_token"]),
    (f"Authorization: Bearer {JWT}", f"Authorization: Bearer {R('jwt')}", ["jwt"]),
    ("Authorization: Basic " + "YWxhZGRpbjpvcGVuc2VzYW1l", f"Authorization: Basic {R('basic_auth')}",
     ["basic_auth"]),
    # query_secret
    (
        f"GET /cb?access_token={OPAQUE}&state=xyz",
        f"GET /cb?access_token={R('query_secret')}&state=xyz",
        ["query_secret"],
    ),
    (
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=" + fake(64, "0123456789abcdef") + "&x=1",
        f"https://b.s3.amazonaws.com/k?X-Amz-Signature={R('query_secret')}&x=1",
        ["query_secret"],
    ),
]


@pytest.mark.parametrize(("text", "expected", "kinds"), TRUE_POSITIVES)
def test_true_positive_is_redacted_exactly(text: str, expected: str, kinds: list[str]) -> None:
    out, found = redact(text)
    assert out == expected
    assert [r.kind for r in found] == kinds


def test_every_kind_has_a_true_positive() -> None:
    covered = {kind for _, _, kinds in TRUE_POSITIVES for kind in kinds} | {"private"}
    assert covered == set(KINDS)


LOOKALIKES = [
    # hashes, ids, blobs
    "fixed in 3f2a9c1, full hash 3f2a9c1d2e4b5a6978899aabbccddeeff0011223",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "![screenshot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
    "60e6kgAAAABJRU5ErkJggg==)",
    "caption: base64 encoded thumbnail, aGVsbG8gd29ybGQ= and c2VjcmV0IHRva2Vu",
    "header only: eyJhbGciOiJIUzI1NiJ9 is not a token",
    # sk- in prose, short sk- ids, descriptive sk- strings
    "The task-sk-learn pipeline is risk-free; sk-learn is fine.",
    "see ticket sk-1234 and sk-abc",
    "sk-this-is-not-a-real-key-at-all",
    "sk-proj-your-key-goes-here-please",
    # the word password / token / key in prose
    "The password policy requires 12 characters.",
    "Password: must be at least 12 characters long",
    "Tokens: 1500 in, 300 out. The key point: keep the hot path fast.",
    "it's a 'secret': don't tell anyone",
    "Bearer of bad news, the author: Kim",
    "비밀번호 정책은 12자 이상이어야 합니다. 토큰은 매시간 갱신됩니다.",
    "the password is wrong, and the password is required; the password is stored hashed",
    "if the password is incorrect, reset it. The passphrase is case-sensitive.",
    "비밀번호는 바꿨어요. 비번이 틀렸대요.",
    "sk_live_ is the prefix of a Stripe live key; sk_test_abc is too short",
    # config that is not secret by name
    "DEBUG=true\nPORT=8080\nLOG_LEVEL=info\nTOKEN_URL=https://auth.example.com/token\nSSH_KEY_PATH=~/.ssh/id",
    "max_tokens=4096, temperature=0.2, MAX_TOKEN=512",
    '{"max_tokens": 1000, "tokenizer": "bpe", "primary_key": "id", "author": "Kim"}',
    "PWD=/home/minsu/project\nprimary_key=id",
    "sorted(rows, key=len)",
    # empty values and placeholders (decision: placeholders are kept, see the module docstring)
    "API_KEY=\nSECRET_KEY=\"\"\nTOKEN=''",
    "OPENAI_API_KEY=your-key-here\nANTHROPIC_API_KEY=<your api key>\nGITHUB_TOKEN=${GITHUB_TOKEN}",
    "PASSWORD=changeme\nDB_PASSWORD=$(cat /run/secrets/db)\nSECRET=xxxxxxxx\nAPI_KEY=sk-...",
    'password: "****"\napi_key: "..."\ntoken: ${{ secrets.GITHUB_TOKEN }}\nprivate: true',
    "AUTH_ENABLED=false\nauth_type=oauth\nsecret_name=prod/db\nset DB_PASSWORD=%DB_PASSWORD%",
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com",
    "Authorization: Bearer <token>",
    # code: expressions are not literals
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
    "token = get_token()\npassword=self.password\nf(api_key=api_key)\nconst apiKey = process.env.API_KEY;",
    'headers = {"Authorization": f"Bearer {token}"}',
    "let token = await getToken();",
    "if password == expected: ok()",
    # URLs without a password
    "https://user@example.com/path",
    "https://example.com:8443/a?b=c&page=2",
    "git@github.com:org/repo.git and ssh://git@github.com:22/org/repo",
    "mysql://root:@localhost/db",
    "postgres://user:password@localhost/db and postgres://app:${DB_PASSWORD}@db/app",
    # public keys and short AWS-ish ids
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "AKIA1234 is too short",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_survives(text: str) -> None:
    out, found = redact(text)
    assert found == []
    assert out == text


def test_clean_text_is_returned_as_is() -> None:
    text = "We moved the import job to the librarian so the capture hook stays fast."
    out, found = redact(text)
    assert out is text
    assert found == []


# --- <private> blocks --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("before <private>my diary\nline 2</private> after", f"before {R('private')} after"),
    ("<PRIVATE>x</Private> and <private >y</private >", f"{R('private')} and {R('private')}"),
    ("a <private>one</private> b <private>two</private> c", f"a {R('private')} b {R('private')} c"),
    ("keep this <private>but not\nany of\nthis", f"keep this {R('private')}"),
    (f"<private>{OPENAI_PROJ} and {pem('RSA PRIVATE KEY')}</private>!", f"{R('private')}!"),
    ("PASSWORD=<private>hunter2</private>", f"PASSWORD={R('private')}"),
    ("내 일기: <private>오늘은 비밀</private> 끝", f"내 일기: {R('private')} 끝"),
])
def test_private_block_is_removed_whole(text: str, expected: str) -> None:
    out, found = redact(text)
    assert out == expected
    assert {r.kind for r in found} == {"private"}


def test_private_tag_lookalikes_survive() -> None:
    text = "a <privateer> ship and a private note </private> stray close"
    assert redact(text) == (text, [])


# --- spans, merging, Korean --------------------------------------------------------------------------------

def test_spans_index_the_original_text() -> None:
    text = (
        f"키: {ANTHROPIC}\n"
        f"DB_PASSWORD={PASSWORD}\n"
        f"postgres://app:{PASSWORD}@db/app\n"
        f"<private>x</private>"
    )
    out, found = redact(text)
    a = text.index(ANTHROPIC)
    p1 = text.index(PASSWORD)
    p2 = text.index(PASSWORD, p1 + 1)
    priv = text.index("<private>")
    assert found == [
        Redaction("anthropic_key", a, a + len(ANTHROPIC)),
        Redaction("env_secret", p1, p1 + len(PASSWORD)),
        Redaction("url_password", p2, p2 + len(PASSWORD)),
        Redaction("private", priv, len(text)),
    ]
    assert out == (
        f"키: {R('anthropic_key')}\nDB_PASSWORD={R('env_secret')}\npostgres://app:{R('url_password')}@db/app\n"
        f"{R('private')}"
    )


def test_overlaps_merge_into_one_span_named_by_the_strongest_kind() -> None:
    # env_secret covers the quoted value, openai_key the token inside it: one span, the specific kind.
    text = f'OPENAI_API_KEY="{OPENAI_PROJ}"'
    out, found = redact(text)
    start = text.index(OPENAI_PROJ)
    assert found == [Redaction("openai_key", start, start + len(OPENAI_PROJ))]
    assert out == f'OPENAI_API_KEY="{R("openai_key")}"'


def test_korean_around_secrets_is_untouched() -> None:
    text = f"제 OpenAI 키는 {OPENAI_PROJ}이고, 깃허브 토큰은 {GH_CLASSIC}입니다. API_KEY={PASSWORD}입니다"
    out, found = redact(text)
    assert out == (
        f"제 OpenAI 키는 {R('openai_key')}이고, 깃허브 토큰은 {R('github_token')}입니다. "
        f"API_KEY={R('env_secret')}입니다"
    )
    assert [r.kind for r in found] == ["openai_key", "github_token", "env_secret"]


def test_letters_that_lower_case_to_two_characters_do_not_shift_spans() -> None:
    # "İ".lower() is two characters: case-insensitive markers must still land on the original offsets.
    text = f"İİ İstanbul <private>x</private> Authorization: Bearer {OPAQUE}\nAPI_KEY={PASSWORD}"
    out, found = redact(text)
    assert out == f"İİ İstanbul {R('private')} Authorization: Bearer {R('bearer_token')}\nAPI_KEY={R('env_secret')}"
    assert [text[r.start:r.end] for r in found] == ["<private>x</private>", OPAQUE, PASSWORD]


def test_a_long_mixed_message_keeps_everything_but_the_secrets() -> None:
    prose = "We agreed to keep the capture hook fast and move derived work to the librarian. " * 20
    text = f"{prose}\nexport GITHUB_TOKEN={GH_CLASSIC}\n{prose}\nsee {JWT}\n{prose}"
    out, found = redact(text)
    assert out == f"{prose}\nexport GITHUB_TOKEN={R('github_token')}\n{prose}\nsee {R('jwt')}\n{prose}"
    assert [r.kind for r in found] == ["github_token", "jwt"]


# --- idempotence -------------------------------------------------------------------------------------------

IDEMPOTENCE_CASES = (
    [text for text, _, _ in TRUE_POSITIVES]
    + LOOKALIKES
    + [
        "\n".join(text for text, _, _ in TRUE_POSITIVES),
        f"PASSWORD=abc<private>x</private>def {OPENAI_LEGACY}",
        f'"Authorization": "Bearer {OPAQUE}", "token": "{PASSWORD}"',
        "<private>never closed " + ANTHROPIC,
    ]
)


@pytest.mark.parametrize("text", IDEMPOTENCE_CASES)
def test_redact_is_idempotent(text: str) -> None:
    once, _ = redact(text)
    twice, found_again = redact(once)
    assert twice == once
    assert found_again == []
