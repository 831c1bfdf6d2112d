"""The outbox's bookkeeping shared by the dispatcher and the channel service (which must not
import the dispatcher: it reaches up to the HA layer for the node's role)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from fulcrum.models import AlertChannel, Event

MAX_ERROR = 500


def mark_failed(session: Session, channel_id: int, error: str, now: datetime) -> None:
    """Keep a channel's last delivery error, shown with the channel."""
    row = session.get(AlertChannel, channel_id)
    if row is not None:
        row.last_error = error[:MAX_ERROR]
        row.last_error_at = now


def newest_event_id(session: Session) -> int:
    return session.scalar(select(func.max(Event.id))) or 0
