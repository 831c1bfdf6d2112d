"""VIP groups (VRRP instances): shared configuration, edited on the writer of a pair only."""

from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, Viewer
from fulcrum.openapi import NOT_FOUND, STANDBY_REFUSAL
from fulcrum.routers.params import RowId
from fulcrum.schemas.ha import VipGroupCreate, VipGroupRead, VipGroupsList, VipGroupUpdate
from fulcrum.services import ha_config
from fulcrum.services.candidate import list_vip_groups

router = APIRouter(prefix="/vip-groups", tags=["vip-groups"], responses={**NOT_FOUND, **STANDBY_REFUSAL})


@router.get("", summary="List VIP groups (VRRP instances)")
def list_groups(session: SessionDep, _: Viewer) -> VipGroupsList:
    rows = list_vip_groups(session)
    return VipGroupsList(data=[VipGroupRead.model_validate(r) for r in rows], count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, summary="Create a VIP group")
def create_group(
    body: VipGroupCreate,
    session: SessionDep,
    _: Admin,
    actor: ActorDep,
) -> VipGroupRead:
    return VipGroupRead.model_validate(ha_config.create_vip_group(session, actor, body))


@router.patch("/{group_id}", summary="Change a VIP group")
def update_group(
    group_id: RowId,
    body: VipGroupUpdate,
    session: SessionDep,
    _: Admin,
    actor: ActorDep,
) -> VipGroupRead:
    return VipGroupRead.model_validate(ha_config.update_vip_group(session, actor, group_id, body))


@router.delete("/{group_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a VIP group")
def delete_group(group_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    ha_config.delete_vip_group(session, actor, group_id)
