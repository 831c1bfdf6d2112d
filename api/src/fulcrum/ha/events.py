"""HA events, stored and streamed like the data plane's, through the telemetry hub."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from fulcrum.models.event_kinds import HA_KINDS, EventKind
from fulcrum.schemas.telemetry import Severity
from fulcrum.telemetry.hub import Telemetry


def emit(
    telemetry: Telemetry,
    kind: EventKind,
    severity: Severity,
    message: str,
    detail: dict[str, Any] | None = None,
    session: Session | None = None,
) -> None:
    """Record an HA event (`Telemetry.record`: inside a request pass its `session`)."""
    assert kind in HA_KINDS, kind
    telemetry.record(kind, severity, message, detail=detail, session=session)
