"""The peer-to-peer endpoints of an HA pair. Every one but /peer/pair needs a request signed with
the pair key (fulcrum.ha.peer_auth); the answers are signed too (fulcrum.ha.asgi). Not part of
the public API schema: only the other node calls these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from fulcrum.apply.result import BgpView
from fulcrum.db import SessionDep, begin_write, end_before_peers, end_read, writes_late
from fulcrum.deps import ApplierDep, CommitLock, HaRuntimeDep, SettingsDep, client_address
from fulcrum.errors import Forbidden, NotFound, Unauthorized
from fulcrum.ha import (
    cluster,
    cluster_bgp,
    failback,
    handover,
    membership,
    peer_firmware,
    replication,
    view,
    wire,
)
from fulcrum.ha.asgi import STATE_KEY
from fulcrum.ha.nonces import StoredNonces
from fulcrum.ha.pairing import current_pairing
from fulcrum.ha.peer_auth import (
    NODE,
    PeerAuthError,
    SignedHeaders,
    check_signature,
    declared_content_sha256,
    verify_request,
)
from fulcrum.models.ha import ClusterMember
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import MiB
from fulcrum.schemas.cluster import ClusterBgp, ClusterStatus
from fulcrum.schemas.firmware import FirmwareBundle, FirmwareStatus
from fulcrum.schemas.ha import MaintenanceState
from fulcrum.services import audit, bgp, firmware, firmware_upgrade
from fulcrum.services.ha_config import get_node

router = APIRouter(prefix="/peer", tags=["peer"], include_in_schema=False)


async def _raw_body(request: Request) -> bytes:
    return await request.body()


@dataclass(frozen=True)
class Caller:
    node: str
    actor: audit.Actor
    member: bool = False  # a member of the cluster this node leads (fulcrum.ha.cluster)


# What a cluster's member may ask its writer, by endpoint: its status (the member's watcher), the
# cluster's picture (the member's dashboard), and to be forgotten (the member left: unpaired there).
# Nothing that changes the writer's configuration or state.
MEMBER_MAY_CALL = frozenset({"peer_status", "cluster_picture", "cluster_bgp_picture", "unpair"})


def _peer_key(session: SessionDep, request: Request) -> tuple[bytes, bool]:
    """The key the request must be signed with, and whether the caller is a cluster member: the
    pair key; on a cluster's writer, the key of the member the request names (its signature then
    proves the name)."""
    pairing = current_pairing(session)
    if pairing is not None:
        return bytes.fromhex(pairing.key), False
    name = request.headers.get(NODE.lower(), "")
    member = session.scalar(select(ClusterMember).where(ClusterMember.name == name)) if name else None
    if member is None:
        raise Unauthorized("peer request refused: this node is not paired")
    return bytes.fromhex(member.key), True


def _signed_path(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def _caller(request: Request, key: bytes, signed: SignedHeaders, member: bool) -> Caller:
    setattr(request.state, STATE_KEY, (key, signed.nonce))  # the answer is signed with the same key
    if member and getattr(request.scope.get("endpoint"), "__name__", None) not in MEMBER_MAY_CALL:
        raise Forbidden(
            f"{signed.node} is a member of this node's cluster: it may only read the writer's status"
        )
    actor = audit.Actor(username=f"peer:{signed.node}", source=client_address(request))
    return Caller(signed.node, actor, member)


def signed_by_peer(
    request: Request, session: SessionDep, body: Annotated[bytes, Depends(_raw_body)]
) -> Caller:
    begin_write(session)  # a GET too: its nonce is stored (a no-op where the request already writes)
    key, member = _peer_key(session, request)
    try:
        signed = verify_request(
            key, StoredNonces(session), request.method, _signed_path(request), dict(request.headers), body
        )
    except PeerAuthError as error:
        raise Unauthorized(f"peer request refused: {error}") from None
    return _caller(request, key, signed, member)


Peer = Annotated[Caller, Depends(signed_by_peer)]


@dataclass(frozen=True)
class StreamCaller:
    caller: Caller
    signed: SignedHeaders
    content_sha256: str  # declared by the peer and covered by its signature


def streamed_by_peer(request: Request, session: SessionDep) -> StreamCaller:
    """A request whose body is too large to hold (a firmware bundle): its signature is checked here
    against the SHA-256 the peer declares, before the body is read; the body and the nonce are
    checked once the body is in (fulcrum.ha.peer_firmware)."""
    key, member = _peer_key(session, request)
    headers = dict(request.headers)
    try:
        declared = declared_content_sha256(headers)
        signed = check_signature(key, request.method, _signed_path(request), headers, declared)
    except PeerAuthError as error:
        raise Unauthorized(f"peer request refused: {error}") from None
    return StreamCaller(_caller(request, key, signed, member), signed, declared)


PeerStream = Annotated[StreamCaller, Depends(streamed_by_peer)]


@router.post("/pair", summary="B's half of pairing: answer A's offer if it proves the code")
@any_node
def pair(body: wire.Offer, request: Request, session: SessionDep, runtime: HaRuntimeDep) -> wire.Answer:
    return membership.answer_offer(session, runtime, body, client_address(request))


@router.delete("/pair", status_code=status.HTTP_204_NO_CONTENT, summary="The peer unpaired")
@any_node
def unpair(caller: Peer, session: SessionDep, runtime: HaRuntimeDep) -> Response:
    if caller.member:
        cluster.left(session, runtime, caller.actor, caller.node)
    else:
        membership.unpaired_by_peer(session, runtime, caller.actor)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/status", summary="This node's HA state, for the peer's watcher")
def peer_status(_: Peer, session: SessionDep, runtime: HaRuntimeDep) -> wire.PeerStatus:
    return view.peer_status(session, runtime)


@router.post(
    "/cluster",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="The writer just paired with makes this node a member",
)
@any_node
def join_cluster(
    body: wire.ClusterMembership, caller: Peer, session: SessionDep, runtime: HaRuntimeDep
) -> Response:
    cluster.joined(session, runtime, caller.actor, body.writer)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/cluster", summary="The writer's picture of its cluster, for a member's dashboard")
def cluster_picture(_: Peer, session: SessionDep, runtime: HaRuntimeDep) -> ClusterStatus:
    return cluster.status(session, runtime)


@router.get("/cluster/bgp", summary="Every cluster node's BGP, asked by the writer, for a member's dashboard")
def cluster_bgp_picture(_: Peer, session: SessionDep, applier: ApplierDep) -> ClusterBgp:
    end_before_peers(session)
    return cluster_bgp.picture(session, applier)


@router.get("/bgp", summary="This node's BGP as its FRR runs it, for the writer's Cluster page")
def peer_bgp(_: Peer, applier: ApplierDep) -> BgpView:
    return bgp.live_view(applier)


@router.get("/connections", summary="This node's ESTABLISHED connections, for a returning peer's fail-back")
def established_connections(_: Peer, settings: SettingsDep) -> wire.EstablishedConnections:
    return failback.established_here(settings.ipvs_conn_file)


@router.get("/config", summary="This node's head revision's shared configuration and users")
def get_config(_: Peer, session: SessionDep) -> wire.ConfigPush:
    payload = replication.outgoing(session, get_node(session).name)
    if payload is None:
        raise NotFound("this node has no committed configuration")
    return payload


# The whole shared configuration and every user in one body.
@router.post("/config", summary="Take the peer's shared configuration if it is ahead", max_body_size=64 * MiB)
@any_node
def receive_config(
    _lock: CommitLock,
    body: wire.ConfigPush,
    caller: Peer,
    session: SessionDep,
    runtime: HaRuntimeDep,
    applier: ApplierDep,
) -> wire.ConfigReply:
    return replication.accept(session, runtime, applier, body, caller.actor.source)


@router.post(
    "/certificate",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="The peer renewed its certificate: pin the new one",
)
@any_node
def certificate(
    body: wire.CertificateAnnouncement, caller: Peer, session: SessionDep, runtime: HaRuntimeDep
) -> Response:
    membership.peer_certificate_renewed(session, runtime, caller.actor, body.certificate)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/maintenance", summary="Enter or leave maintenance because the peer asks (make-active)")
@any_node
def maintenance(
    body: wire.MaintenanceOrder, caller: Peer, session: SessionDep, runtime: HaRuntimeDep
) -> MaintenanceState:
    reason = body.reason or f"asked by {caller.node}"
    return handover.set_maintenance(session, runtime, caller.actor, body.enabled, reason)


# --- the pair upgrade: the active node upgrades this one first (fulcrum.ha.pair_upgrade) ---------


@router.post(
    "/firmware/bundle",
    status_code=status.HTTP_201_CREATED,
    summary="Take the peer's firmware bundle (streamed), checked like an upload, to install",
    max_body_size=firmware.MAX_BUNDLE_BODY,
)
@writes_late  # minutes of streaming: no database lock is held meanwhile
@any_node
async def receive_bundle(
    request: Request, stream: PeerStream, session: SessionDep, settings: SettingsDep
) -> FirmwareBundle:
    firmware.rauc_system(settings)  # a node that cannot install one takes nothing
    firmware_upgrade.refuse_while_installing(settings, "send another")
    end_read(session)
    upload = await firmware.receive(request.stream(), request.headers.get("content-length"), settings)
    return await run_in_threadpool(
        peer_firmware.accept_streamed_bundle,
        session,
        stream.caller.actor,
        settings,
        stream.signed,
        stream.content_sha256,
        upload,
    )


@router.get("/firmware", summary="This node's slots, waiting bundle, install and last upgrade, for the peer")
def peer_firmware_status(_: Peer, settings: SettingsDep) -> FirmwareStatus:
    return firmware_upgrade.status(settings)


@router.post(
    "/firmware/install",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Install the waiting bundle into the slot that is not running, as the peer asks",
)
@any_node
def peer_install(caller: Peer, session: SessionDep, settings: SettingsDep) -> FirmwareStatus:
    return firmware_upgrade.start_install(session, caller.actor, settings)


@router.post(
    "/firmware/reboot",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Restart into the installed slot, as the peer asks",
)
@any_node
def peer_reboot(caller: Peer, session: SessionDep, settings: SettingsDep, applier: ApplierDep) -> Response:
    firmware_upgrade.reboot(session, caller.actor, applier, settings)
    return Response(status_code=status.HTTP_202_ACCEPTED)
