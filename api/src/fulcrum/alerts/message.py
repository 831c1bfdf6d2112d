"""An alert as the channels send it, built from an event (or a reminder, or a test)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def one_line(text: str) -> str:
    """Control characters (a CR or LF above all) become spaces: event texts carry names from the
    data plane, and no line break of theirs may start a header or a syslog record."""
    return _CONTROL.sub(" ", text).strip()


@dataclass(frozen=True)
class Alert:
    node: str
    kind: str
    severity: str  # info, warning, critical
    message: str
    at: datetime
    event_id: int | None = None  # None for a test
    service: str | None = None
    backend: str | None = None
    reminder_minutes: int | None = None  # set on a "still down after N minutes" reminder
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        text = one_line(self.message)
        if self.reminder_minutes is not None:
            text = f"still unresolved after {self.reminder_minutes} minutes: {text}"
        return text

    @property
    def subject(self) -> str:
        return one_line(f"[{self.node}] {self.severity.upper()}: {self.text}")[:250]

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "event_id": self.event_id,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.text,
            "at": self.at.isoformat(),
            "service": self.service,
            "backend": self.backend,
            "reminder": self.reminder_minutes is not None,
            "detail": self.detail,
        }
