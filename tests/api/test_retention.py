"""Retention on a real SQLite file: events and audit pruned by age and by count, oldest first, in
short batches; never an event an enabled alert channel has still to send; never a revision; and
the API's writers wait at most about one batch while a large prune runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from fulcrum import migrate
from fulcrum.db import begin_write, make_engine, make_sessionmaker, unit_of_work
from fulcrum.models import AlertChannel, AuditEntry, Event, Revision
from fulcrum.models._types import utcnow
from fulcrum.services import retention

Scope = Callable[[], AbstractContextManager[Session]]


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    url = f"sqlite:///{tmp_path / 'fulcrum.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def scope(sessions: sessionmaker[Session]) -> Scope:
    @contextmanager
    def _scope() -> Iterator[Session]:
        with sessions() as session, unit_of_work(session):
            yield session

    return _scope


def add_events(sessions: sessionmaker[Session], count: int, at: datetime, chunk: int = 50_000) -> None:
    row = {"at": at, "kind": "backend_down", "severity": "critical", "message": "failed", "detail": {}}
    for start in range(0, count, chunk):
        with sessions() as session, session.begin():
            session.execute(insert(Event), [row] * min(chunk, count - start))


def event_ids(sessions: sessionmaker[Session]) -> list[int]:
    with sessions() as session:
        return list(session.scalars(select(Event.id).order_by(Event.id)))


def test_events_older_than_the_age_limit_go_the_newer_stay(
    sessions: sessionmaker[Session], scope: Scope
) -> None:
    now = utcnow()
    add_events(sessions, 30, now - timedelta(days=100))
    add_events(sessions, 20, now - timedelta(days=1))
    pruned = retention.prune_events(scope, retention.Limits(days=90, rows=10_000), 7, now)
    assert pruned.rows == 30 and pruned.batches == 5  # 7 at a time
    assert event_ids(sessions) == list(range(31, 51))


def test_beyond_the_row_limit_the_oldest_go(sessions: sessionmaker[Session], scope: Scope) -> None:
    add_events(sessions, 1500, utcnow())
    retention.prune_events(scope, retention.Limits(days=90, rows=1000), 100, utcnow())
    assert event_ids(sessions) == list(range(501, 1501))


def test_events_an_alert_channel_has_still_to_send_are_kept(
    sessions: sessionmaker[Session], scope: Scope
) -> None:
    now = utcnow()
    add_events(sessions, 100, now - timedelta(days=365))
    with sessions() as session, session.begin():
        session.add(AlertChannel(name="hook", type="webhook", config={}, last_event_id=40))
        # A disabled channel sends nothing: it does not hold the table's growth back.
        session.add(AlertChannel(name="off", type="webhook", config={}, last_event_id=3, enabled=False))
    retention.prune_events(scope, retention.Limits(days=90, rows=10_000), 500, now)
    assert event_ids(sessions) == list(range(41, 101))


def test_the_audit_log_is_pruned_on_its_own_limits_and_revisions_never(
    sessions: sessionmaker[Session], scope: Scope
) -> None:
    now = utcnow()
    with sessions() as session, session.begin():
        for days in (800, 400, 1):
            session.add(AuditEntry(at=now - timedelta(days=days), username="admin", action="revision.commit"))
        session.add(Revision(number=1, author="admin", snapshot="{}", digest="d", state="applied"))
    retention.prune_audit(scope, retention.Limits(days=730, rows=200_000), 500, now)
    with sessions() as session:
        ages = [(now - at).days for at in session.scalars(select(AuditEntry.at).order_by(AuditEntry.id))]
        assert ages == [399, 0] or ages == [400, 1]
        assert session.scalar(select(func.count()).select_from(Revision)) == 1


def test_a_large_prune_lets_other_writers_in_between_its_batches(
    sessions: sessionmaker[Session], scope: Scope
) -> None:
    """200,000 old events pruned while another writer records an event every few milliseconds:
    each batch is a transaction of its own, so the writer's events are committed while the prune
    runs, not after it, and none is lost. How long a batch holds the lock is printed, not asserted
    (a timing belongs in a benchmark: these machines are noisy)."""
    now = utcnow()
    add_events(sessions, 200_000, now - timedelta(days=200))
    done = threading.Event()
    committed: list[float] = []
    waits: list[float] = []

    def writer() -> None:
        while not done.is_set():
            started = time.monotonic()
            with sessions() as session, unit_of_work(session):
                begin_write(session)
                session.add(Event(kind="backend_up", severity="info", message="up", detail={}))
            committed.append(time.monotonic())
            waits.append(committed[-1] - started)
            done.wait(0.005)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        began = time.monotonic()
        pruned = retention.prune_events(scope, retention.Limits(days=90, rows=1_000_000), 500, now)
        ended = time.monotonic()
    finally:
        done.set()
        thread.join()
    assert pruned.rows == 200_000 and pruned.batches == 400
    during = sum(began < at < ended for at in committed)
    print(f"pruned {pruned.rows} in {pruned.batches} batches over {ended - began:.2f} s: longest hold "
          f"{pruned.longest_hold:.3f} s; {during} of {len(committed)} writes committed during the prune, "
          f"longest wait {max(waits):.3f} s")
    # One transaction for the whole prune would let at most the one write it blocked through.
    assert during > 10, f"only {during} writes were committed while the prune ran"
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Event)) == len(committed)
