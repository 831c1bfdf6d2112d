"""The peer-to-peer endpoints of an HA pair. Every one but /peer/pair needs a request signed with
the pair key (fulcrum.ha.peer_auth); the answers are signed too (fulcrum.ha.asgi). Not part of
the public API schema: only the other node calls these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status

from fulcrum.db import SessionDep, begin_write
from fulcrum.deps import ApplierDep, CommitLock, HaRuntimeDep, client_address
from fulcrum.errors import NotFound, Unauthorized
from fulcrum.ha import handover, membership, replication, view, wire
from fulcrum.ha.asgi import STATE_KEY
from fulcrum.ha.nonces import StoredNonces
from fulcrum.ha.pairing import current_pairing
from fulcrum.ha.peer_auth import PeerAuthError, verify_request
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import MiB
from fulcrum.schemas.ha import MaintenanceState
from fulcrum.services import audit
from fulcrum.services.ha_config import get_node

router = APIRouter(prefix="/peer", tags=["peer"], include_in_schema=False)


async def _raw_body(request: Request) -> bytes:
    return await request.body()


@dataclass(frozen=True)
class Caller:
    node: str
    actor: audit.Actor


def signed_by_peer(
    request: Request, session: SessionDep, body: Annotated[bytes, Depends(_raw_body)]
) -> Caller:
    begin_write(session)  # a GET too: its nonce is stored (a no-op where the request already writes)
    pairing = current_pairing(session)
    if pairing is None:
        raise Unauthorized("peer request refused: this node is not paired")
    key = bytes.fromhex(pairing.key)
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    try:
        signed = verify_request(key, StoredNonces(session), request.method, path, dict(request.headers), body)
    except PeerAuthError as error:
        raise Unauthorized(f"peer request refused: {error}") from None
    setattr(request.state, STATE_KEY, (key, signed.nonce))
    return Caller(signed.node, audit.Actor(username=f"peer:{signed.node}", source=client_address(request)))


Peer = Annotated[Caller, Depends(signed_by_peer)]


@router.post("/pair", summary="B's half of pairing: answer A's offer if it proves the code")
@any_node
def pair(body: wire.Offer, request: Request, session: SessionDep, runtime: HaRuntimeDep) -> wire.Answer:
    return membership.answer_offer(session, runtime, body, client_address(request))


@router.delete("/pair", status_code=status.HTTP_204_NO_CONTENT, summary="The peer unpaired")
@any_node
def unpair(caller: Peer, session: SessionDep, runtime: HaRuntimeDep) -> Response:
    membership.unpaired_by_peer(session, runtime, caller.actor)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/status", summary="This node's HA state, for the peer's watcher")
def peer_status(_: Peer, session: SessionDep, runtime: HaRuntimeDep) -> wire.PeerStatus:
    return view.peer_status(session, runtime)


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
