"""Every Prometheus metric gieok exports, defined once (official `prometheus-client`, default registry, so the
process and Python collectors come along). The definitions live in `core` because every layer records into
them: the hot path (ingest), retrieval (search), the librarian (queue, rate, providers, embeddings) and the
HTTP/MCP boundary (requests, tools, refusals). Exposition is `gieok.app.observability` and the `/metrics`
route; each process (a server replica, a worker) is scraped on its own, so no multiprocess mode is needed.

Label values are small fixed sets (route templates, tool names, error kinds), never user input: a label per
user or per query would grow the series without bound.
"""

from __future__ import annotations

import re

from prometheus_client import Counter, Gauge, Histogram, Info, disable_created_metrics

# `*_created` series double the exposition and no dashboard reads them.
disable_created_metrics()

# Latency buckets from a 2 ms keyword hit to a 10 s provider timeout.
_LATENCY = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

BUILD = Info("gieok_build", "Version of the running gieok.")

HTTP_REQUESTS = Counter("gieok_http_requests_total", "HTTP requests by route template, method and status.",
                        ["route", "method", "status"])
HTTP_LATENCY = Histogram("gieok_http_request_duration_seconds", "HTTP request latency by route template.",
                         ["route", "method"], buckets=_LATENCY)
AUTH_FAILURES = Counter("gieok_auth_failures_total", "Requests refused for authentication (401) or "
                        "authorization (403), by route.", ["route", "status"])
RATE_LIMITED = Counter("gieok_rate_limited_total", "Requests refused by a rate limit (429), by route.", ["route"])

TOOL_CALLS = Counter("gieok_tool_calls_total", "MCP tool calls by tool and outcome (ok, error).",
                     ["tool", "outcome"])
TOOL_LATENCY = Histogram("gieok_tool_duration_seconds", "MCP tool call latency by tool.", ["tool"],
                         buckets=_LATENCY)

INGESTED = Counter("gieok_ingest_total", "Messages through the hot path: stored, or duplicate (already there).",
                   ["result"])
SEARCH_LATENCY = Histogram("gieok_search_duration_seconds", "Memory search latency (query embedding included), "
                           "by the mode that answered.", ["mode"], buckets=_LATENCY)

QUEUE_ROWS = Gauge("gieok_librarian_queue_rows", "Rows waiting for the librarian (pending) and rows that ran "
                   "out of retries (failed), read from the database at scrape time.", ["state"])
QUEUE_LAG = Gauge("gieok_librarian_lag_seconds", "Age of the oldest row waiting for the librarian (0 when none).")
LIBRARIAN_ROWS = Counter("gieok_librarian_rows_total", "Rows the librarian finished in this process, by outcome "
                         "(done, failed attempt); rate() is the processing rate.", ["outcome"])
PROVIDER_ERRORS = Counter("gieok_provider_errors_total", "Provider failures by provider (embedder, llm) and "
                          "kind (timeout, http, unavailable, invalid, …).", ["provider", "kind"])
EMBED_LATENCY = Histogram("gieok_embedding_duration_seconds", "Embedding calls by what was embedded "
                          "(documents: a librarian batch, query: one search).", ["what"], buckets=_LATENCY)

_HTTP_STATUS = re.compile(r"answered HTTP (\d{3})")


def provider_error_kind(exc: BaseException) -> str:
    """A bounded label for a provider failure: timeout, unreachable, rate_limited, http_4xx, http_5xx, or
    the retry class (transient, permanent) when nothing more specific is known."""
    cause = exc.__cause__
    if isinstance(cause, TimeoutError) or (cause is not None and "Timeout" in type(cause).__name__):
        return "timeout"
    if cause is not None and type(cause).__name__ in ("ConnectError", "TransportError", "RemoteProtocolError",
                                                      "ReadError", "WriteError", "NetworkError"):
        return "unreachable"
    m = _HTTP_STATUS.search(str(exc))
    if m:
        status = int(m.group(1))
        return "rate_limited" if status == 429 else f"http_{status // 100}xx"
    return "transient" if getattr(exc, "transient", False) else "permanent"


def record_provider_error(provider: str, exc: BaseException) -> None:
    PROVIDER_ERRORS.labels(provider, provider_error_kind(exc)).inc()
