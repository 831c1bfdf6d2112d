"""The live state of this node, collected once a second and from keepalived's notify FIFOs.

One `Telemetry` per API process: it owns the statistics history, the latest snapshot, the VRRP
and checker states, and the broadcaster that feeds every open event stream.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.orm import Session, sessionmaker

from fulcrum.apply.client import Applier
from fulcrum.config.snapshot import ConfigSnapshot, Service, parsed_snapshot
from fulcrum.dataplane.vip_guard import BackendWarning
from fulcrum.db import unit_of_work
from fulcrum.models import GOOD_STATES, Event, Revision
from fulcrum.models.event_kinds import EventKind
from fulcrum.schemas.telemetry import EventRead, Severity, StatsSnapshot
from fulcrum.telemetry.broadcast import Broadcaster, Message
from fulcrum.telemetry.history import History
from fulcrum.telemetry.minutes import MinuteStore
from fulcrum.telemetry.notify import CheckerNotice, FifoReader, VrrpNotice, parse, virtual_server_parts
from fulcrum.telemetry.stats import history_samples, summarize

log = logging.getLogger(__name__)


# The collector's share of the time at most: one round per interval while rounds are short, and
# a rest of three times a long round after it. A round grows with the backends (its summary alone
# is 0.05-0.1 s natively at 5,000, and the emulated VM runs Python tens of times slower); back to
# back, rounds held the interpreter from every request and commit.
COLLECTOR_DUTY = 0.25


def next_round(previous: float, interval: float, started: float, finished: float) -> float:
    """When the next statistics round starts (monotonic seconds): on the interval's beat, or later
    when the round that ran from `started` to `finished` was long. Missed beats are skipped, not
    caught up; the charts show them as gaps."""
    rest = (finished - started) * (1 - COLLECTOR_DUTY) / COLLECTOR_DUTY
    return max(previous + interval, finished + rest)


class Telemetry:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        applier: Applier,
        interval: float = 1.0,
        fifos: tuple[Path, ...] = (),
        committing: Callable[[], bool] = lambda: False,
        minutes: MinuteStore | None = None,
    ) -> None:
        self.session_scope: Callable[[], AbstractContextManager[Session]] = lambda: _scope(sessions)
        self.applier = applier
        self.interval = interval
        self.committing = committing
        self.broadcaster = Broadcaster()
        self.history = History(minutes)
        self.latest: StatsSnapshot | None = None
        self.vrrp: dict[str, VrrpNotice] = {}
        self.vrrp_transitions: Counter[str] = Counter()
        self.checker_up: dict[tuple[str, str], bool] = {}
        self.backend_warnings: dict[tuple[str, str, str], BackendWarning] = {}
        self._snapshot: tuple[int, str, ConfigSnapshot] | None = None
        self._last_revision: tuple[int, str] | None = None
        self._stop = threading.Event()
        self._collector = threading.Thread(target=self._run, name="stats-collector", daemon=True)
        self._readers = [FifoReader(path, self.handle_line) for path in fifos]

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._collector.start()
        for reader in self._readers:
            reader.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in (self._collector, *self._readers):
            if isinstance(thread, FifoReader):
                thread.stop()
            if thread.is_alive():
                thread.join(timeout=5)
        self.history.close()

    def _run(self) -> None:
        next_tick = time.monotonic()
        while not self._stop.is_set():
            started = time.monotonic()
            if self.committing():
                # A commit is under way: at size it needs the interpreter (rendering, validating)
                # and the applier (reload, read-back) that a round would take a fifth of, and the
                # statistics would only count the old table. The round is a gap in the charts.
                next_tick = max(next_tick + self.interval, started)  # on the beat, none caught up
            else:
                try:
                    self.collect()
                except Exception:
                    log.exception("statistics collection")
                next_tick = next_round(next_tick, self.interval, started, time.monotonic())
            self._stop.wait(max(0.0, next_tick - time.monotonic()))

    # --- statistics -----------------------------------------------------------------------

    def running(self) -> tuple[int, ConfigSnapshot] | None:
        """The running revision's snapshot, parsed once per revision."""
        with self.session_scope() as session:
            row = session.execute(
                select(Revision.number, Revision.digest, Revision.state)
                .where(Revision.state.in_(GOOD_STATES))
                .order_by(Revision.number.desc())
                .limit(1)
            ).first()
            if row is None:
                return None
            number, digest, state = row
            if self._last_revision != (number, state):
                if self._last_revision is not None:
                    self.broadcaster.publish(
                        Message("revision", json.dumps({"number": number, "state": state}))
                    )
                self._last_revision = (number, state)
            if self._snapshot is None or self._snapshot[1] != digest:
                text = session.scalar(select(Revision.snapshot).where(Revision.number == number))
                self._snapshot = (number, digest, parsed_snapshot(text or "{}"))
        return self._snapshot[0], self._snapshot[2]

    def collect(self) -> StatsSnapshot:
        running = self.running()
        stats = self.applier.stats()
        now = datetime.now(UTC)
        snapshot = summarize(
            running[1] if running else None,
            stats.table,
            at=now,
            ipvs_available=stats.ipvs_available,
            detail=stats.ipvs_detail,
            revision=running[0] if running else None,
            warnings=stats.backend_warnings,
        )
        self._warning_events(stats.backend_warnings)
        samples = history_samples(snapshot)
        self.history.add(now.timestamp(), samples)
        keep: set[tuple[str, str | None]] = {(s.name, None) for s in snapshot.services} | {
            (s.name, b.endpoint) for s in snapshot.services for b in s.backends
        }
        self.history.forget_except(keep)
        self.latest = snapshot
        self.broadcaster.publish(Message("stats", snapshot.model_dump_json()))
        return snapshot

    # --- events ---------------------------------------------------------------------------

    def _warning_events(self, warnings: list[BackendWarning]) -> None:
        """An event when a guardrail warning appears, and one when it clears."""
        current = {(w.service, w.backend, w.code): w for w in warnings}
        for key, warning in current.items():
            if key not in self.backend_warnings:
                self.record(
                    "backend_warning",
                    Severity.WARNING,
                    f"backend {warning.backend} of {warning.service} {warning.message}",
                    service=warning.service,
                    backend=warning.backend,
                    detail={"code": warning.code},
                )
        for service, backend, code in self.backend_warnings.keys() - current.keys():
            self.record(
                "backend_warning_cleared",
                Severity.INFO,
                f"backend {backend} of {service}: the {code.replace('_', ' ')} warning has cleared",
                service=service,
                backend=backend,
                detail={"code": code},
            )
        self.backend_warnings = current

    def handle_line(self, line: str) -> None:
        notice = parse(line)
        if notice is None:
            if line.strip():
                log.info("keepalived notify line not understood: %r", line)
            return
        if isinstance(notice, VrrpNotice):
            self._vrrp_event(notice)
        else:
            self._checker_event(notice)

    def _vrrp_event(self, notice: VrrpNotice) -> None:
        previous = self.vrrp.get(notice.name)
        self.vrrp[notice.name] = notice
        if previous is not None and previous.state != notice.state:
            self.vrrp_transitions[notice.name] += 1
        severity = Severity.CRITICAL if notice.state == "FAULT" else Severity.INFO
        scope = "VRRP sync group" if notice.scope == "GROUP" else "VRRP instance"
        was = f" (was {previous.state})" if previous is not None else ""
        self.record(
            "vrrp_state",
            severity,
            f"{scope} {notice.name} is {notice.state}{was}",
            detail={
                "scope": notice.scope,
                "name": notice.name,
                "state": notice.state,
                "priority": notice.priority,
                "previous": previous.state if previous else None,
            },
        )

    def _checker_event(self, notice: CheckerNotice) -> None:
        service = self._service_named_by(notice.virtual_server)
        name = service.name if service else notice.virtual_server
        if notice.real_server is None:
            quorum: tuple[EventKind, str] = (
                ("service_up", "has quorum again")
                if notice.up
                else ("service_down", "lost quorum: not enough healthy backends")
            )
            self.record(
                quorum[0],
                Severity.INFO if notice.up else Severity.CRITICAL,
                f"service {name} {quorum[1]}",
                service=name,
            )
            return
        self.checker_up[(name, notice.real_server)] = notice.up
        kind: EventKind = "backend_up" if notice.up else "backend_down"
        text = "passes its health check again" if notice.up else "failed its health check"
        self.record(
            kind,
            Severity.INFO if notice.up else Severity.CRITICAL,
            f"backend {notice.real_server} of {name} {text}",
            service=name,
            backend=notice.real_server,
        )

    def _service_named_by(self, virtual_server: str) -> Service | None:
        running = self.running()
        if running is None:
            return None
        address, port, fwmark = virtual_server_parts(virtual_server)
        for service in running[1].services:
            if fwmark is not None and service.fwmark == fwmark:
                return service
            if (
                address is not None
                and service.address == ipaddress.ip_address(address)
                and port in service.ports
            ):
                return service
        return None

    def record(
        self,
        kind: EventKind,
        severity: Severity,
        message: str,
        *,
        service: str | None = None,
        backend: str | None = None,
        detail: dict[str, Any] | None = None,
        session: Session | None = None,
    ) -> None:
        """Store an event, and stream it once it is committed. Inside a request pass its `session`:
        the event is then part of the request's transaction (a second writer would wait for the
        request's own write lock), and a request that rolls back streams nothing."""
        if session is None:
            with self.session_scope() as own:
                self.record(
                    kind, severity, message, service=service, backend=backend, detail=detail, session=own
                )
            return
        row = Event(
            kind=kind,
            severity=severity.value,
            message=message,
            service=service,
            backend=backend,
            detail=detail or {},
        )
        session.add(row)
        session.flush()
        pending = session.info.setdefault(_PUBLISH_ON_COMMIT, [])
        pending.append((self.broadcaster, Message("event", EventRead.model_validate(row).model_dump_json())))


# Events waiting in a session for its transaction to commit: (broadcaster, message).
_PUBLISH_ON_COMMIT = "fulcrum_publish_on_commit"


@event.listens_for(Session, "after_commit")
def _publish_committed(session: Session) -> None:
    for broadcaster, message in session.info.pop(_PUBLISH_ON_COMMIT, []):
        broadcaster.publish(message)


@event.listens_for(Session, "after_rollback")
def _forget_rolled_back(session: Session) -> None:
    session.info.pop(_PUBLISH_ON_COMMIT, None)


@contextmanager
def _scope(sessions: sessionmaker[Session]) -> Iterator[Session]:
    with sessions() as session, unit_of_work(session):
        yield session
