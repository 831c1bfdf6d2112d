"""The background dispatcher: the events table as an outbox, one cursor per channel (see the
package's docstring for the guarantees)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from fulcrum.alerts import senders
from fulcrum.alerts.kinds import PAIR_WIDE, SEVERITY_RANK, condition_of
from fulcrum.alerts.message import Alert
from fulcrum.alerts.node import NodeView
from fulcrum.alerts.outbox import mark_failed
from fulcrum.db import begin_write, unit_of_work
from fulcrum.models import AlertChannel, AlertCondition, AlertRule, Event
from fulcrum.models._types import utcnow
from fulcrum.periodic import PeriodicWorker

log = logging.getLogger(__name__)

BATCH = 100  # events read per channel and round
BACKOFF_FIRST = 5.0  # seconds after a failed delivery; doubled per failure in a row
BACKOFF_MAX = 300.0


@dataclass(frozen=True)
class Channel:
    """A channel as read for one round (detached from any session)."""

    id: int
    type: str
    config: dict[str, object]
    secret: str | None
    cursor: int


@dataclass(frozen=True)
class Decision:
    send: bool
    opens: str | None = None
    closes: str | None = None


def decide(event: Event, rules: list[AlertRule], open_keys: set[str], sends_pair_wide: bool) -> Decision:
    """Whether a channel with these rules and open conditions sends this event."""
    if event.kind in PAIR_WIDE and not sends_pair_wide:
        return Decision(False)
    condition = condition_of(event.kind, event.service, event.backend, (event.detail or {}).get("code"))
    if condition is not None and not condition[1]:
        key = condition[0]
        return Decision(True, closes=key) if key in open_keys else Decision(False)
    rank = SEVERITY_RANK.get(event.severity, 0)
    if not any(event.kind in rule.kinds and rank >= SEVERITY_RANK[rule.min_severity] for rule in rules):
        return Decision(False)
    if condition is not None:
        key = condition[0]
        return Decision(False) if key in open_keys else Decision(True, opens=key)
    return Decision(True)


def reminder_minutes(kind: str, rules: list[AlertRule]) -> int | None:
    found = [r.reminder_minutes for r in rules if kind in r.kinds and r.reminder_minutes is not None]
    return min(found) if found else None


@contextmanager
def _scope(sessions: sessionmaker[Session]) -> Iterator[Session]:
    with sessions() as session, unit_of_work(session):
        yield session


class Dispatcher(PeriodicWorker):
    thread_name = "alert-dispatcher"

    def __init__(
        self,
        sessions: sessionmaker[Session],
        node: Callable[[], NodeView],
        interval: float,
    ) -> None:
        super().__init__()
        self.session_scope: Callable[[], AbstractContextManager[Session]] = lambda: _scope(sessions)
        self.node = node
        self.interval = interval
        self.retry_at: dict[int, float] = {}  # channel id -> monotonic time of the next attempt
        self.failures: dict[int, int] = {}

    def seconds_between_rounds(self) -> float:
        return self.interval

    def run_once(self, now: datetime | None = None) -> None:
        """One round: every enabled channel not backing off gets its new events and reminders."""
        with self.session_scope() as session:
            ids = list(
                session.scalars(select(AlertChannel.id).where(AlertChannel.enabled).order_by(AlertChannel.id))
            )
        # Read once a round, and only when something is to be decided: it asks the data plane.
        node = functools.cache(self.node)
        for channel_id in ids:
            if self.retry_at.get(channel_id, 0.0) > time.monotonic():
                continue
            self._deliver(channel_id, node, now or utcnow())

    def _deliver(self, channel_id: int, this_node: Callable[[], NodeView], now: datetime) -> None:
        with self.session_scope() as session:
            row = session.get(AlertChannel, channel_id)
            if row is None or not row.enabled:
                return
            channel = Channel(row.id, row.type, dict(row.config), row.secret, row.last_event_id)
            rules = list(session.scalars(select(AlertRule).where(AlertRule.channel_id == channel_id)))
            events = list(
                session.scalars(
                    select(Event).where(Event.id > channel.cursor).order_by(Event.id).limit(BATCH)
                )
            )
            conditions = {
                c.key: c
                for c in session.scalars(
                    select(AlertCondition).where(AlertCondition.channel_id == channel_id)
                )
            }
        if not events and not conditions:
            return
        node = this_node()
        open_keys = set(conditions)
        cursor = channel.cursor
        for event in events:
            decision = decide(event, rules, open_keys, node.sends_pair_wide)
            if decision.send:
                alert = Alert(
                    node.name,
                    event.kind,
                    event.severity,
                    event.message,
                    event.at,
                    event.id,
                    event.service,
                    event.backend,
                    detail=dict(event.detail or {}),
                )
                if not self._send(channel, alert, now):
                    break
                if decision.opens:
                    open_keys.add(decision.opens)
                if decision.closes:
                    open_keys.discard(decision.closes)
            cursor = event.id
            if decision.send:
                self._advance(channel_id, cursor, event, decision, now)
        else:
            if cursor != channel.cursor:
                self._advance(channel_id, cursor, None, Decision(False), now)
            self._remind(channel, rules, open_keys, conditions, node, now)

    def _remind(
        self,
        channel: Channel,
        rules: list[AlertRule],
        open_keys: set[str],
        conditions: dict[str, AlertCondition],
        node: NodeView,
        now: datetime,
    ) -> None:
        for key, condition in conditions.items():
            minutes = reminder_minutes(condition.kind, rules)
            if (
                key not in open_keys
                or minutes is None
                or now - condition.last_sent_at < timedelta(minutes=minutes)
            ):
                continue
            lasted = int((now - condition.opened_at).total_seconds() // 60)
            alert = Alert(
                node.name, condition.kind, condition.severity, condition.message, now, reminder_minutes=lasted
            )
            if not self._send(channel, alert, now):
                return
            with self.session_scope() as session:
                begin_write(session)
                row = session.get(AlertCondition, condition.id)
                if row is not None:
                    row.last_sent_at = now

    def _send(self, channel: Channel, alert: Alert, now: datetime) -> bool:
        """Send, holding no database session; record a failure and back off. True when sent."""
        try:
            senders.send(channel.type, channel.config, channel.secret, alert)
        except senders.DeliveryFailed as exc:
            failures = self.failures.get(channel.id, 0) + 1
            self.failures[channel.id] = failures
            self.retry_at[channel.id] = time.monotonic() + min(
                BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1)
            )
            log.warning("alert channel %d: delivery failed (%d in a row): %s", channel.id, failures, exc)
            with self.session_scope() as session:
                begin_write(session)
                mark_failed(session, channel.id, str(exc), now)
            return False
        self.failures.pop(channel.id, None)
        self.retry_at.pop(channel.id, None)
        return True

    def _advance(
        self, channel_id: int, cursor: int, event: Event | None, decision: Decision, now: datetime
    ) -> None:
        """Move the cursor past a sent event (and the skipped ones before it) and keep its condition."""
        with self.session_scope() as session:
            begin_write(session)
            row = session.get(AlertChannel, channel_id)
            if row is None:
                return
            row.last_event_id = max(row.last_event_id, cursor)
            if event is None:
                return
            row.last_success_at = now
            if decision.closes:
                session.execute(
                    delete(AlertCondition).where(
                        AlertCondition.channel_id == channel_id, AlertCondition.key == decision.closes
                    )
                )
            if decision.opens:
                session.add(
                    AlertCondition(
                        channel_id=channel_id,
                        key=decision.opens,
                        message=event.message,
                        severity=event.severity,
                        kind=event.kind,
                        opened_at=event.at,
                        last_sent_at=now,
                    )
                )
