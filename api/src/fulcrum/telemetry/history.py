"""Bounded, gap-aware metric history.

Services keep an hour at 1 s; backends, of which there may be thousands, keep five minutes at
1 s; both keep a day at 1 min. The seconds are a bounded ring per series in memory (float64
timestamps, float32 metrics: at most about 130 KB per service and 11 KB per backend); the minutes
fill an hour block in memory, and finished hours go to a `MinuteStore` (`minutes.py`: on disk in
the API), so a day of minutes costs memory only for its current hour. `memory_bytes` says what is
held. Arrays grow as points arrive, and metric columns exist only once a series has seen a
non-zero value: a backend that never had traffic keeps timestamps only. Seconds with no sample
(no data plane, a failover) are simply absent; readers draw a break where points are further
apart than 2.5× the resolution (the dashboard's GAP_FACTOR: one empty bucket is jitter, two are
an outage).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from fulcrum.telemetry.minutes import HOUR, HourBlock, MemoryMinutes, MinuteStore
from fulcrum.telemetry.series import METRICS, Key, Point

POINT_BYTES = 8 + 4 * len(METRICS)
_IDLE = (0.0,) * len(METRICS)

SERVICE_FINE_SECONDS = 3600  # 1 s resolution for an hour
BACKEND_FINE_SECONDS = 300  # 1 s resolution for five minutes


class Ring:
    """A bounded ring of (timestamp, metrics) points, oldest overwritten first.

    It grows up to `capacity` as points arrive; its metric columns are allocated on the first
    non-zero value (until then every stored point is all zeros)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.times = array("d")
        self.values: list[array[float]] | None = None
        self.next = 0  # once full: the oldest point, overwritten by the next append

    def append(self, t: float, values: tuple[float, ...]) -> None:
        if self.values is None and any(values):
            self.values = [array("f", bytes(4 * len(self.times))) for _ in METRICS]
        if len(self.times) < self.capacity:
            self.times.append(t)
            if self.values is not None:
                for column, value in zip(self.values, values, strict=True):
                    column.append(value)
            return
        self.times[self.next] = t
        if self.values is not None:
            for column, value in zip(self.values, values, strict=True):
                column[self.next] = value
        self.next = (self.next + 1) % self.capacity

    def since(self, start: float) -> list[Point]:
        count = len(self.times)
        out = []
        for offset in range(count):
            i = (self.next + offset) % count
            if self.times[i] >= start:
                values = _IDLE if self.values is None else tuple(column[i] for column in self.values)
                out.append((self.times[i], values))
        return out

    def memory_bytes(self) -> int:
        return len(self.times) * (8 + (4 * len(METRICS) if self.values is not None else 0))


@dataclass
class _Minute:
    minute: int
    sums: list[float]
    samples: int


