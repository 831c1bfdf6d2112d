"""The per-minute day of every series, kept an hour to a block.

A series' minutes fill an `HourBlock` in memory; a finished hour goes to a `MinuteStore`. Two
stores: `MemoryMinutes` (tests, benchmarks, a node without a data directory) and `DiskMinutes`,
the API's, which keeps the blocks in an SQLite file beside the database. On disk, a day of
5,000 busy backends is a file of about 245 MB (tests/bench/native_control_plane.py measures it)
instead of 1,440 points of 36 bytes per series in the API's memory, about 260 MB (issue 18: the
API fits a small box), and it survives a restart of the API; a finished hour is written once,
in one transaction for every series, by a thread of its own, so the statistics collector never
waits for the disk. So is the hour under way when the API stops (`History.close`), and the next
process carries on with it.

The file is a cache of charts, not configuration: it has no Alembic history. A file of another
format (`FORMAT`), or one SQLite cannot open, is started afresh.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import struct
import threading
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from fulcrum.telemetry.series import METRICS, Key, Point

log = logging.getLogger(__name__)

MINUTES = 60
HOUR = 3600
DAY_HOURS = 24
_MASK = struct.Struct("<Q")
_IDLE = (0.0,) * len(METRICS)


class HourBlock:
    """One series' minutes of one hour: which minutes have a point, and their averages (float32).

    The metric columns exist only once a minute had a non-zero value: an idle series' hour is
    eight bytes."""

    __slots__ = ("hour", "present", "values")

    def __init__(self, hour: int, present: int = 0, values: array[float] | None = None) -> None:
        self.hour = hour  # hours since the epoch
        self.present = present  # bit m: minute m has a point
        self.values = values  # metric-major: len(METRICS) columns of MINUTES

    def set(self, minute: int, values: tuple[float, ...]) -> None:
        self.present |= 1 << minute
        if self.values is None:
            if not any(values):
                return
            self.values = array("f", bytes(4 * len(METRICS) * MINUTES))
        for column, value in enumerate(values):
            self.values[column * MINUTES + minute] = value

    def points(self, start: float) -> list[Point]:
        out = []
        for minute in range(MINUTES):
            t = self.hour * HOUR + minute * 60.0
            if self.present >> minute & 1 and t >= start:
                out.append((t, _IDLE if self.values is None else self.column_values(minute)))
        return out

    def column_values(self, minute: int) -> tuple[float, ...]:
        assert self.values is not None
        return tuple(self.values[column * MINUTES + minute] for column in range(len(METRICS)))

    def encode(self) -> bytes:
        return _MASK.pack(self.present) + (self.values.tobytes() if self.values is not None else b"")

    @classmethod
    def decode(cls, hour: int, blob: bytes) -> HourBlock:
        (present,) = _MASK.unpack_from(blob)
        values = None
        if len(blob) > _MASK.size:
            values = array("f")
            values.frombytes(blob[_MASK.size :])
        return cls(hour, present, values)

    def memory_bytes(self) -> int:
        return _MASK.size + (4 * len(METRICS) * MINUTES if self.values is not None else 0)

    @staticmethod
    def full_bytes() -> int:
        """A busy hour's size."""
        return _MASK.size + 4 * len(METRICS) * MINUTES


class MinuteStore(Protocol):
    def put(self, blocks: list[tuple[Key, HourBlock]]) -> None:
        """Keep finished hours; those older than a day before the newest are let go."""

    def read(self, key: Key, start: float) -> list[HourBlock]:
        """The kept hours of one series that end after `start`, oldest first."""

    def read_hour(self, hour: int) -> dict[Key, HourBlock]:
        """Every series' kept block of `hour`: the hour a process left under way, for the next."""

    def forget_except(self, keep: frozenset[Key]) -> None:
        """Let go of every series not in `keep`."""

    def memory_bytes(self) -> int: ...

    def close(self) -> None: ...


class MemoryMinutes:
    """Finished hours held in memory (a process without a data directory)."""

    def __init__(self) -> None:
        self._blocks: dict[Key, list[HourBlock]] = {}
        self._lock = threading.Lock()

    def put(self, blocks: list[tuple[Key, HourBlock]]) -> None:
        with self._lock:
            for key, block in blocks:
                kept = [b for b in self._blocks.get(key, []) if block.hour - DAY_HOURS < b.hour < block.hour]
                self._blocks[key] = [*kept, block]

    def read(self, key: Key, start: float) -> list[HourBlock]:
        with self._lock:
            return [b for b in self._blocks.get(key, []) if (b.hour + 1) * HOUR > start]

    def read_hour(self, hour: int) -> dict[Key, HourBlock]:
        with self._lock:
            return {key: b for key, blocks in self._blocks.items() for b in blocks if b.hour == hour}

    def forget_except(self, keep: frozenset[Key]) -> None:
        with self._lock:
            for key in [k for k in self._blocks if k not in keep]:
                del self._blocks[key]

    def memory_bytes(self) -> int:
        with self._lock:
            return sum(b.memory_bytes() for blocks in self._blocks.values() for b in blocks)

    def close(self) -> None:
        pass


