"""HA events, stored and streamed like the data plane's (the telemetry hub's `events` table)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from fulcrum.models import Event
from fulcrum.schemas.telemetry import EventRead, Severity
from fulcrum.telemetry.broadcast import Message
from fulcrum.telemetry.hub import Telemetry

KINDS = (
    "ha.paired",
    "ha.unpaired",
    "ha.sync",
    "ha.conflict",
    "ha.split_brain",
    "ha.maintenance",
    "ha.peer_unreachable",
    "ha.peer_reachable",
    "ha.peer_untrusted",
    "ha.peer_certificate",
    "ha.clock_skew",
    "ha.drill",
    "ha.role_unknown",
    "ha.role_known",
    "ha.failback_waiting",
    "ha.failback",
)


def emit(
    telemetry: Telemetry,
    kind: str,
    severity: Severity,
    message: str,
    detail: dict[str, Any] | None = None,
    session: Session | None = None,
) -> None:
    """Record an HA event. Inside a request pass its `session`, so the event is part of the
    request's transaction (a second writer would wait for the request's own write lock)."""
    assert kind in KINDS, kind
    if session is None:
        telemetry.record(kind, severity, message, detail=detail or {})
        return
    event = Event(kind=kind, severity=severity.value, message=message, detail=detail or {})
    session.add(event)
    session.flush()
    telemetry.broadcaster.publish(Message("event", EventRead.model_validate(event).model_dump_json()))
