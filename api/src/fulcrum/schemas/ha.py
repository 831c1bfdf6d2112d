"""VIP groups, node-local settings and the management firewall policy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fulcrum.config import snapshot
from fulcrum.schemas._partial import derived_model

VipGroupCreate = derived_model("VipGroupCreate", snapshot.VipGroup)
VipGroupUpdate = derived_model("VipGroupUpdate", snapshot.VipGroup, optional=True)


class _ReadBase(BaseModel):
    model_config = ConfigDict(from_attributes=True)


VipGroupRead = derived_model("VipGroupRead", snapshot.VipGroup, base=_ReadBase, id=(int, ...))


class VipGroupsList(BaseModel):
    data: list[VipGroupRead]  # type: ignore[valid-type]
    count: int


NodeSettings = snapshot.Node
FirewallSettings = snapshot.Firewall
