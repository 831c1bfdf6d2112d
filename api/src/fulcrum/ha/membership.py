"""Pairing and unpairing, as the operator (on A) and the peer (B) see them."""

from __future__ import annotations

import logging
import socket
from dataclasses import asdict, dataclass
from datetime import datetime
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.db import begin_write
from fulcrum.errors import ConfigInvalid, Conflict, TooManyRequests, Unauthorized
from fulcrum.ha import events, pairing, replication, tls, wire
from fulcrum.ha.peer_client import PeerError, response_detail
from fulcrum.ha.runtime import HaRuntime
from fulcrum.models.ha import ClusterMember
from fulcrum.schemas.ha import PairRequest, PairResult
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit
from fulcrum.services.ha_config import get_node

PAIR_TIMEOUT = 10.0

log = logging.getLogger(__name__)


class PairingRejected(Unauthorized):
    """A wrong code: answered 401, and the failed try is counted (committed) all the same."""

    keep_changes = True


def _invalid(field: str, message: str) -> ConfigInvalid:
    return ConfigInvalid([{"loc": ["body", field], "msg": message, "type": "value_error"}])


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def default_local_url(peer_url: str) -> str:
    """This node's address on the route to the peer, with the peer URL's scheme and port (both
    nodes serve the API the same way)."""
    parts = urlsplit(peer_url)
    host = parts.hostname or ""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((host, parts.port or 443))  # UDP: no packet is sent, the kernel picks a route
        address = probe.getsockname()[0]
    netloc = f"[{address}]" if family == socket.AF_INET6 else address
    return f"{parts.scheme}://{netloc}" + (f":{parts.port}" if parts.port else "")


@dataclass(frozen=True)
class Exchanged:
    """A finished pairing exchange, seen from the node that entered the other's code."""

    answer: wire.Answer
    peer_url: str
    local_url: str
    key: bytes
    certificate: str | None  # SHA-256 of the certificate the other node presented (pinned from now)


def pair_with(runtime: HaRuntime, actor: audit.Actor, request: PairRequest) -> PairResult:
    """On A: run the exchange with B, store the pairing, push this node's configuration."""
    with runtime.session_scope() as session:
        existing = pairing.current_pairing(session)
        if existing is not None:
            raise Conflict(
                f"this node is already paired with {existing.peer_name} ({existing.peer_url}); unpair first"
            )
        refuse_if_cluster_writer(session, "pair with another node")
        name = get_node(session).name
    exchanged = exchange(runtime, name, request.peer_url, request.code, request.local_url)
    with runtime.pairing_lock:
        return _store_and_push(runtime, actor, exchanged)


def exchange(
    runtime: HaRuntime, name: str, peer_url_given: str, code: str, local_url_given: str | None
) -> Exchanged:
    """Run the code exchange with the node at `peer_url_given` (its /peer/pair), which stores its
    side; errors name the request's fields (peer_url, local_url, code)."""
    peer_url = origin(peer_url_given)
    try:
        local_url = origin(local_url_given) if local_url_given else default_local_url(peer_url)
    except OSError as error:
        raise _invalid("peer_url", f"no route to {peer_url}: {error.strerror or error}") from None
    if local_url.startswith("https://") and runtime.served_certificate is None:
        raise _invalid(
            "local_url",
            "this node does not know the certificate it serves (FULCRUM_TLS_CERTFILE), so the peer "
            "could not pin it",
        )
    key = pairing.code_key(code)
    # Any certificate is accepted here, and recorded: the offer names it under the code's MAC, and
    # the peer refuses unless it is the one it serves. From then on only that one is accepted.
    context = tls.peer_context(pin=None)
    try:
        with httpx.Client(verify=context, timeout=PAIR_TIMEOUT) as http:
            http.get(f"{peer_url}/api/v1/health")
            seen = context.presented
            offer, private = pairing.make_offer(name, local_url, runtime.served_certificate, seen)
            response = http.post(
                f"{peer_url}/api/v1/peer/pair", json={**asdict(offer), "mac": pairing.offer_mac(key, offer)}
            )
    except httpx.HTTPError as error:
        raise _invalid("peer_url", f"no Fulcrum node answered at {peer_url}: {error}") from None
    if context.presented != seen:
        raise _invalid(
            "peer_url",
            f"{peer_url} presented two different certificates while pairing: is something between the nodes?",
        )
    detail = response_detail(response)
    if response.status_code == 401:
        raise _invalid("code", f"the pairing code was not accepted by the peer: {detail}")
    if response.status_code == 409:
        raise Conflict(f"the peer refused to pair: {detail}")
    if response.status_code == 429:
        raise TooManyRequests(f"the peer takes no more pairing codes from this node: {detail}")
    if response.status_code != 200:
        raise _invalid("peer_url", f"{peer_url} answered HTTP {response.status_code}: {detail}")
    try:
        answer = wire.Answer.model_validate(response.json())
    except (ValueError, ValidationError):
        raise _invalid("peer_url", f"{peer_url} did not answer like a Fulcrum node") from None
    try:
        key_bytes = pairing.accept_answer(
            key, offer, private, pairing.Answer(answer.node, answer.public_key, answer.nonce), answer.mac
        )
    except pairing.PairingRefused as error:
        raise _invalid("code", str(error)) from None
    return Exchanged(answer, peer_url, local_url, key_bytes, seen)


