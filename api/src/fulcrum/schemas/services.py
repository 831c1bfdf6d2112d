"""Request and response shapes for services and backends.

Create/update shapes are derived from the snapshot models (fulcrum.config.snapshot), so a field is
validated the same way whether it arrives over the API, from a peer or from a revision.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fulcrum.config import snapshot
from fulcrum.schemas._partial import derived_model

BackendCreate = derived_model("BackendCreate", snapshot.Backend)
BackendUpdate = derived_model("BackendUpdate", snapshot.Backend, optional=True)
ServiceCreate = derived_model(
    "ServiceCreate",
    snapshot.Service,
    exclude={"fwmark", "backends"},
    backends=(list[BackendCreate], Field(default_factory=list, max_length=10_000)),
)
ServiceUpdate = derived_model(
    "ServiceUpdate", snapshot.Service, exclude={"fwmark", "backends"}, optional=True
)


class _ReadBase(BaseModel):
    model_config = ConfigDict(from_attributes=True)


BackendRead = derived_model(
    "BackendRead", snapshot.Backend, base=_ReadBase, id=(int, ...), service_id=(int, ...)
)
ServiceRead = derived_model(
    "ServiceRead",
    snapshot.Service,
    exclude={"backends"},
    base=_ReadBase,
    id=(int, ...),
    backends=(list[BackendRead], ...),
)


class ServicesList(BaseModel):
    data: list[ServiceRead]
    count: int


class BackendsList(BaseModel):
    data: list[BackendRead]
    count: int
