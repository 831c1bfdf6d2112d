"""A cluster of active nodes behind BGP ECMP (/cluster): its picture, adding, draining, syncing
and removing members. Members are added on the writer; the pairing code is shown on the new
member (POST /ha/pairing-code), as for a pair."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from fulcrum.db import SessionDep, end_before_peers
from fulcrum.deps import ActorDep, Admin, ApplierDep, HaRuntimeDep, Operator, Viewer
from fulcrum.ha import cluster, cluster_bgp
from fulcrum.routers.params import NodeName
from fulcrum.schemas.cluster import (
    ClusterBgp,
    ClusterStatus,
    DrainRequest,
    JoinResult,
    MemberSyncRequest,
    RemoveResult,
)
from fulcrum.schemas.ha import MaintenanceState, PairRequest, SyncResult

router = APIRouter(prefix="/cluster", tags=["cluster"])

_MEMBER_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "No member of that name"},
    409: {"description": "The member refused or could not be asked"},
}


@router.get("", summary="Every node of the cluster: revision, sync, maintenance, share of connections")
def cluster_status(runtime: HaRuntimeDep, session: SessionDep, _: Viewer) -> ClusterStatus:
    return cluster.status(session, runtime)


@router.get(
    "/bgp",
    summary="Every node's BGP as its FRR runs it: announcing or not and why, sessions, BFD (asked now)",
)
def cluster_bgp_status(session: SessionDep, applier: ApplierDep, _: Viewer) -> ClusterBgp:
    end_before_peers(session)
    return cluster_bgp.picture(session, applier)


@router.post(
    "/members",
    summary="Add the node showing the pairing code as a member; this node's configuration replaces its own",
    responses={409: {"description": "This node cannot add members, or the node refused"},
               422: {"description": "The node is unreachable or did not accept the code"}},
)  # fmt: skip
def add_member(
    body: PairRequest, runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep
) -> JoinResult:
    end_before_peers(session)
    return cluster.join(runtime, actor, body)


@router.post("/members/{name}/drain", summary="Drain a member (it withdraws its routes) or undrain it",
             responses=_MEMBER_ERRORS)  # fmt: skip
def drain_member(
    name: NodeName, body: DrainRequest, runtime: HaRuntimeDep, session: SessionDep, _: Operator,
    actor: ActorDep,
) -> MaintenanceState:  # fmt: skip
    end_before_peers(session)
    cluster.drain(runtime, actor, name, body.enabled)
    return MaintenanceState(maintenance=body.enabled, file="")


@router.post("/members/{name}/sync", summary="Push this node's configuration to a member now",
             responses=_MEMBER_ERRORS)  # fmt: skip
def sync_member(
    name: NodeName, body: MemberSyncRequest, runtime: HaRuntimeDep, session: SessionDep, _: Operator,
    actor: ActorDep,
) -> SyncResult:  # fmt: skip
    end_before_peers(session)
    return cluster.sync_member(runtime, actor, name, body.force)


@router.delete(
    "/members/{name}",
    summary="Drain a member and forget it on both sides (force: also when it cannot be told)",
    responses=_MEMBER_ERRORS,
)
def remove_member(
    name: NodeName, runtime: HaRuntimeDep, session: SessionDep, _: Admin, actor: ActorDep,
    force: bool = False,
) -> RemoveResult:  # fmt: skip
    end_before_peers(session)
    return cluster.remove(runtime, actor, name, force)
