"""The HA pair (/ha): status, pairing, sync, conflicts, maintenance, hand-over, drills and the
pair's upgrade."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from fulcrum.db import SessionDep, end_before_peers
from fulcrum.deps import ActorDep, Admin, ApplierDep, HaRuntimeDep, Operator, Viewer
from fulcrum.ha import handover, membership, pair_upgrade, replication, view
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.ha import (
    DrillResult,
    HaDiff,
    HaStatus,
    MaintenanceRequest,
    MaintenanceState,
    MakeActiveResult,
    PairingCode,
    PairRequest,
    PairResult,
    PairUpgradeStatus,
    ResolveRequest,
    SyncResult,
    UnpairResult,
)

router = APIRouter(prefix="/ha", tags=["ha"])

_PEER_ERRORS: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not paired, or the peer refused or could not be asked"}
}


@router.get(
    "/status",
    summary="This node's and the peer's roles, config sync, connection sync, split brain, transitions",
)
def ha_status(runtime: HaRuntimeDep, session: SessionDep, _: Viewer) -> HaStatus:
    return view.ha_status(session, runtime)


@router.post(
    "/pairing-code",
    status_code=status.HTTP_201_CREATED,
    summary="Show a one-time code for pairing (on node B)",
    responses=_PEER_ERRORS,
)
@any_node
def pairing_code(session: SessionDep, _: Admin, actor: ActorDep) -> PairingCode:
    code, expires = membership.issue_code(session, actor)
    return PairingCode(code=code, expires_at=expires)


@router.post(
    "/pair",
    summary="Pair with the node showing the code (on node A); this node's configuration then "
    "replaces the peer's",
    responses={**_PEER_ERRORS, 422: {"description": "The peer is unreachable or did not accept the code"}},
)
@any_node
def pair(
    body: PairRequest, runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep
) -> PairResult:
    end_before_peers(session)
    return membership.pair_with(runtime, actor, body)


@router.delete("/pair", summary="Unpair (tells the peer too, if it answers)", responses=_PEER_ERRORS)
@any_node
def unpair(runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep) -> UnpairResult:
    end_before_peers(session)
    return UnpairResult(peer=membership.unpair(runtime, actor))


@router.post(
    "/sync",
    summary="Push this node's configuration to the peer now (if the peer is behind)",
    responses=_PEER_ERRORS,
)
@any_node
def sync_now(runtime: HaRuntimeDep, session: SessionDep, _: Operator, actor: ActorDep) -> SyncResult:
    end_before_peers(session)
    return replication.sync_now(runtime, actor)


@router.post(
    "/resolve",
    summary="End a conflict: this node's configuration wins (local) or the peer's (peer)",
    responses=_PEER_ERRORS,
)
@any_node
def resolve(
    body: ResolveRequest,
    runtime: HaRuntimeDep,
    session: SessionDep,
    _: Admin,
    actor: ActorDep,
    applier: ApplierDep,
) -> SyncResult:
    end_before_peers(session)
    return replication.resolve(runtime, applier, actor, body.winner)


@router.get(
    "/diff",
    summary="Unified diff of the shared configuration and users: this node against the peer",
    responses=_PEER_ERRORS,
)
def ha_diff(runtime: HaRuntimeDep, _: Viewer) -> HaDiff:
    return replication.diff(runtime)


@router.post("/maintenance", summary="Enter or leave maintenance: the VIPs move to the peer at once")
@any_node
def maintenance(
    body: MaintenanceRequest, runtime: HaRuntimeDep, session: SessionDep, _: Operator, actor: ActorDep
) -> MaintenanceState:
    return handover.set_maintenance(session, runtime, actor, body.enabled, "")


@router.post(
    "/make-active",
    summary="Make this (standby) node active: the peer steps down until this node is MASTER",
    responses={**_PEER_ERRORS, 504: {"description": "This node did not become MASTER in time"}},
)
@any_node
def make_active(runtime: HaRuntimeDep, session: SessionDep, _: Operator, actor: ActorDep) -> MakeActiveResult:
    end_before_peers(session)
    return handover.make_active(runtime, actor)


@router.post(
    "/drill",
    summary="Failover drill from the active node: step down, time the peer's takeover, probe the VIPs",
    responses=_PEER_ERRORS,
)
@any_node
def failover_drill(runtime: HaRuntimeDep, session: SessionDep, _: Operator, actor: ActorDep) -> DrillResult:
    end_before_peers(session)
    return handover.drill(runtime, actor)


@router.get("/upgrade", summary="The pair upgrade this node drove or drives, step by step (null: none)")
def pair_upgrade_status(runtime: HaRuntimeDep, _: Viewer) -> PairUpgradeStatus:
    return pair_upgrade.status(runtime)


@router.post(
    "/upgrade",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Upgrade both nodes to the bundle waiting on this (active) node, with one failover",
    description="The standby first (the bundle sent, installed, restarted into, found good and back in "
    "sync), then this node (installed, the VIPs handed over, restarted into, rejoining as the standby). "
    "Answers once the pair was found ready; GET /ha/upgrade follows the steps.",
    responses={
        409: {
            "description": "Not the active node, the standby not ready or not in sync, no bundle waiting, or "
            "an upgrade running already"
        }
    },
)
def start_pair_upgrade(
    runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep
) -> PairUpgradeStatus:
    end_before_peers(session)
    return pair_upgrade.start(runtime, actor)


@router.post(
    "/upgrade/stop",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Stop the pair upgrade this node drives, at its next step",
    description="The driver stops within seconds, between two of its checks: an action under way (the "
    "bundle streaming, an install, a restart) runs to its end. After the hand-over this node leaves "
    "maintenance again. GET /ha/upgrade shows the record stopped, with which node has the new version "
    "installed to boot at its next restart. Allowed on the standby: after the hand-over the node that "
    "drives the upgrade is one.",
    responses={409: {"description": "No pair upgrade runs on this node (the peer's is stopped on the peer)"}},
)
@any_node
def stop_pair_upgrade(
    runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep
) -> PairUpgradeStatus:
    end_before_peers(session)
    return pair_upgrade.request_stop(runtime, actor)
