"""The load generator's replica picking (`gieok.bench.load_client.Replicas`): a replica that refused a connection
is skipped, probed by one request at a time when its wait ends, waited on twice as long after each failed probe,
and back in the rotation after a success."""

from __future__ import annotations

import pytest

from gieok.bench import load_client
from gieok.bench.load_client import Replicas


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(load_client.time, "monotonic", c)
    return c


def test_round_robin_while_all_are_up(clock: Clock) -> None:
    r = Replicas(["a", "b"])
    assert [r.pick() for _ in range(4)] == ["a", "b", "a", "b"]
    assert r.pick(avoid="b") == "a"


def test_a_dead_replica_is_probed_once_per_wait_and_the_wait_doubles(clock: Clock) -> None:
    r = Replicas(["a", "b"])
    r.failed("a")
    assert {r.pick() for _ in range(6)} == {"b"}
    clock.t += 2.0
    picks = [r.pick() for _ in range(6)]
    assert picks.count("a") == 1            # one probe; the other agents keep to b meanwhile
    r.failed("a")                           # the probe failed: 4 s now
    clock.t += 3.9
    assert {r.pick() for _ in range(6)} == {"b"}
    clock.t += 0.1
    assert [r.pick() for _ in range(6)].count("a") == 1
    for _ in range(5):
        r.failed("a")
    clock.t += Replicas.MAX_WAIT_S - 0.1
    assert {r.pick() for _ in range(6)} == {"b"}   # the wait stops growing at 16 s
    clock.t += 0.1
    probe = next(u for u in (r.pick() for _ in range(2)) if u == "a")
    r.ok(probe)                             # it answered: back in the rotation at once
    assert [r.pick() for _ in range(4)].count("a") == 2


def test_with_every_replica_down_one_is_still_tried(clock: Clock) -> None:
    # One server restarting (SQLite): requests keep going to it rather than nowhere.
    r = Replicas(["a"])
    r.failed("a")
    assert r.pick() == "a"
