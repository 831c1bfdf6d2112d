from __future__ import annotations

import pytest

from fulcrum.telemetry.history import BACKEND_FINE_SECONDS, METRICS, POINT_BYTES, History, Ring


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


def test_a_backend_without_traffic_keeps_timestamps_only() -> None:
    """Thousands of idle backends must not cost full metric arrays (issue 18: 310 MB at 5,000)."""
    history = History()
    idle, busy = ("web", "198.51.100.1:80"), ("web", "198.51.100.2:80")
    history.add(0.0, [(idle, (0.0,) * len(METRICS)), (busy, values(1))])
    assert history.memory_bytes() == 8 + POINT_BYTES  # one point each; nothing reserved ahead
    for t in range(1, BACKEND_FINE_SECONDS * 2):
        history.add(float(t), [(idle, (0.0,) * len(METRICS)), (busy, values(1))])
    fine_idle = history.read(idle, 0, coarse=False)
    assert len(fine_idle) == BACKEND_FINE_SECONDS and all(v == (0.0,) * len(METRICS) for _, v in fine_idle)
    coarse_points = len(history.read(idle, 0, coarse=True))
    assert history.memory_bytes() == (BACKEND_FINE_SECONDS + coarse_points) * (8 + POINT_BYTES)


def test_traffic_after_idle_seconds_keeps_the_zeros_before_it_in_order() -> None:
    ring = Ring(4)
    for t in range(6):  # wraps while still idle, then traffic arrives
        ring.append(float(t), values(0))
    ring.append(6.0, values(6))
    assert ring.since(0) == [(3.0, values(0)), (4.0, values(0)), (5.0, values(0)), (6.0, values(6))]