def refuse_if_cluster_writer(session: Session, what: str) -> None:
    """A cluster's writer trusts its members by their own keys: it cannot also be one node of a
    pair, or another writer's member."""
    members = session.scalars(select(ClusterMember.name)).all()
    if members:
        raise Conflict(
            f"this node leads a cluster (members: {', '.join(sorted(members))}), so it cannot {what}; "
            "remove its members first"
        )


def _store_and_push(runtime: HaRuntime, actor: audit.Actor, exchanged: Exchanged) -> PairResult:
    answer, peer_url, local_url = exchanged.answer, exchanged.peer_url, exchanged.local_url
    with runtime.session_scope() as session:
        pairing.store_pairing(
            session,
            answer.node,
            peer_url,
            exchanged.key,
            initiator=True,
            peer_certificate=exchanged.certificate,
            own_certificate=runtime.served_certificate,
        )
        audit.record(session, actor, "ha.pair", answer.node, {"peer_url": peer_url, "local_url": local_url})
        events.emit(
            runtime.telemetry,
            "ha.paired",
            Severity.INFO,
            f"paired with {answer.node} at {peer_url}",
            {"peer": answer.node, "peer_url": peer_url},
            session=session,
        )
    runtime.forget_peer()
    runtime.set_sync("unreachable", "paired; the first sync is running")
    # This node's configuration wins at pairing (the dashboard says so before the user confirms).
    sync = replication.push(runtime, force=True)
    runtime.wake()
    return PairResult(peer_name=answer.node, peer_url=peer_url, sync=sync)


def answer_offer(session: Session, runtime: HaRuntime, offer: wire.Offer, source: str) -> wire.Answer:
    """On B: check A's proof of the code, answer with ours, store the pairing."""
    existing = pairing.current_pairing(session)
    if existing is not None:
        raise Conflict("this node is already paired; unpair it first")
    refuse_if_cluster_writer(session, "be paired or join another cluster")
    name = get_node(session).name
    if offer.node == name:
        raise Conflict(
            f"both nodes are named {name!r}; give each node its own name (PUT /api/v1/node) before pairing"
        )
    try:
        key = pairing.live_code_key(session, source)
    except pairing.SourceLimited as error:
        raise TooManyRequests(str(error)) from None
    except pairing.PairingRefused as error:
        raise PairingRejected(str(error)) from None
    fields = pairing.Offer(
        offer.node, offer.url, offer.certificate, offer.peer_certificate, offer.public_key, offer.nonce
    )
    try:
        answer, mac, pair_key = pairing.answer_offer(key, fields, offer.mac, name)
    except pairing.PairingRefused as error:
        left = pairing.code_failed(session, source)
        raise PairingRejected(
            f"{error}; {left} tries left from {source}"
            if left
            else f"{error}; no tries left from {source}, create a new code"
        ) from None
    # The offer proved the code; these refusals leave it valid for a corrected try.
    if offer.peer_certificate != runtime.served_certificate:
        raise Conflict(
            f"{offer.node} sees certificate SHA-256 {offer.peer_certificate or 'none (plain HTTP)'} here, "
            "but this node serves "
            f"{runtime.served_certificate or 'none (FULCRUM_TLS_CERTFILE is not set)'}: something between "
            "the nodes terminates TLS, or this node's setting is wrong"
        )
    if offer.url.startswith("https://") and offer.certificate is None:
        raise Conflict(f"{offer.node} offers an HTTPS address but no certificate to pin")
    pairing.burn_code(session)
    pairing.store_pairing(
        session,
        offer.node,
        origin(offer.url),
        pair_key,
        initiator=False,
        peer_certificate=offer.certificate,
        own_certificate=runtime.served_certificate,
    )
    actor = audit.Actor(username=f"peer:{offer.node}", source=source)
    audit.record(session, actor, "ha.pair", offer.node, {"peer_url": offer.url})
    events.emit(
        runtime.telemetry,
        "ha.paired",
        Severity.INFO,
        f"paired with {offer.node} at {offer.url}",
        {"peer": offer.node, "peer_url": offer.url},
        session=session,
    )
    runtime.forget_peer()
    runtime.set_sync("unreachable", "paired; waiting for the peer's configuration")
    return wire.Answer(node=answer.node, public_key=answer.public_key, nonce=answer.nonce, mac=mac)


