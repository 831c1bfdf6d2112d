from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, status
from sqlalchemy.orm import Session

from fulcrum.db import SessionDep
from fulcrum.openapi import NOT_FOUND, STANDBY_REFUSAL
from fulcrum.routers.params import RowId
from fulcrum.deps import ActorDep, Admin, ApplierDep, Operator, Viewer
from fulcrum.ha import handover, membership, replication, view
from fulcrum.ha.guard import require_writer
from fulcrum.ha.runtime import HaRuntime
from fulcrum.schemas.ha import (
    DrillResult,
    FirewallSettings,
    HaDiff,
    HaStatus,
    MaintenanceRequest,
    MaintenanceState,
    MakeActiveResult,
    NodeSettings,
    NodeSettingsUpdate,
    PairingCode,
    PairRequest,
    PairResult,
    ResolveRequest,
    SyncResult,
    UnpairResult,
    VipGroupCreate,
    VipGroupRead,
    VipGroupsList,
    VipGroupUpdate,
)
from fulcrum.services import ha_config
from fulcrum.services.candidate import list_vip_groups

# VIP groups and the firewall are shared configuration: only the writer of a pair edits them.
vip_groups = APIRouter(prefix="/vip-groups", tags=["vip-groups"], dependencies=[Depends(require_writer)], responses={**NOT_FOUND, **STANDBY_REFUSAL})
node = APIRouter(prefix="/node", tags=["node"])
firewall = APIRouter(prefix="/firewall", tags=["firewall"], dependencies=[Depends(require_writer)], responses=STANDBY_REFUSAL)


@vip_groups.get("", summary="List VIP groups (VRRP instances)")
def list_groups(session: SessionDep, _: Viewer) -> VipGroupsList:
    rows = list_vip_groups(session)
    return VipGroupsList(data=[VipGroupRead.model_validate(r) for r in rows], count=len(rows))


@vip_groups.post("", status_code=status.HTTP_201_CREATED, summary="Create a VIP group")
def create_group(body: VipGroupCreate, session: SessionDep, _: Admin, actor: ActorDep) -> VipGroupRead:
    return VipGroupRead.model_validate(ha_config.create_vip_group(session, actor, body))


@vip_groups.patch("/{group_id}", summary="Change a VIP group")
def update_group(group_id: RowId, body: VipGroupUpdate, session: SessionDep, _: Admin, actor: ActorDep) -> VipGroupRead:
    return VipGroupRead.model_validate(ha_config.update_vip_group(session, actor, group_id, body))


@vip_groups.delete("/{group_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a VIP group")
def delete_group(group_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    ha_config.delete_vip_group(session, actor, group_id)


@node.get("", summary="This node's own settings (never replicated)")
def get_node(session: SessionDep, _: Viewer) -> NodeSettings:
    return ha_config.get_node(session)


@node.put("", summary="Replace this node's settings (fields not sent take their defaults)")
def put_node(body: NodeSettings, session: SessionDep, _: Admin, actor: ActorDep) -> NodeSettings:
    return ha_config.set_node(session, actor, body)


@node.patch("", summary="Change some of this node's settings (fields not sent are kept)")
def patch_node(body: NodeSettingsUpdate, session: SessionDep, _: Admin, actor: ActorDep) -> NodeSettings:
    return ha_config.update_node(session, actor, body)


@firewall.get("", summary="Management access policy")
def get_firewall(session: SessionDep, _: Viewer) -> FirewallSettings:
    return ha_config.get_firewall(session)


@firewall.put("", summary="Replace the management access policy (commit it with a confirmation deadline)")
def put_firewall(body: FirewallSettings, session: SessionDep, _: Admin, actor: ActorDep) -> FirewallSettings:
    return ha_config.set_firewall(session, actor, body)


# --- the HA pair (/ha) --------------------------------------------------------------------------

pair_router = APIRouter(prefix="/ha", tags=["ha"])

_PEER_ERRORS: dict[int | str, dict[str, Any]] = {409: {"description": "Not paired, or the peer refused or could not be asked"}}


def _runtime(request: Request) -> HaRuntime:
    return request.app.state.ha


def _release(session: Session) -> None:
    """End the request's (empty) write transaction: what follows talks to the peer, which can
    take seconds, and writes in short transactions of its own."""
    session.commit()


@pair_router.get("/status", summary="This node's and the peer's roles, config sync, connection sync, split brain, transitions")
def ha_status(request: Request, session: SessionDep, _: Viewer) -> HaStatus:
    return view.ha_status(session, _runtime(request))


@pair_router.post("/pairing-code", status_code=status.HTTP_201_CREATED, summary="Show a one-time code for pairing (on node B)", responses=_PEER_ERRORS)
def pairing_code(session: SessionDep, _: Admin, actor: ActorDep) -> PairingCode:
    code, expires = membership.issue_code(session, actor)
    return PairingCode(code=code, expires_at=expires)


@pair_router.post(
    "/pair",
    summary="Pair with the node showing the code (on node A); this node's configuration then " "replaces the peer's",
    responses={**_PEER_ERRORS, 422: {"description": "The peer is unreachable or did not accept the code"}},
)
def pair(body: PairRequest, request: Request, session: SessionDep, _: Admin, actor: ActorDep) -> PairResult:
    _release(session)
    return membership.pair_with(_runtime(request), actor, body)


@pair_router.delete("/pair", summary="Unpair (tells the peer too, if it answers)", responses=_PEER_ERRORS)
def unpair(request: Request, session: SessionDep, _: Admin, actor: ActorDep) -> UnpairResult:
    _release(session)
    return UnpairResult(peer=membership.unpair(_runtime(request), actor))


@pair_router.post("/sync", summary="Push this node's configuration to the peer now (if the peer is behind)", responses=_PEER_ERRORS)
def sync_now(request: Request, session: SessionDep, _: Operator, actor: ActorDep) -> SyncResult:
    _release(session)
    return replication.sync_now(_runtime(request), actor)


@pair_router.post("/resolve", summary="End a conflict: this node's configuration wins (local) or the peer's (peer)", responses=_PEER_ERRORS)
def resolve(body: ResolveRequest, request: Request, session: SessionDep, _: Admin, actor: ActorDep, applier: ApplierDep) -> SyncResult:
    _release(session)
    return replication.resolve(_runtime(request), applier, actor, body.winner)


@pair_router.get("/diff", summary="Unified diff of the shared configuration and users: this node against the peer", responses=_PEER_ERRORS)
def ha_diff(request: Request, _: Viewer) -> HaDiff:
    return replication.diff(_runtime(request))


@pair_router.post("/maintenance", summary="Enter or leave maintenance: the VIPs move to the peer at once")
def maintenance(body: MaintenanceRequest, request: Request, session: SessionDep, _: Operator, actor: ActorDep) -> MaintenanceState:
    return handover.set_maintenance(session, _runtime(request), actor, body.enabled, "")


@pair_router.post(
    "/make-active",
    summary="Make this (standby) node active: the peer steps down until this node is MASTER",
    responses={**_PEER_ERRORS, 504: {"description": "This node did not become MASTER in time"}},
)
def make_active(request: Request, session: SessionDep, _: Operator, actor: ActorDep) -> MakeActiveResult:
    _release(session)
    return handover.make_active(_runtime(request), actor)


@pair_router.post("/drill", summary="Failover drill from the active node: step down, time the peer's takeover, probe the VIPs", responses=_PEER_ERRORS)
def failover_drill(request: Request, session: SessionDep, _: Operator, actor: ActorDep) -> DrillResult:
    _release(session)
    return handover.drill(_runtime(request), actor)
