"""The alarm for a served certificate about to expire: an event (the alarms the dashboard and the
event stream show) 30 days ahead, critical once it has expired. Checked at start-up, every few
hours while the API runs, and right after an upload.

Each stage is raised once per certificate: the last event of the kind says which certificate and
stage it was about, so a restart does not raise it again and a new certificate starts afresh.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.models import Event
from fulcrum.models.event_kinds import EventKind
from fulcrum.schemas.telemetry import EventRead, Severity
from fulcrum.telemetry.broadcast import Message
from fulcrum.telemetry.hub import Telemetry
from fulcrum.tls.validation import CertificateInfo

EXPIRY_KIND: EventKind = "tls.certificate_expiry"
WARN_AHEAD = timedelta(days=30)
CHECK_INTERVAL_SECONDS = 6 * 3600

log = logging.getLogger(__name__)


def stage(info: CertificateInfo, now: datetime) -> tuple[str, Severity, str] | None:
    """The alarm this certificate calls for now: (stage, severity, message), or None."""
    if info.not_after <= now:
        return (
            "expired",
            Severity.CRITICAL,
            f"the dashboard's TLS certificate ({info.subject}) expired on "
            f"{info.not_after:%Y-%m-%d %H:%M} UTC",
        )
    if info.not_after - now <= WARN_AHEAD:
        days = (info.not_after - now).days
        return (
            "expiring",
            Severity.WARNING,
            (
                f"the dashboard's TLS certificate ({info.subject}) expires in {days} days, "
                f"on {info.not_after:%Y-%m-%d}: "
                "upload a renewed one (PUT /api/v1/tls/certificate)"
            ),
        )
    return None


def raise_if_due(session: Session, telemetry: Telemetry, info: CertificateInfo, now: datetime) -> None:
    """Record the alarm the served certificate calls for, unless it was already raised."""
    due = stage(info, now)
    if due is None:
        return
    name, severity, message = due
    last = session.scalars(
        select(Event).where(Event.kind == EXPIRY_KIND).order_by(Event.id.desc()).limit(1)
    ).first()
    if (
        last is not None
        and last.detail.get("fingerprint") == info.fingerprint
        and last.detail.get("stage") == name
    ):
        return
    detail = {"fingerprint": info.fingerprint, "stage": name, "not_after": info.not_after.isoformat()}
    event = Event(kind=EXPIRY_KIND, severity=severity.value, message=message, detail=detail)
    session.add(event)
    session.flush()
    telemetry.broadcaster.publish(Message("event", EventRead.model_validate(event).model_dump_json()))


async def watch(
    telemetry: Telemetry, read_served: Callable[[], CertificateInfo], interval: float = CHECK_INTERVAL_SECONDS
) -> None:
    """The periodic check, for as long as the API runs."""
    while True:
        try:
            info = await asyncio.to_thread(read_served)
            await asyncio.to_thread(_check, telemetry, info)
        except Exception:
            log.exception("checking the served TLS certificate's expiry")
        await asyncio.sleep(interval)


def _check(telemetry: Telemetry, info: CertificateInfo) -> None:
    with telemetry.session_scope() as session:
        raise_if_due(session, telemetry, info, datetime.now(UTC))