def issue_code(session: Session, actor: audit.Actor) -> tuple[str, datetime]:
    existing = pairing.current_pairing(session)
    if existing is not None:
        raise Conflict(f"this node is already paired with {existing.peer_name}; unpair first")
    refuse_if_cluster_writer(session, "be paired or join another cluster")
    code, expires = pairing.issue_code(session)
    audit.record(session, actor, "ha.pairing_code", "", {"expires_at": expires.isoformat()})
    return code, expires


def unpair(runtime: HaRuntime, actor: audit.Actor) -> str:
    """On either node: tell the peer (signed, best effort), then forget the pairing here."""
    with runtime.session_scope() as session:
        current = replication.require_pairing(session)
        peer = replication.client_for(current, get_node(session).name)
        peer_name = current.peer_name
    try:
        response = peer.delete("/pair")
        told = "told the peer" if response.ok else f"the peer answered {response.detail}"
    except PeerError as error:
        told = f"the peer was not told ({error}); unpair it there too"
    with runtime.session_scope() as session:
        # A writer from the start: a deferred transaction that read the pairing, then deleted it
        # after another writer had committed, failed at once with "database is locked" (a 500).
        begin_write(session)
        pairing.forget_pairing(session)
        audit.record(session, actor, "ha.unpair", peer_name, {"peer": told})
        events.emit(
            runtime.telemetry,
            "ha.unpaired",
            Severity.WARNING,
            f"unpaired from {peer_name}: {told}",
            {"peer": peer_name},
            session=session,
        )
    runtime.forget_peer()
    return told


def unpaired_by_peer(session: Session, runtime: HaRuntime, actor: audit.Actor) -> None:
    current = pairing.forget_pairing(session)
    name = current.peer_name if current else actor.username
    audit.record(session, actor, "ha.unpair", name, {"by": "peer"})
    events.emit(
        runtime.telemetry,
        "ha.unpaired",
        Severity.WARNING,
        f"{name} unpaired this node",
        {"peer": name},
        session=session,
    )
    runtime.forget_peer()


def announce_certificate(runtime: HaRuntime) -> None:
    """After this node's certificate was renewed (it serves another than the peer has pinned):
    tell the peer in a signed request, over a connection that checks the peer's own pin, so that
    it pins the new one. Tried again on every poll until the peer took it."""
    served = runtime.served_certificate
    with runtime.session_scope() as session:
        current = pairing.current_pairing(session)
        if current is None or served is None or current.announced_certificate == served:
            return
        peer = replication.client_for(current, get_node(session).name)
    try:
        response = peer.post("/certificate", wire.CertificateAnnouncement(certificate=served).model_dump())
    except PeerError as error:
        log.warning("announcing this node's renewed certificate to the peer: %s", error)
        return
    if not response.ok:
        log.warning("the peer did not take this node's renewed certificate: %s", response.detail)
        return
    with runtime.session_scope() as session:
        pairing.certificate_announced(session, served)


def pin_on_peer_before_serving(session: Session, runtime: HaRuntime, certificate: str) -> None:
    """Before this node serves an uploaded certificate: have the peer pin it, in a signed request
    over a connection that still checks the peer's own pin, so the link never meets a certificate
    it does not trust. Not paired: nothing to do. A peer that cannot be asked refuses the upload
    (the certificate would otherwise cut the pair until the peer came back to be told)."""
    current = pairing.current_pairing(session)
    if current is None:
        return
    peer = replication.client_for(current, get_node(session).name)
    try:
        announcement = wire.CertificateAnnouncement(certificate=certificate).model_dump()
        response = peer.post("/certificate", announcement)
    except PeerError as error:
        raise Conflict(
            f"the HA peer {current.peer_name} could not be told to pin the new certificate, "
            f"so it is not installed: {error}"
        ) from None
    if not response.ok:
        raise Conflict(
            f"the HA peer {current.peer_name} refused to pin the new certificate, "
            f"so it is not installed: {response.detail}"
        )
    pairing.certificate_announced(session, certificate)


def peer_certificate_renewed(
    session: Session, runtime: HaRuntime, actor: audit.Actor, certificate: str
) -> None:
    """On the other node: the signed announcement of a renewed certificate; pin it."""
    current = pairing.pin_peer_certificate(session, certificate)
    if current is None:
        return
    audit.record(session, actor, "ha.peer_certificate", current.peer_name, {"certificate": certificate})
    events.emit(
        runtime.telemetry, "ha.peer_certificate", Severity.INFO,
        f"{current.peer_name} serves a renewed certificate (SHA-256 {certificate}): pinned",
        {"peer": current.peer_name, "certificate": certificate},
        session=session,
    )  # fmt: skip
    runtime.wake()
