from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, Viewer
from fulcrum.schemas.ha import (
    FirewallSettings,
    NodeSettings,
    VipGroupCreate,
    VipGroupRead,
    VipGroupsList,
    VipGroupUpdate,
)
from fulcrum.services import ha_config
from fulcrum.services.candidate import list_vip_groups

vip_groups = APIRouter(prefix="/vip-groups", tags=["vip-groups"])
node = APIRouter(prefix="/node", tags=["node"])
firewall = APIRouter(prefix="/firewall", tags=["firewall"])


@vip_groups.get("", summary="List VIP groups (VRRP instances)")
def list_groups(session: SessionDep, _: Viewer) -> VipGroupsList:
    rows = list_vip_groups(session)
    return VipGroupsList(data=[VipGroupRead.model_validate(r) for r in rows], count=len(rows))


@vip_groups.post("", status_code=status.HTTP_201_CREATED, summary="Create a VIP group")
def create_group(body: VipGroupCreate, session: SessionDep, _: Admin, actor: ActorDep) -> VipGroupRead:  # type: ignore[valid-type]
    return VipGroupRead.model_validate(ha_config.create_vip_group(session, actor, body))


@vip_groups.patch("/{group_id}", summary="Change a VIP group")
def update_group(group_id: int, body: VipGroupUpdate, session: SessionDep, _: Admin, actor: ActorDep) -> VipGroupRead:  # type: ignore[valid-type]
    return VipGroupRead.model_validate(ha_config.update_vip_group(session, actor, group_id, body))


@vip_groups.delete("/{group_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a VIP group")
def delete_group(group_id: int, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    ha_config.delete_vip_group(session, actor, group_id)


@node.get("", summary="This node's own settings (never replicated)")
def get_node(session: SessionDep, _: Viewer) -> NodeSettings:
    return ha_config.get_node(session)


@node.put("", summary="Replace this node's settings")
def put_node(body: NodeSettings, session: SessionDep, _: Admin, actor: ActorDep) -> NodeSettings:
    return ha_config.set_node(session, actor, body)


@firewall.get("", summary="Management access policy")
def get_firewall(session: SessionDep, _: Viewer) -> FirewallSettings:
    return ha_config.get_firewall(session)


@firewall.put("", summary="Replace the management access policy (commit it with a confirmation deadline)")
def put_firewall(body: FirewallSettings, session: SessionDep, _: Admin, actor: ActorDep) -> FirewallSettings:
    return ha_config.set_firewall(session, actor, body)
