"""UUIDv7 ids: time-ordered, so the primary key sorts like created_at (RFC 9562 §5.7).

Python 3.11 has no `uuid.uuid7`; this one keeps ids strictly increasing inside one process even when
several are made in the same millisecond (a 12-bit counter in rand_a, as RFC 9562 §6.2 method 1 allows).
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def uuid7(at_ms: int | None = None) -> str:
    """A new UUIDv7 string. `at_ms` backdates the timestamp part (imports keep their original time order)."""
    global _last_ms, _counter
    with _lock:
        ms = int(time.time() * 1000) if at_ms is None else at_ms
        if at_ms is None:
            if ms <= _last_ms:
                ms = _last_ms
                _counter += 1
                if _counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                    ms += 1
                    _counter = 0
            else:
                _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF  # leave headroom for increments
            _last_ms = ms
            rand_a = _counter
        else:
            rand_a = int.from_bytes(os.urandom(2), "big") & 0xFFF
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def is_uuid(value: str) -> bool:
    return bool(UUID_RE.match(value))


def uuid7_time_ms(value: str) -> int:
    return uuid.UUID(value).int >> 80
