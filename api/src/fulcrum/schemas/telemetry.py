"""Live state flowing back up: IPVS statistics, their history, and data-plane events."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Rates(BaseModel):
    """Kernel counters (totals since the entry was added) and rate estimates (per second)."""

    conns: int
    activeconns: int
    inactconns: int
    inbytes: int
    outbytes: int
    inpkts: int
    outpkts: int
    cps: int
    inbps: int
    outbps: int
    inpps: int
    outpps: int


class BackendState(StrEnum):
    UP = "up"  # in IPVS with its configured weight
    DOWN = "down"  # its health check failed: removed, or held at weight 0
    DRAINED = "drained"  # configured weight 0: existing connections finish
    DISABLED = "disabled"  # in maintenance: not in IPVS by configuration
    UNKNOWN = "unknown"  # no data plane to ask


class BackendIssue(BaseModel):
    code: str  # vip_missing | vip_port_closed | not_on_link
    message: str


class BackendStats(BaseModel):
    address: str
    port: int | None
    endpoint: str  # "198.51.100.1:80": the key used by history and events
    configured_weight: int
    kernel_weight: int | None  # None: not in IPVS
    state: BackendState
    counters: Rates | None
    # Problems its health check cannot see, e.g. a DR backend without the VIP (code vip_missing).
    warnings: list[BackendIssue] = Field(default_factory=list)


class ServiceStats(BaseModel):
    name: str
    key: str  # how IPVS names it, e.g. "tcp 192.0.2.10:80"
    in_kernel: bool
    counters: Rates | None
    backends: list[BackendStats]
    backends_up: int
    backends_total: int  # enabled backends


class StatsSnapshot(BaseModel):
    at: datetime
    ipvs_available: bool
    detail: str
    revision: int | None  # the running revision these services come from
    services: list[ServiceStats]


class SeriesPoint(BaseModel):
    t: datetime
    cps: float
    activeconns: float
    inactconns: float
    inbps: float
    outbps: float
    inpps: float
    outpps: float


class Series(BaseModel):
    service: str
    backend: str | None
    range: Literal["5m", "1h", "24h"]
    resolution_seconds: int  # a gap longer than 2.5× this is missing data: draw a break
    points: list[SeriesPoint]


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class EventRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    at: datetime
    kind: str
    severity: Severity
    service: str | None
    backend: str | None
    message: str
    detail: dict[str, Any]


class EventsList(BaseModel):
    data: list[EventRead]
    count: int
