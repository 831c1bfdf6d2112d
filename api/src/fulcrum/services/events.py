"""Reading the event log (data-plane and HA events; fulcrum.telemetry records them), and the
recorder services are given to raise their own."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.models import Event
from fulcrum.models.event_kinds import EventKind
from fulcrum.schemas.telemetry import Severity
from fulcrum.services.paging import page


class EventRecorder(Protocol):
    """Records an event and streams it once committed: the telemetry hub, a layer above the
    services (`fulcrum.telemetry.hub.Telemetry.record`), passed in by the caller."""

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
    ) -> None: ...


def list_events(
    session: Session, kind: str | None, service: str | None, since: datetime | None, limit: int, offset: int
) -> tuple[list[Event], int]:
    """Newest first."""
    query = select(Event)
    if kind:
        query = query.where(Event.kind == kind)
    if service:
        query = query.where(Event.service == service)
    if since:
        query = query.where(Event.at >= since)
    return page(session, query, Event.id.desc(), limit, offset)
