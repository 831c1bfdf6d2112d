"""Bounded, gap-aware metric history.

Services keep an hour at 1 s; backends, of which there may be thousands, keep five minutes at
1 s; both keep a day at 1 min. Each series is a set of bounded arrays (float64 timestamps,
float32 metrics), so memory is bounded (at most about 120 KB per service and 55 KB per backend)
and `memory_bytes` says what is held. Arrays grow as points arrive, and a series' metric columns
exist only once it has seen a non-zero value: a backend that never had traffic keeps timestamps
only (about 14 KB a day). Seconds with no sample (no data plane, a failover) are simply absent;
readers draw a break where points are further apart than 2.5× the resolution (the dashboard's
GAP_FACTOR: one empty bucket is jitter, two are an outage).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

METRICS = ("cps", "activeconns", "inactconns", "inbps", "outbps", "inpps", "outpps")
POINT_BYTES = 8 + 4 * len(METRICS)
_IDLE = (0.0,) * len(METRICS)

SERVICE_FINE_SECONDS = 3600  # 1 s resolution for an hour
BACKEND_FINE_SECONDS = 300  # 1 s resolution for five minutes
COARSE_POINTS = 1440  # 1 min resolution for a day


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

    def since(self, start: float) -> list[tuple[float, tuple[float, ...]]]:
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
    """One target's history: every sample at 1 s, and per-minute averages."""

    def __init__(self, fine_seconds: int) -> None:
        self.fine = Ring(fine_seconds)
        self.coarse = Ring(COARSE_POINTS)
        self._minute: _Minute | None = None

    def add(self, t: float, values: tuple[float, ...]) -> None:
        self.fine.append(t, values)
        minute = int(t // 60)
        current = self._minute
        if current is not None and current.minute != minute:
            self.coarse.append(current.minute * 60.0, tuple(s / current.samples for s in current.sums))
            current = None
        if current is None:
            self._minute = _Minute(minute, list(values), 1)
        else:
            current.sums = [a + b for a, b in zip(current.sums, values, strict=True)]
            current.samples += 1


class History:
    """All series, keyed by (service, backend endpoint or None). Thread-safe."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str | None], SeriesHistory] = {}
        self._lock = threading.Lock()

    def add(self, t: float, samples: Iterable[tuple[tuple[str, str | None], tuple[float, ...]]]) -> None:
        with self._lock:
            for key, values in samples:
                series = self._series.get(key)
                if series is None:
                    fine = SERVICE_FINE_SECONDS if key[1] is None else BACKEND_FINE_SECONDS
                    series = self._series[key] = SeriesHistory(fine)
                series.add(t, values)

    def forget_except(self, keep: set[tuple[str, str | None]]) -> None:
        """Drop the history of services and backends that no longer exist."""
        with self._lock:
            for key in list(self._series):
                if key not in keep:
                    del self._series[key]

    def read(
        self, key: tuple[str, str | None], start: float, coarse: bool
    ) -> list[tuple[float, tuple[float, ...]]]:
        with self._lock:
            series = self._series.get(key)
            if series is None:
                return []
            return (series.coarse if coarse else series.fine).since(start)

    def memory_bytes(self) -> int:
        with self._lock:
            return sum(s.fine.memory_bytes() + s.coarse.memory_bytes() for s in self._series.values())
