"""The one error tree of gieok.

    GieokError
    ├── InvalidInput          bad caller input; names the field and how to fix it
    ├── NotFound              an id that does not exist (or is not visible to the caller)
    ├── AuthError             a request refused for who is asking (HTTP status in `status`)
    │   ├── Unauthorized      401: no credentials, or credentials that do not verify
    │   ├── Forbidden         403: a verified principal asking for what its role or scope does not allow
    │   └── RateLimited       429: over the per-key request rate; `retry_after` seconds
    ├── ConfigError           a setting that cannot work; says which GIEOK_ variable to change
    ├── StoreError            the database refused (locked, corrupt, migration failed)
    └── ProviderError         an embedding / LLM provider failed
        ├── TransientProviderError   retry later (timeouts, 429, 5xx, connection refused)
        │   └── MalformedAnswer      an answer not in its API's shape (truncated, not JSON, wrong schema or
        │                            count): usually a one-off, so retried like an outage
        └── PermanentProviderError   retrying will not help (401, 404, a wrong model or dimension setting)
            └── RejectedInput        the provider refused this input (400, 413, 422, a safety refusal)

`per_row` says whether a failed batch is worth retrying one row at a time: a malformed answer or a refused
input may be one row's doing, an outage or a bad key is everybody's.

Third-party errors are translated once, at the boundary that calls them (`raise X(...) from exc`).
"""

from __future__ import annotations


class GieokError(Exception):
    """Base of every error gieok raises on purpose."""


class InvalidInput(GieokError, ValueError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class NotFound(GieokError, LookupError):
    pass


class AuthError(GieokError):
    status = 401


class Unauthorized(AuthError):
    status = 401


class Forbidden(AuthError):
    status = 403


class RateLimited(AuthError):
    status = 429

    def __init__(self, message: str, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class ConfigError(GieokError):
    pass


class StoreError(GieokError):
    pass


class ProviderError(GieokError):
    """A provider (embedding model, LLM) failed. `transient` says whether a retry may help."""

    transient = False
    per_row = False


class TransientProviderError(ProviderError):
    transient = True


class PermanentProviderError(ProviderError):
    transient = False


class MalformedAnswer(TransientProviderError):
    per_row = True


class RejectedInput(PermanentProviderError):
    per_row = True
