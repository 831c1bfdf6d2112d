"""This node's BGP announcements of the VIPs: node-local, never replicated, so every node has its own."""

from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, Viewer
from fulcrum.openapi import NOT_FOUND
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.bgp import BgpRead, BgpWrite
from fulcrum.services import bgp

router = APIRouter(prefix="/bgp", tags=["bgp"])


@router.get("", summary="This node's BGP (null: none); neighbors' passwords are never shown")
def get_bgp(session: SessionDep, _: Viewer) -> BgpRead | None:
    return bgp.get_bgp(session)


@router.put("", summary="Replace this node's BGP (a neighbor's password left out is kept; \"\" removes it)")
@any_node
def put_bgp(body: BgpWrite, session: SessionDep, _: Admin, actor: ActorDep) -> BgpRead:
    return bgp.set_bgp(session, actor, body)


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove this node's BGP (at commit FRR withdraws the VIPs and closes its sessions)",
    responses=NOT_FOUND,
)
@any_node
def delete_bgp(session: SessionDep, _: Admin, actor: ActorDep) -> None:
    bgp.remove_bgp(session, actor)
