"""Per-key rate limit: a token bucket per principal key (an API key id, or the JWT's user). A key may burst
up to `burst` requests, then gets `per_min` a minute; over that, 429 with `Retry-After`. In-process: each
server replica limits on its own (a replica count times the rate is the fleet's ceiling)."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_KEYS = 100_000   # buckets kept; the least recently used are dropped (a dropped bucket starts full)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    def __init__(self, per_min: float, burst: int) -> None:
        self.rate = per_min / 60.0
        self.burst = float(burst)
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key: str, now: float | None = None) -> float:
        """Spend one token of `key`'s bucket: 0.0 if allowed, else the seconds until one is available."""
        if not self.enabled:
            return 0.0
        now = time.monotonic() if now is None else now
        b = self._buckets.get(key)
        if b is None:
            b = _Bucket(self.burst, now)
            self._buckets[key] = b
            if len(self._buckets) > MAX_KEYS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            b.tokens = min(self.burst, b.tokens + (now - b.at) * self.rate)
            b.at = now
        if b.tokens >= 1.0:
            b.tokens -= 1.0
            return 0.0
        return (1.0 - b.tokens) / self.rate
