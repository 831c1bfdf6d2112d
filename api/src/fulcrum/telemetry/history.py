"""Bounded, gap-aware metric history.

Services keep an hour at 1 s; backends, of which there may be thousands, keep five minutes at
1 s; both keep a day at 1 min. Each series is a set of fixed-size arrays (float64 timestamps,
float32 metrics), so memory is bounded and known in advance (`memory_bytes`): about 120 KB per
service and 55 KB per backend. Seconds with no sample (no data plane, a failover) are simply
absent; readers draw a break where points are further apart than 2.5× the resolution (the
dashboard's GAP_FACTOR: one empty bucket is jitter, two are an outage).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

METRICS = ("cps", "activeconns", "inactconns", "inbps", "outbps", "inpps", "outpps")
POINT_BYTES = 8 + 4 * len(METRICS)

SERVICE_FINE_SECONDS = 3600  # 1 s resolution for an hour
BACKEND_FINE_SECONDS = 300  # 1 s resolution for five minutes
COARSE_POINTS = 1440  # 1 min resolution for a day


class Ring:
    """A fixed-capacity ring of (timestamp, metrics) points, oldest overwritten first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.times = array("d", bytes(8 * capacity))
        self.values = [array("f", bytes(4 * capacity)) for _ in METRICS]
        self.count = 0
        self.next = 0

    def append(self, t: float, values: tuple[float, ...]) -> None:
        self.times[self.next] = t
        for column, value in zip(self.values, values, strict=True):
            column[self.next] = value
        self.next = (self.next + 1) % self.capacity
        self.count = min(self.count + 1, self.capacity)

    def since(self, start: float) -> list[tuple[float, tuple[float, ...]]]:
        first = (self.next - self.count) % self.capacity
        out = []
        for offset in range(self.count):
            i = (first + offset) % self.capacity
            if self.times[i] >= start:
                out.append((self.times[i], tuple(column[i] for column in self.values)))
        return out


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
            return sum((s.fine.capacity + s.coarse.capacity) * POINT_BYTES for s in self._series.values())
