from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fulcrum.telemetry.history import BACKEND_FINE_SECONDS, POINT_BYTES, History, Ring
from fulcrum.telemetry.minutes import DiskMinutes, HourBlock, MemoryMinutes, MinuteStore, open_minute_store
from fulcrum.telemetry.series import METRICS, Key


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
    assert len(history.read(idle, 0, coarse=True)) == 9  # minutes 0-8 closed
    # An idle hour of minutes is a presence mask; a busy one has its metric columns.
    hour_busy = 8 + 4 * len(METRICS) * 60
    assert history.memory_bytes() == BACKEND_FINE_SECONDS * (8 + POINT_BYTES) + 8 + hour_busy


def test_traffic_after_idle_seconds_keeps_the_zeros_before_it_in_order() -> None:
    ring = Ring(4)
    for t in range(6):  # wraps while still idle, then traffic arrives
        ring.append(float(t), values(0))
    ring.append(6.0, values(6))
    assert ring.since(0) == [(3.0, values(0)), (4.0, values(0)), (5.0, values(0)), (6.0, values(6))]


def minute_samples(history: History, keys: list[Key], hours: float, value: float = 1.0) -> None:
    """One sample a minute (each closes the minute before it) for `hours` hours from t=0."""
    for minute in range(int(hours * 60) + 1):
        history.add(minute * 60.0, [(key, values(value if minute % 2 else 0)) for key in keys])


