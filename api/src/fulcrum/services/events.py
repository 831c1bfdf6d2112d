"""Reading the event log (data-plane and HA events; fulcrum.telemetry records them)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.models import Event
from fulcrum.services.paging import page


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
