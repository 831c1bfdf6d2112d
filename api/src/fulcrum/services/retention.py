"""Pruning the events and the audit log: by age and by row count, oldest first, in small batches.

Each batch is its own short write transaction (a few hundred rows by primary key), so the API's
writers wait at most one batch for SQLite's write lock. Events an enabled alert channel has not
sent yet (after its cursor) are never pruned: the events table is the alerts' outbox. Revisions
are never pruned: they are the configuration's history (rollback, diff, HA lineage). SQLite
reuses the pages freed, so the database file stops growing rather than shrinking.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from fulcrum.db import begin_write
from fulcrum.models import AlertChannel, AuditEntry, Event

PAUSE = 0.01  # seconds, at least, between two batches


@dataclass(frozen=True)
class Limits:
    days: int
    rows: int


@dataclass
class Pruned:
    """What a run removed, and the longest time one batch held the write lock (seconds)."""

    rows: int = 0
    batches: int = 0
    longest_hold: float = 0.0


def prunable_up_to(
    session: Session,
    id_column: InstrumentedAttribute[int],
    at_column: InstrumentedAttribute[datetime],
    limits: Limits,
    now: datetime,
) -> int:
    """The highest id to prune: every row older than the age limit, and the oldest rows beyond the
    row limit (ids only grow, so id order is age order)."""
    too_old = session.scalar(select(func.max(id_column)).where(at_column < now - timedelta(days=limits.days)))
    beyond_count = session.scalar(select(id_column).order_by(id_column.desc()).offset(limits.rows).limit(1))
    return max(too_old or 0, beyond_count or 0)


def undelivered_after(session: Session) -> int | None:
    """The lowest cursor of the enabled alert channels: events after it are still to be sent."""
    return session.scalar(select(func.min(AlertChannel.last_event_id)).where(AlertChannel.enabled))


def prune_events(
    scope: Callable[[], AbstractContextManager[Session]],
    limits: Limits,
    batch: int,
    now: datetime,
    stop: threading.Event | None = None,
) -> Pruned:
    with scope() as session:
        upto = prunable_up_to(session, Event.id, Event.at, limits, now)
        cursor = undelivered_after(session)
    if cursor is not None:
        upto = min(upto, cursor)
    return _prune(scope, Event.id, upto, batch, stop or threading.Event())


def prune_audit(
    scope: Callable[[], AbstractContextManager[Session]],
    limits: Limits,
    batch: int,
    now: datetime,
    stop: threading.Event | None = None,
) -> Pruned:
    with scope() as session:
        upto = prunable_up_to(session, AuditEntry.id, AuditEntry.at, limits, now)
    return _prune(scope, AuditEntry.id, upto, batch, stop or threading.Event())


def _prune(
    scope: Callable[[], AbstractContextManager[Session]],
    id_column: InstrumentedAttribute[int],
    upto: int,
    batch: int,
    stop: threading.Event,
) -> Pruned:
    """Delete rows with id <= upto, `batch` at a time, each batch committed on its own, pausing
    after each as long as it held the lock (at least PAUSE): SQLite's busy handler polls, so a
    pruner that took the lock again at once would starve the API's writers (one waited 2.3 s)."""
    pruned = Pruned()
    table = id_column.class_
    while upto > 0 and not stop.is_set():
        with scope() as session:
            begin_write(session)  # waits for the lock, then holds it to the scope's commit
            started = time.monotonic()
            ids = list(
                session.scalars(select(id_column).where(id_column <= upto).order_by(id_column).limit(batch))
            )
            if ids:
                session.execute(delete(table).where(id_column.in_(ids)))
        if not ids:
            break
        hold = time.monotonic() - started
        pruned.rows += len(ids)
        pruned.batches += 1
        pruned.longest_hold = max(pruned.longest_hold, hold)
        if stop.wait(max(PAUSE, hold)):
            break
    return pruned
