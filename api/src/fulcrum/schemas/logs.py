"""System → Logs: the journal of the appliance's own units and the kernel."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel


class LogSource(StrEnum):
    """The journals a client may ask for: a fixed allow-list, mapped to unit names by the service."""

    KEEPALIVED = "keepalived"
    API = "api"
    APPLYD = "applyd"
    FIREWALL = "firewall"
    NETWORKING = "networking"
    KERNEL = "kernel"


class LogEntry(BaseModel):
    time: datetime
    source: str  # a LogSource, or the journal's unit name for an entry outside the allow-list
    priority: int  # syslog priority: 0 emergency … 7 debug
    message: str
    pid: int | None = None
    cursor: str


class LogPage(BaseModel):
    available: bool
    reason: str | None = None  # why not, when there is no journal on this node
    entries: list[LogEntry]
    # Pass as `before` for the next, older page; None when this page reached the oldest entry.
    older_cursor: str | None = None
