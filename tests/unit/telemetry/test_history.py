from __future__ import annotations

import pytest

from fulcrum.telemetry.history import BACKEND_FINE_SECONDS, METRICS, History, Ring


def values(x: float) -> tuple[float, ...]:
    return tuple(float(x) for _ in METRICS)


def test_ring_keeps_the_newest_points_in_order() -> None:
    ring = Ring(3)
    for t in range(5):
        ring.append(float(t), values(t))
    assert [t for t, _ in ring.since(0)] == [2.0, 3.0, 4.0]
    assert [t for t, _ in ring.since(3.5)] == [4.0]


def test_gaps_stay_gaps_and_minutes_are_averaged() -> None:
    history = History()
    key = ("web", None)
    for t in [0, 1, 2, 10, 11, 59, 60, 61, 125]:  # missing seconds are missing points
        history.add(float(t), [(key, values(t))])
    fine = [t for t, _ in history.read(key, 0, coarse=False)]
    assert fine == [0, 1, 2, 10, 11, 59, 60, 61, 125]
    coarse = history.read(key, 0, coarse=True)
    assert [t for t, _ in coarse] == [0.0, 60.0]
    assert coarse[0][1][0] == pytest.approx(sum([0, 1, 2, 10, 11, 59]) / 6)  # stored as float32
    assert coarse[1][1][0] == pytest.approx((60 + 61) / 2)


def test_backend_history_is_shorter_and_memory_is_bounded() -> None:
    history = History()
    for t in range(BACKEND_FINE_SECONDS + 50):
        history.add(float(t), [(("web", "198.51.100.1:80"), values(t)), (("web", None), values(t))])
    assert len(history.read(("web", "198.51.100.1:80"), 0, coarse=False)) == BACKEND_FINE_SECONDS
    assert len(history.read(("web", None), 0, coarse=False)) == BACKEND_FINE_SECONDS + 50
    before = history.memory_bytes()
    history.forget_except({("web", None)})
    assert history.memory_bytes() < before