@pytest.fixture(params=["memory", "disk"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MinuteStore]:
    made: MinuteStore = MemoryMinutes() if request.param == "memory" else DiskMinutes(tmp_path / "h.sqlite")
    yield made
    made.close()


def settled(store: MinuteStore) -> None:
    """Wait for a disk store's writer: until then reads answer from what it was given."""
    if isinstance(store, DiskMinutes):
        store.flush()


def test_finished_hours_go_to_the_store_and_reads_join_them(store: MinuteStore) -> None:
    history = History(store)
    key: Key = ("web", "198.51.100.1:80")
    minute_samples(history, [key], hours=3.5)
    points = history.read(key, 0, coarse=True)
    assert [t for t, _ in points] == [m * 60.0 for m in range(210)]  # every closed minute, in order
    assert [v[0] for _, v in points[:4]] == [0.0, 1.0, 0.0, 1.0]
    assert [t for t, _ in history.read(key, 2.5 * 3600, coarse=True)] == [m * 60.0 for m in range(150, 210)]
    # In memory: the ring of seconds (here 211 samples, one a minute) and the current hour, not
    # the three hours before it.
    assert history.memory_bytes() - store.memory_bytes() == 211 * POINT_BYTES + 8 + 4 * len(METRICS) * 60
    settled(store)
    assert store.memory_bytes() == 0 or isinstance(store, MemoryMinutes)
    assert [b.hour for b in store.read(key, 0)] == [0, 1, 2]


def test_the_store_keeps_a_day(store: MinuteStore) -> None:
    history = History(store)
    key: Key = ("web", None)
    minute_samples(history, [key], hours=27)
    settled(store)
    assert [b.hour for b in store.read(key, 0)] == list(range(2, 26))  # 24 finished hours
    day = History(store).read(key, 26 * 3600 - 86400, coarse=True)
    assert day[0][0] == 2 * 3600.0 and len(day) == 24 * 60


def test_the_day_on_disk_outlives_the_process_and_forgets_what_is_gone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite"
    kept: Key = ("web", "198.51.100.1:80")
    removed: Key = ("web", "198.51.100.2:80")
    first = History(DiskMinutes(path))
    minute_samples(first, [kept, removed], hours=2.5)
    first.close()

    after_restart = History(DiskMinutes(path))
    # Two finished hours and the 31 minutes of the one under way at the stop, from disk.
    assert len(after_restart.read(kept, 0, coarse=True)) == 120 + 31
    after_restart.forget_except({kept})  # the first round: the store drops what no longer exists
    after_restart.close()
    reopened = DiskMinutes(path)
    assert [b.hour for b in reopened.read(kept, 0)] == [0, 1, 2]
    assert reopened.read(removed, 0) == []
    reopened.close()


def test_the_hour_under_way_outlives_a_restart_within_it(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    key: Key = ("web", "198.51.100.1:80")
    first = History(DiskMinutes(path))
    for minute in range(3 * 60 + 20):  # three hours and twenty minutes, the last one under way
        first.add(minute * 60.0 + 1, [(key, values(minute))])
    first.add(199 * 60.0 + 30, [(key, values(1000))])  # half of minute 199, with minute 199's own
    first.close()  # the API stops at 3:19:30

    restarted = History(DiskMinutes(path))
    # Before its first sample, the stopped hour is read from the file with the finished ones.
    kept = restarted.read(key, 3 * 3600, coarse=True)
    assert [(t - 3 * 3600, v[0]) for t, v in kept] == [(m * 60.0, 180.0 + m) for m in range(19)] + [
        (19 * 60.0, (199 + 1000) / 2)
    ]
    for minute in range(205, 4 * 60 + 1):  # back at 3:25, on into hour 4
        restarted.add(minute * 60.0 + 1, [(key, values(minute))])
    hour_3 = [(t, v[0]) for t, v in restarted.read(key, 3 * 3600, coarse=True) if t < 4 * 3600]
    assert [t for t, _ in hour_3] == [3 * 3600 + m * 60.0 for m in [*range(20), *range(25, 60)]]
    assert [value for _, value in hour_3][-1] == 239.0
    restarted.close()
    reopened = DiskMinutes(path)
    assert [b.hour for b in reopened.read(key, 0)] == [0, 1, 2, 3, 4]
    assert bin(reopened.read(key, 3 * 3600)[0].present).count("1") == 55  # the hour once, both parts
    reopened.close()


def test_a_restart_in_a_later_hour_starts_that_hour_afresh(store: MinuteStore) -> None:
    key: Key = ("web", None)
    first = History(store)
    for minute in range(30):
        first.add(minute * 60.0, [(key, values(1))])
    first.close()
    later = History(DiskMinutes(store.path) if isinstance(store, DiskMinutes) else store)
    later.add(2 * 3600.0, [(key, values(2))])
    later.add(2 * 3600.0 + 60, [(key, values(2))])
    points = later.read(key, 0, coarse=True)
    assert [t for t, _ in points] == [m * 60.0 for m in range(30)] + [2 * 3600.0]
    later.close()


def test_an_unreadable_file_is_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"not a database" * 100)
    store = DiskMinutes(path)
    history = History(store)
    minute_samples(history, [("web", None)], hours=1.2)
    store.close()
    reopened = DiskMinutes(path)
    assert [b.hour for b in reopened.read(("web", None), 0)] == [0]
    reopened.close()


def test_a_file_that_cannot_be_used_keeps_the_day_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    taken = tmp_path / "h.sqlite"
    taken.mkdir()  # a directory where the file should be: SQLite cannot open it, nor may it go
    store = open_minute_store(taken)
    assert isinstance(store, MemoryMinutes)
    assert f"statistics history {taken} cannot be used" in caplog.text
    assert taken.is_dir()
    history = History(store)
    minute_samples(history, [("web", None)], hours=1.5)
    assert len(history.read(("web", None), 0, coarse=True)) == 90  # every closed minute
    assert isinstance(open_minute_store(tmp_path / "fine.sqlite"), DiskMinutes)


def test_an_hour_block_of_an_idle_series_is_its_mask() -> None:
    block = HourBlock(7)
    block.set(0, values(0))
    block.set(59, values(0))
    assert block.encode() == (1 | 1 << 59).to_bytes(8, "little")
    block.set(30, values(2))
    again = HourBlock.decode(7, block.encode())
    assert [(t - 7 * 3600, v) for t, v in again.points(0)] == [
        (0.0, values(0)),
        (1800.0, values(2)),
        (3540.0, values(0)),
    ]
