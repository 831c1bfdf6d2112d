"""The alert dispatcher on a real SQLite database, delivering to real local servers: one alert per
condition, the recovery, reminders, retries without loss, only committed events, no lock held
while sending, and the pair's shared events sent by the active node only."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from fulcrum import migrate
from fulcrum.alerts.dispatcher import Dispatcher
from fulcrum.alerts.node import NodeView
from fulcrum.db import begin_write, make_engine, make_sessionmaker
from fulcrum.models import AlertChannel, AlertRule, Event
from fulcrum.models._types import utcnow

from lab.alert_receivers import (
    SmtpSink,
    SyslogReceiver,
    WebhookReceiver,
    smtp_sink,
    syslog_receiver,
    webhook_receiver,
)


@dataclass
class Rig:
    sessions: sessionmaker[Session]
    mail: SmtpSink
    hook: WebhookReceiver
    log: SyslogReceiver
    node: NodeView
    dispatcher: Dispatcher

    def event(self, kind: str, severity: str, message: str, **fields: object) -> int:
        with self.sessions() as session, session.begin():
            event = Event(kind=kind, severity=severity, message=message, detail={}, **fields)
            session.add(event)
            session.flush()
            return event.id

    def channel(self, name: str) -> AlertChannel:
        with self.sessions() as session:
            return session.query(AlertChannel).filter_by(name=name).one()

    def sent(self) -> tuple[list[str], list[str], list[str]]:
        return (
            [m["Subject"].replace("\r\n", "") for m in self.mail.messages],
            [b["message"] for b in self.hook.bodies],
            [line.decode().rsplit(" - ", 1)[1] for line in self.log.lines],
        )


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    url = f"sqlite:///{tmp_path / 'fulcrum.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with ExitStack() as stack:
        mail = stack.enter_context(smtp_sink())
        hook = stack.enter_context(webhook_receiver("hook-key"))
        log = stack.enter_context(syslog_receiver("tcp"))
        configs = {
            "mail": (
                "smtp",
                {
                    "host": "127.0.0.1",
                    "port": mail.port,
                    "security": "none",
                    "username": None,
                    "from_address": "lb@example.org",
                    "to_addresses": ["ops@example.org"],
                },
                None,
            ),
            "hook": ("webhook", {"url": hook.url}, "hook-key"),
            "log": (
                "syslog",
                {"host": "127.0.0.1", "port": log.port, "transport": "tcp", "facility": 16},
                None,
            ),
        }
        with sessions() as session, session.begin():
            for name, (kind, config, secret) in configs.items():
                channel = AlertChannel(name=name, type=kind, config=config, secret=secret, last_event_id=0)
                session.add(channel)
                session.flush()
                session.add(
                    AlertRule(
                        channel_id=channel.id,
                        kinds=["backend_down", "backend_up", "vrrp_state"],
                        min_severity="warning",
                        reminder_minutes=30,
                    )
                )
        rig = Rig(sessions, mail, hook, log, NodeView("lb1", True), Dispatcher(sessions, lambda: rig.node, 0))
        yield rig
    engine.dispose()


def down(rig: Rig) -> int:
    return rig.event(
        "backend_down",
        "critical",
        "backend 10.0.0.1:80 of web failed its health check",
        service="web",
        backend="10.0.0.1:80",
    )


def wait_for(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_one_alert_per_condition_then_the_recovery_on_every_channel(rig: Rig) -> None:
    down(rig)
    down(rig)  # the same open condition reported again (keepalived restarted, say)
    rig.event("vrrp_state", "info", "VRRP instance VI_1 is BACKUP")  # below the rules' severity
    rig.dispatcher.run_once()
    wait_for(lambda: len(rig.log.lines) >= 1)
    text = "backend 10.0.0.1:80 of web failed its health check"
    assert rig.sent() == ([f"[lb1] CRITICAL: {text}"], [text], [text])
    assert rig.hook.bodies[0]["kind"] == "backend_down" and rig.hook.bodies[0]["node"] == "lb1"
    up = rig.event(
        "backend_up",
        "info",
        "backend 10.0.0.1:80 of web passes its health check again",
        service="web",
        backend="10.0.0.1:80",
    )
    rig.dispatcher.run_once()
    wait_for(lambda: len(rig.log.lines) >= 2)
    assert [len(sent) for sent in rig.sent()] == [2, 2, 2]
    assert rig.hook.bodies[1]["kind"] == "backend_up"
    assert rig.channel("hook").last_event_id == up and rig.channel("hook").last_error is None
    rig.dispatcher.run_once()
    assert [len(sent) for sent in rig.sent()] == [2, 2, 2], "nothing is sent twice"


def test_a_condition_still_open_is_reminded_of_once_per_interval(rig: Rig) -> None:
    down(rig)
    rig.dispatcher.run_once()
    later = utcnow() + timedelta(minutes=31)
    rig.dispatcher.run_once(now=later)
    rig.dispatcher.run_once(now=later + timedelta(minutes=1))
    wait_for(lambda: len(rig.log.lines) >= 2)
    subjects, hooks, _ = rig.sent()
    assert len(subjects) == 2 and len(hooks) == 2
    assert subjects[1].startswith(
        "[lb1] CRITICAL: still unresolved after 31 minutes: backend 10.0.0.1:80 of web"
    )
    assert rig.hook.bodies[1]["reminder"] is True


def test_a_failed_delivery_is_visible_and_retried_without_losing_events(rig: Rig) -> None:
    rig.hook.status = 503
    first = down(rig)
    rig.dispatcher.run_once()
    hook = rig.channel("hook")
    assert hook.last_error == "HTTP 503 Service Unavailable" and hook.last_error_at is not None
    assert hook.last_event_id == first - 1, "the cursor stays before the event not delivered"
    assert len(rig.mail.messages) == 1, "one channel failing does not hold up the others"
    rig.hook.status = 200
    rig.dispatcher.run_once()
    assert rig.hook.bodies == [], "a failing channel backs off"
    restarted = Dispatcher(
        rig.sessions, lambda: rig.node, 0
    )  # a restart forgets the back-off, not the cursor
    restarted.run_once()
    assert [b["event_id"] for b in rig.hook.bodies if b["event_id"] == first] == [first]
    assert rig.channel("hook").last_event_id == first and len(rig.mail.messages) == 1


def test_only_committed_events_are_sent(rig: Rig) -> None:
    with rig.sessions() as writer:
        begin_write(writer)
        writer.add(Event(kind="backend_down", severity="critical", message="uncommitted", detail={}))
        writer.flush()
        rig.dispatcher.run_once()
        assert rig.hook.bodies == []
        writer.commit()
    rig.dispatcher.run_once()
    assert [b["message"] for b in rig.hook.bodies] == ["uncommitted"]


def test_sending_holds_no_database_lock(rig: Rig) -> None:
    rig.hook.release.clear()  # the webhook receiver answers only when told
    down(rig)
    sending = threading.Thread(target=rig.dispatcher.run_once)
    sending.start()
    try:
        assert rig.hook.arrived.wait(10)
        started = time.monotonic()
        rig.event("ha.sync", "info", "a write while an alert is on its way")
        assert time.monotonic() - started < 1.0, "a writer waited for the dispatcher"
    finally:
        rig.hook.release.set()
        sending.join(30)
    assert len(rig.hook.bodies) == 1


def test_the_pairs_shared_events_are_sent_by_the_active_node_only(rig: Rig) -> None:
    rig.node = NodeView("lb2", sends_pair_wide=False)
    down(rig)
    rig.event("vrrp_state", "critical", "VRRP instance VI_1 is FAULT")
    rig.dispatcher.run_once()
    assert [(b["node"], b["kind"]) for b in rig.hook.bodies] == [("lb2", "vrrp_state")]
    rig.node = NodeView("lb2", sends_pair_wide=True)
    rig.dispatcher.run_once()
    assert len(rig.hook.bodies) == 1, "the standby's skipped events are not sent later"


def test_line_breaks_in_an_event_cannot_forge_a_header_or_a_syslog_record(rig: Rig) -> None:
    rig.event(
        "backend_down",
        "critical",
        "backend x down\r\nBcc: victim@example.org\n<11>1 - forged - - - - fake",
        service="web",
        backend="x",
    )
    rig.dispatcher.run_once()
    wait_for(lambda: len(rig.log.lines) >= 1)
    assert len(rig.log.lines) == 1 and b"\n" not in rig.log.lines[0] and b"\r" not in rig.log.lines[0]
    message = rig.mail.messages[0]
    assert message["Bcc"] is None and rig.mail.envelopes == [("lb@example.org", ["ops@example.org"])]
    assert "\n" not in rig.hook.bodies[0]["message"]