FORMAT = 2
# A rowid table: its rows (up to 1.7 KB) are too large for WITHOUT ROWID's B-tree to hold well.
_SCHEMA = (
    """CREATE TABLE hour_block (
        service TEXT NOT NULL,
        backend TEXT NOT NULL,  -- '' for the service's own series
        hour INTEGER NOT NULL,  -- hours since the epoch
        block BLOB NOT NULL     -- HourBlock.encode()
    )""",
    "CREATE UNIQUE INDEX hour_block_series ON hour_block (service, backend, hour)",
    "CREATE INDEX hour_block_hour ON hour_block (hour)",
)
_STOP = object()


class DiskMinutes:
    """Finished hours in an SQLite file, written by a thread of its own.

    Until the thread has written them, `read` answers from the hours it was given."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pending: dict[tuple[Key, int], HourBlock] = {}
        self._lock = threading.Lock()
        self._work: queue.Queue[object] = queue.Queue()
        self._reader = self._open()
        self._writer = threading.Thread(target=self._write_loop, name="minute-store", daemon=True)
        self._writer.start()

    def _open(self) -> sqlite3.Connection:
        try:
            return _connect(self.path)
        except sqlite3.DatabaseError as error:
            log.warning("statistics history %s could not be opened (%s): started afresh", self.path, error)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            return _connect(self.path)

    def put(self, blocks: list[tuple[Key, HourBlock]]) -> None:
        with self._lock:
            for key, block in blocks:
                self._pending[(key, block.hour)] = block
        self._work.put(blocks)

    def read(self, key: Key, start: float) -> list[HourBlock]:
        first_hour = int(start // HOUR)
        with self._lock:
            rows = self._reader.execute(
                "SELECT hour, block FROM hour_block WHERE service = ? AND backend = ? AND hour >= ?",
                (key[0], key[1] or "", first_hour),
            ).fetchall()
            found = {hour: HourBlock.decode(hour, blob) for hour, blob in rows}
            for (pending_key, hour), block in self._pending.items():
                if pending_key == key and hour >= first_hour:
                    found[hour] = block
        return [found[hour] for hour in sorted(found)]

    def read_hour(self, hour: int) -> dict[Key, HourBlock]:
        with self._lock:
            rows = self._reader.execute(
                "SELECT service, backend, block FROM hour_block WHERE hour = ?", (hour,)
            )
            found: dict[Key, HourBlock] = {
                (service, backend or None): HourBlock.decode(hour, blob) for service, backend, blob in rows
            }
            found.update({key: block for (key, at), block in self._pending.items() if at == hour})
        return found

    def forget_except(self, keep: frozenset[Key]) -> None:
        with self._lock:
            for pending in [p for p in self._pending if p[0] not in keep]:
                del self._pending[pending]
        self._work.put(keep)

    def memory_bytes(self) -> int:
        with self._lock:
            return sum(b.memory_bytes() for b in self._pending.values())

    def flush(self) -> None:
        """Wait until every hour given so far is written."""
        self._work.join()

    def close(self) -> None:
        self._work.put(_STOP)
        self._writer.join(timeout=30)
        with self._lock:
            self._reader.close()

    def _write_loop(self) -> None:
        connection = _connect(self.path)
        try:
            while (work := self._work.get()) is not _STOP:
                try:
                    if isinstance(work, frozenset):
                        _forget_except(connection, work)
                    elif isinstance(work, list):
                        self._write(connection, work)
                except sqlite3.Error:
                    log.exception("statistics history %s: a write failed, those hours are lost", self.path)
                    connection.rollback()
                    with self._lock:
                        self._pending.clear()
                finally:
                    # Not held until the next hour's work arrives: it is every series' hour.
                    work = None
                    self._work.task_done()
        finally:
            connection.close()

    def _write(self, connection: sqlite3.Connection, blocks: list[tuple[Key, HourBlock]]) -> None:
        with connection:
            connection.executemany(  # a row at a time: every series' hour at once is megabytes
                "INSERT OR REPLACE INTO hour_block VALUES (?, ?, ?, ?)",
                ((key[0], key[1] or "", block.hour, block.encode()) for key, block in blocks),
            )
            newest = max(block.hour for _, block in blocks)
            connection.execute("DELETE FROM hour_block WHERE hour <= ?", (newest - DAY_HOURS,))
        with self._lock:
            for key, block in blocks:
                if self._pending.get((key, block.hour)) is block:
                    del self._pending[(key, block.hour)]


def open_minute_store(path: Path) -> MinuteStore:
    """The API's store: the file at `path`, or, where it cannot be used at all (a directory there,
    no permission), memory, with the reason in the log: a cache of charts does not stop the API."""
    try:
        return DiskMinutes(path)
    except (OSError, sqlite3.Error) as error:
        log.error("statistics history %s cannot be used (%s): the day is kept in memory", path, error)
        return MemoryMinutes()


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    if connection.execute("PRAGMA user_version").fetchone()[0] != FORMAT:
        with connection:
            connection.execute("DROP TABLE IF EXISTS hour_block")
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {FORMAT}")
    return connection


def _forget_except(connection: sqlite3.Connection, keep: Iterable[Key]) -> None:
    kept = {(service, backend or "") for service, backend in keep}
    stored = connection.execute("SELECT DISTINCT service, backend FROM hour_block").fetchall()
    gone = [row for row in stored if tuple(row) not in kept]
    if gone:
        with connection:
            connection.executemany("DELETE FROM hour_block WHERE service = ? AND backend = ?", gone)
