"""This node's BGP announcements of the VIPs: node-local, never replicated, so every node has its own."""

from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.apply.result import BgpView
from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, ApplierDep, Viewer
from fulcrum.openapi import NOT_FOUND, error
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.bgp import BgpRead, BgpWrite
from fulcrum.services import bgp

router = APIRouter(prefix="/bgp", tags=["bgp"])


@router.get("", summary="This node's BGP (null: none); neighbors' passwords are never shown")
def get_bgp(session: SessionDep, _: Viewer) -> BgpRead | None:
    return bgp.get_bgp(session)


@router.get(
    "/status",
    summary="This node's BGP as FRR runs it: announcing or not and why, originated prefixes, sessions",
    responses={503: error("The apply helper, which asks FRR, cannot be reached now")},
)
def get_bgp_status(_: Viewer, applier: ApplierDep) -> BgpView:
    return bgp.live_view(applier)


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