class SeriesHistory:
    """One target's history: every sample at 1 s, and per-minute averages of the current hour."""

    def __init__(self, fine_seconds: int) -> None:
        self.fine = Ring(fine_seconds)
        self.hour: HourBlock | None = None
        self._minute: _Minute | None = None

    def close_minute(self) -> list[HourBlock]:
        """The minute under way closed early (the process stops): the hour blocks held now."""
        finished = self._close_minute(self._minute) if self._minute is not None else None
        self._minute = None
        return [block for block in (finished, self.hour) if block is not None]

    def add(self, t: float, values: tuple[float, ...]) -> HourBlock | None:
        """Keep a sample; the hour block it finished, if it finished one."""
        self.fine.append(t, values)
        minute = int(t // 60)
        current = self._minute
        finished = None
        if current is not None and current.minute != minute:
            finished = self._close_minute(current)
            current = None
        if current is None:
            self._minute = _Minute(minute, list(values), 1)
        else:
            current.sums = [a + b for a, b in zip(current.sums, values, strict=True)]
            current.samples += 1
        return finished

    def _close_minute(self, minute: _Minute) -> HourBlock | None:
        hour, of_hour = divmod(minute.minute, 60)
        finished = None
        if self.hour is not None and self.hour.hour != hour:
            finished, self.hour = self.hour, None
        if self.hour is None:
            self.hour = HourBlock(hour)
        self.hour.set(of_hour, tuple(s / minute.samples for s in minute.sums))
        return finished

    def memory_bytes(self) -> int:
        return self.fine.memory_bytes() + (self.hour.memory_bytes() if self.hour is not None else 0)


def memory_bound(services: int, backends: int) -> int:
    """The most the history holds in memory for that many services and backends, every one busy
    a whole day, when finished hours go to a store on disk (as in the API)."""
    hour = HourBlock.full_bytes()
    return services * (SERVICE_FINE_SECONDS * POINT_BYTES + hour) + backends * (
        BACKEND_FINE_SECONDS * POINT_BYTES + hour
    )


class History:
    """All series, keyed by (service, backend endpoint or None). Thread-safe.

    Finished hours of minutes go to `minutes` (held in memory unless a store is given)."""

    def __init__(self, minutes: MinuteStore | None = None) -> None:
        self.minutes: MinuteStore = minutes if minutes is not None else MemoryMinutes()
        self._series: dict[Key, SeriesHistory] = {}
        self._lock = threading.Lock()
        self._store_pruned = False
        # The hour the last process left under way (close), read at the first sample: a series
        # carries on with its block if this process starts within that hour.
        self._resumable: dict[Key, HourBlock] | None = None

    def add(self, t: float, samples: Iterable[tuple[Key, tuple[float, ...]]]) -> None:
        finished: list[tuple[Key, HourBlock]] = []
        hour = int(t // HOUR)
        with self._lock:
            if self._resumable is None:
                self._resumable = self.minutes.read_hour(hour)
            for key, values in samples:
                series = self._series.get(key)
                if series is None:
                    fine = SERVICE_FINE_SECONDS if key[1] is None else BACKEND_FINE_SECONDS
                    series = self._series[key] = SeriesHistory(fine)
                    left = self._resumable.pop(key, None)
                    if left is not None and left.hour == hour:
                        series.hour = left
                block = series.add(t, values)
                if block is not None:
                    finished.append((key, block))
            if finished:  # in the lock: a read between would find the hour neither here nor there
                self.minutes.put(finished)

    def close(self) -> None:
        """Keep the hour under way in the store, so that the next process carries on with it, and
        close the store. The seconds go: they are not kept anywhere but in memory."""
        with self._lock:
            current = [(key, block) for key, one in self._series.items() for block in one.close_minute()]
            if current:
                self.minutes.put(current)
        self.minutes.close()

    def forget_except(self, keep: set[Key]) -> None:
        """Drop the history of services and backends that no longer exist."""
        with self._lock:
            gone = [key for key in self._series if key not in keep]
            for key in gone:
                del self._series[key]
            # The store may hold series this process never saw (kept from before a restart).
            prune_store = bool(gone) or not self._store_pruned
            self._store_pruned = True
            if self._resumable:
                self._resumable = {key: block for key, block in self._resumable.items() if key in keep}
        if prune_store:
            self.minutes.forget_except(frozenset(keep))

    def read(self, key: Key, start: float, coarse: bool) -> list[Point]:
        with self._lock:
            series = self._series.get(key)
            if not coarse:
                return series.fine.since(start) if series is not None else []
            current = series.hour if series is not None else None
            points = current.points(start) if current is not None else []
        # The store's hours end before the current one; a block that finished while this read
        # ran is both in the store and current (the same points), and is read once.
        stored = [b for b in self.minutes.read(key, start) if current is None or b.hour < current.hour]
        older = [point for block in stored for point in block.points(start)]
        return older + points

    def memory_bytes(self) -> int:
        with self._lock:
            held = sum(s.memory_bytes() for s in self._series.values())
        return held + self.minutes.memory_bytes()
