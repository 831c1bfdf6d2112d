"""This node's own settings: never replicated, so a standby changes them too."""

from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, Viewer
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.ha import NodeSettings, NodeSettingsUpdate
from fulcrum.services import ha_config

router = APIRouter(prefix="/node", tags=["node"])


@router.get("", summary="This node's own settings (never replicated)")
def get_node(session: SessionDep, _: Viewer) -> NodeSettings:
    return ha_config.get_node(session)


@router.put("", summary="Replace this node's settings (fields not sent take their defaults)")
@any_node
def put_node(body: NodeSettings, session: SessionDep, _: Admin, actor: ActorDep) -> NodeSettings:
    return ha_config.set_node(session, actor, body)


@router.patch("", summary="Change some of this node's settings (fields not sent are kept)")
@any_node
def patch_node(
    body: NodeSettingsUpdate,
    session: SessionDep,
    _: Admin,
    actor: ActorDep,
) -> NodeSettings:
    return ha_config.update_node(session, actor, body)
