"""HA events, stored and streamed like the data plane's, through the telemetry hub."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from fulcrum.schemas.telemetry import Severity
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
    """Record an HA event (`Telemetry.record`: inside a request pass its `session`)."""
    assert kind in KINDS, kind
    telemetry.record(kind, severity, message, detail=detail, session=session)
