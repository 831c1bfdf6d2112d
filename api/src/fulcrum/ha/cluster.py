"""A cluster of active nodes behind BGP ECMP, run from one writer.

Every node announces the VIPs and balances (mh, sloppy TCP, DR or TUN), so every node must run the
same services with the same backends in the same order: one configuration, edited on one node.
The writer is the node the members were added on. It pairs with each member by the pairing code
exchange of an HA pair (fulcrum.ha.membership.exchange), then tells it in a signed request that it
is a member: the member's pairing row is marked `cluster_writer`, the writer keeps a ClusterMember
row per member with that member's own key and pinned certificate.

From then on the writer's HA watcher (fulcrum.ha.watcher) polls every member side by side, and
pushes its head to each one that is behind, through the pair's replication (each member takes it
with fulcrum.ha.replication.accept: rendered, validated, applied and read back like any commit).
A member refuses edits and names the writer (fulcrum.routers.one_writer), never pushes, and may
ask the writer only for its status and the cluster's picture. "Drain" puts a member in
maintenance (it withdraws its routes; the router moves its flows to the others, which pick the
same backends); "remove" drains it and forgets it on both sides, so a removed node never goes on
announcing a configuration nobody updates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.db import begin_write
from fulcrum.errors import Conflict, NotFound
from fulcrum.ha import events, local, membership, replication, wire
from fulcrum.ha.peer_client import APPLY_TIMEOUT, STATUS_TIMEOUT, PeerClient, PeerError, PeerResponse
from fulcrum.ha.runtime import PEER_MISSES_TO_UNREACHABLE, PUSH_RETRY_SECONDS, HaRuntime, MemberState
from fulcrum.ha.status import relation
from fulcrum.ha.view import head_of, local_view
from fulcrum.ha.wire import ConfigReply, Head, PeerStatus
from fulcrum.models._types import utcnow
from fulcrum.models.ha import ClusterMember, HaPairing
from fulcrum.schemas.cluster import ClusterNode, ClusterStatus, JoinResult, MemberSync, RemoveResult
from fulcrum.schemas.ha import PairRequest, SyncResult
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, firmware, lineage
from fulcrum.services.ha_config import get_node

log = logging.getLogger(__name__)

Picture = TypeVar("Picture", bound=BaseModel)


def members(session: Session) -> list[ClusterMember]:
    return list(session.scalars(select(ClusterMember).order_by(ClusterMember.name)))


def member_named(session: Session, name: str) -> ClusterMember:
    row = session.scalar(select(ClusterMember).where(ClusterMember.name == name))
    if row is None:
        raise NotFound(f"{name} is not a member of this node's cluster")
    return row


def client_for(member: ClusterMember, node_name: str) -> PeerClient:
    return PeerClient(member.url, node_name, bytes.fromhex(member.key), member.certificate)


def is_member(pairing: HaPairing | None) -> bool:
    return pairing is not None and pairing.cluster_writer


# --- the writer: adding, draining and removing members ------------------------------------------


def join(runtime: HaRuntime, actor: audit.Actor, request: PairRequest) -> JoinResult:
    """On the writer (or a standalone node, which becomes one): pair with the node showing the
    code, make it a member, push this node's configuration to it."""
    with runtime.session_scope() as session:
        paired = session.get(HaPairing, 1)
        if paired is not None:
            role = "a member of the cluster led by" if paired.cluster_writer else "paired with"
            raise Conflict(f"this node is {role} {paired.peer_name}, so it cannot add members")
        url = membership.origin(request.peer_url)
        if session.scalar(select(ClusterMember).where(ClusterMember.url == url)) is not None:
            raise Conflict(f"{url} is a member already")
        name = get_node(session).name
    exchanged = membership.exchange(runtime, name, request.peer_url, request.code, request.local_url)
    # From here to the forced push, no watcher round: it would push to the new member first.
    with runtime.pairing_lock:
        member = ClusterMember(
            name=exchanged.answer.node,
            url=exchanged.peer_url,
            key=exchanged.key.hex(),
            certificate=exchanged.certificate,
        )
        client = client_for(member, name)
        with runtime.session_scope() as session:
            taken = session.scalar(select(ClusterMember).where(ClusterMember.name == member.name))
        if member.name == name or taken is not None:
            _forget_on(client)
            raise Conflict(
                f"a node named {member.name!r} is in this cluster already; give the new node its own name "
                "(PUT /api/v1/node on it) and add it again"
            )
        try:
            response = client.post("/cluster", wire.ClusterMembership(writer=name).model_dump())
        except PeerError as error:
            _forget_on(client)
            raise Conflict(
                f"{member.name} was paired but could not be told it is a member: {error}"
            ) from None
        if not response.ok:
            _forget_on(client)
            raise Conflict(f"{member.name} refused to become a member: {response.detail}")
        with runtime.session_scope() as session:
            session.add(member)
            session.flush()
            audit.record(session, actor, "cluster.join", member.name, {"url": member.url})
            events.emit(
                runtime.telemetry, "ha.cluster_member", Severity.INFO,
                f"{member.name} at {member.url} joined the cluster",
                {"member": member.name, "url": member.url, "change": "joined"},
                session=session,
            )  # fmt: skip
            runtime.members[member.name] = MemberState()
        # The writer's configuration wins, as at pairing (the dashboard says so before).
        sync = push(runtime, member.name, force=True)
    runtime.wake()
    return JoinResult(member=member.name, url=member.url, sync=sync)


def _forget_on(client: PeerClient) -> None:
    """Undo the pairing the exchange stored on the other node (best effort)."""
    try:
        client.delete("/pair")
    except PeerError as error:
        log.warning("telling %s to forget a refused membership: %s", client.url, error)


def drain(runtime: HaRuntime, actor: audit.Actor, name: str, enabled: bool) -> None:
    """Put a member in maintenance (it withdraws its routes) or take it out again."""
    with runtime.session_scope() as session:
        member = member_named(session, name)
        client = client_for(member, get_node(session).name)
    _order_maintenance(client, name, enabled, "drained from the cluster's writer" if enabled else "")
    with runtime.session_scope() as session:
        audit.record(session, actor, "cluster.drain", name, {"enabled": enabled})
        events.emit(
            runtime.telemetry, "ha.cluster_member", Severity.INFO,
            f"{name} {'drained: it withdraws its routes' if enabled else 'takes traffic again'}",
            {"member": name, "change": "drained" if enabled else "undrained"},
            session=session,
        )  # fmt: skip
    runtime.wake()


def _order_maintenance(client: PeerClient, name: str, enabled: bool, reason: str) -> None:
    try:
        response = client.post(
            "/maintenance", wire.MaintenanceOrder(enabled=enabled, reason=reason).model_dump()
        )
    except PeerError as error:
        raise Conflict(f"{name} could not be asked: {error}") from None
    if not response.ok:
        raise Conflict(f"{name} refused: {response.detail}")


def remove(runtime: HaRuntime, actor: audit.Actor, name: str, force: bool) -> RemoveResult:
    """Drain the member and forget it on both sides. A member that cannot be told is removed only
    when forced (it is gone for good): told nothing, it would go on announcing the VIPs."""
    with runtime.session_scope() as session:
        member = member_named(session, name)
        client = client_for(member, get_node(session).name)
    try:
        _order_maintenance(client, name, True, "removed from the cluster")
        response = client.delete("/pair")
        if not response.ok:
            raise Conflict(f"{name} did not forget the cluster: {response.detail}")
        told = f"{name} was drained (it announces nothing) and left the cluster"
    except (Conflict, PeerError) as error:
        if not force:
            raise Conflict(
                f"{error}; it would go on announcing the VIPs with a configuration nobody updates, so it "
                "stays a member (remove it with force when it is gone for good)"
            ) from None
        told = (
            f"{name} was not told ({error}); if it comes back, it still announces: drain or unpair it there"
        )
    with runtime.session_scope() as session:
        message = f"{name} was removed from the cluster: {told}"
        _forget(session, runtime, actor, name, "removed", message, {"told": told, "force": force})
    return RemoveResult(member=name, told=told)


def left(session: Session, runtime: HaRuntime, actor: audit.Actor, name: str) -> None:
    """A member unpaired itself (on its own dashboard): forget it here too."""
    message = f"{name} left the cluster: it no longer takes this node's configuration"
    _forget(session, runtime, actor, name, "left", message, {"by": "member"})


def _forget(
    session: Session,
    runtime: HaRuntime,
    actor: audit.Actor,
    name: str,
    change: str,
    message: str,
    detail: dict[str, object],
) -> None:
    begin_write(session)
    session.delete(member_named(session, name))
    audit.record(session, actor, "cluster.remove", name, detail)
    events.emit(runtime.telemetry, "ha.cluster_member", Severity.WARNING, message,
                {"member": name, "change": change}, session=session)  # fmt: skip
    with runtime.lock:
        runtime.members.pop(name, None)


# --- the writer: replicating to every member ----------------------------------------------------


def _state(runtime: HaRuntime, name: str) -> MemberState:
    with runtime.lock:
        return runtime.members.setdefault(name, MemberState())


def _set_sync(
    runtime: HaRuntime, name: str, state: MemberSync, message: str, head: Head | ConfigReply | None = None
) -> None:
    """Where the member stands; `head`: its head as it last told (a poll's, or a push's reply)."""
    record = _state(runtime, name).sync
    with runtime.lock:
        if record.state != state or record.since is None:
            record.since = utcnow()
        record.state, record.message = state, message
        if head is not None and head.revision is not None:
            record.peer_revision, record.peer_hash = head.revision, head.shared_hash


def push(runtime: HaRuntime, name: str, force: bool = False) -> SyncResult:
    """Offer the writer's head to one member and record the outcome."""
    with runtime.session_scope() as session:
        member = member_named(session, name)
        writer = get_node(session).name
        payload = replication.outgoing(session, writer, force)
        client = client_for(member, writer)
    if payload is None:
        return SyncResult(
            result="nothing_to_push", local_revision=None, peer_revision=None,
            message="this node has no committed configuration yet",
        )  # fmt: skip
    mine = payload.origin_revision
    try:
        response = client.post("/config", payload.model_dump(mode="json"), timeout=APPLY_TIMEOUT)
    except PeerError as error:
        _missed(runtime, name, str(error))
        return SyncResult(result="failed", local_revision=mine, peer_revision=None, message=str(error))
    return _outcome(runtime, name, mine, payload.lineage or "", response)


def _outcome(
    runtime: HaRuntime, name: str, mine: int | None, lineage_id: str, response: PeerResponse
) -> SyncResult:
    data = response.data if isinstance(response.data, dict) else {}
    state = _state(runtime, name)
    if response.ok:
        reply = ConfigReply.model_validate(data)
        state.retry_at.pop(lineage_id, None)
        if reply.result == "peer_ahead":
            message = f"{name} has configuration this node's history does not (its revision {reply.revision})"
            _set_sync(runtime, name, "conflict", message)
        else:
            message = f"{name} runs revision {mine} as its revision {reply.revision} ({reply.state})"
            _set_sync(runtime, name, "in_sync", message, reply)
            if reply.result in ("fast_forward", "forced"):
                events.emit(
                    runtime.telemetry, "ha.sync", Severity.INFO, f"{name} applied revision {mine} as its "
                    f"revision {reply.revision} ({reply.state})",
                    {"peer": name, "revision": mine, "peer_revision": reply.revision},
                )  # fmt: skip
        return SyncResult(
            result=reply.result, local_revision=mine, peer_revision=reply.revision, message=message
        )
    if response.status == 409 and data.get("result") == "conflict":
        message = f"{name}: {response.detail}"
        _set_sync(runtime, name, "conflict", message)
        return SyncResult(
            result="conflict", local_revision=mine, peer_revision=data.get("revision"), message=message
        )
    state.retry_at[lineage_id] = time.monotonic() + PUSH_RETRY_SECONDS
    message = f"{name} could not apply revision {mine}: {response.detail}"
    _set_sync(runtime, name, "behind", message)
    return SyncResult(result="failed", local_revision=mine, peer_revision=None, message=message)


def sync_member(runtime: HaRuntime, actor: audit.Actor, name: str, force: bool) -> SyncResult:
    """The operator's "sync now" for one member; `force` replaces a conflicting configuration."""
    with runtime.session_scope() as session:
        member_named(session, name)
        audit.record(session, actor, "cluster.sync", name, {"force": force})
    _state(runtime, name).retry_at.clear()
    return push(runtime, name, force=force)


def tick(runtime: HaRuntime) -> None:
    """One watcher round on the writer: ask every member side by side, push where one is behind."""
    with runtime.session_scope() as session:
        names = [m.name for m in members(session)]
        with runtime.lock:
            for gone in set(runtime.members) - set(names):
                del runtime.members[gone]
    if not names:
        return
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="cluster") as pool:
        for name, error in zip(names, pool.map(lambda n: _round(runtime, n), names), strict=True):
            if error is not None:
                log.error("cluster member %s: %s", name, error)


def _round(runtime: HaRuntime, name: str) -> Exception | None:
    try:
        status = _poll(runtime, name)
        if status is not None:
            _follow(runtime, name, status)
    except Exception as error:  # one member's trouble must not stop the others' round
        log.exception("cluster member %s", name)
        return error
    return None


def _poll(runtime: HaRuntime, name: str) -> PeerStatus | None:
    with runtime.session_scope() as session:
        client = client_for(member_named(session, name), get_node(session).name)
    try:
        response = client.get("/status")
        if not response.ok:
            raise PeerError(f"it answered its status request with {response.detail}")
        status = PeerStatus.model_validate(response.data)
    except (PeerError, ValidationError) as error:
        _missed(runtime, name, str(error))
        return None
    cache = _state(runtime, name).peer
    with runtime.lock:
        was = cache.reachable
        cache.status, cache.last_seen, cache.reachable = status, utcnow(), True
        cache.unreachable_since, cache.misses, cache.clock_offset = None, 0, response.clock_offset
    if was is False:
        events.emit(
            runtime.telemetry, "ha.member_reachable", Severity.INFO, f"cluster member {name} answers again",
            {"member": name},
        )  # fmt: skip
    return status


def _missed(runtime: HaRuntime, name: str, problem: str) -> None:
    cache = _state(runtime, name).peer
    with runtime.lock:
        cache.misses += 1
        if cache.misses < PEER_MISSES_TO_UNREACHABLE:
            return
        was, cache.reachable = cache.reachable, False
        if was is not False:
            cache.unreachable_since = utcnow()
    _set_sync(runtime, name, "unreachable", problem)
    if was is not False:
        events.emit(
            runtime.telemetry, "ha.member_unreachable", Severity.WARNING,
            f"cluster member {name} is unreachable: {problem}", {"member": name, "problem": problem},
        )  # fmt: skip


def _follow(runtime: HaRuntime, name: str, status: PeerStatus) -> None:
    """Push to a member that is behind (or whose users differ); record where it stands."""
    with runtime.session_scope() as session:
        head = head_of(session)
        history = lineage.history(session)
        users = replication.users_hash(replication.users_payload(session))
    seen = relation(head, history, status.head, status.history)
    if seen == "in_sync":
        lineage_differs = head is not None and status.head is not None and head.lineage != status.head.lineage
        if users != status.users_hash or lineage_differs:
            push(runtime, name)
        else:
            revision = status.head.revision if status.head else None
            _set_sync(
                runtime,
                name,
                "in_sync",
                f"{name} runs this configuration (its revision {revision})",
                status.head,
            )
    elif seen == "peer_behind":
        assert head is not None
        if _state(runtime, name).retry_at.get(head.lineage, 0.0) <= time.monotonic():
            push(runtime, name)
    else:
        _set_sync(
            runtime, name, "conflict",
            f"{name} has configuration this node's history does not: sync it with force to replace it",
            status.head,
        )  # fmt: skip


# --- a member -----------------------------------------------------------------------------------


def joined(session: Session, runtime: HaRuntime, actor: audit.Actor, writer: str) -> None:
    """On the new member: the node it has just paired with leads a cluster."""
    pairing = session.get(HaPairing, 1)
    if pairing is None or pairing.peer_name != writer:
        raise Conflict(f"this node is not paired with {writer}, so it cannot be its member")
    membership.refuse_if_cluster_writer(session, "join another cluster")
    pairing.cluster_writer = True
    session.flush()
    audit.record(session, actor, "cluster.join", writer, {"writer": writer})
    events.emit(
        runtime.telemetry, "ha.cluster_member", Severity.INFO,
        f"this node is a member of the cluster led by {writer}: it takes its configuration from there",
        {"writer": writer, "change": "joined"},
        session=session,
    )  # fmt: skip


# --- the picture, for the dashboard -------------------------------------------------------------


def status(session: Session, runtime: HaRuntime) -> ClusterStatus:
    """The writer's picture of every node; a member asks the writer for it."""
    pairing = session.get(HaPairing, 1)
    if is_member(pairing):
        assert pairing is not None
        return _from_writer(session, runtime, pairing)
    rows = members(session)
    node = get_node(session)
    if not rows:
        return ClusterStatus(role="none", writer=None, writer_url=None, nodes=[], message="")
    return writer_picture(session, runtime, node.name, rows)


def writer_picture(
    session: Session, runtime: HaRuntime, name: str, rows: Iterable[ClusterMember]
) -> ClusterStatus:
    view = local_view(session, runtime)
    mine = local.connections(runtime.telemetry.latest)
    nodes = [
        ClusterNode(
            name=name, url=None, writer=True, local=True, reachable=True, last_seen=utcnow(),
            maintenance=view.maintenance, revision=view.head.revision if view.head else None,
            shared_hash=view.head.shared_hash if view.head else None, sync=None, sync_message="",
            connections=mine, share=None, joined_at=None,
            software_version=firmware.running_version(runtime.settings),
        )
    ]  # fmt: skip
    with runtime.lock:
        for row in rows:
            state = runtime.members.get(row.name, MemberState())
            told = state.peer.status
            nodes.append(
                ClusterNode(
                    name=row.name, url=row.url, writer=False, local=False, reachable=state.peer.reachable,
                    last_seen=state.peer.last_seen, maintenance=told.maintenance if told else None,
                    revision=state.sync.peer_revision, shared_hash=state.sync.peer_hash,
                    sync=state.sync.state if state.peer.reachable is not None else None,  # type: ignore[arg-type]
                    sync_message=state.sync.message or "not asked yet",
                    connections=told.connections if told and state.peer.reachable else None,
                    share=None, software_version=told.software_version if told else None,
                    joined_at=row.joined_at,
                )
            )  # fmt: skip
    counted = [n.connections for n in nodes if n.connections is not None]
    total = sum(counted)
    for n in nodes:
        if n.connections is not None and total > 0:
            n.share = round(n.connections / total, 4)
    return ClusterStatus(role="writer", writer=name, writer_url=None, nodes=nodes, message="")


def ask_writer(pairing: HaPairing, here: str, path: str, answer: type[Picture], timeout: float) -> Picture:
    """A member's request for one of the writer's pictures (signed GET /peer<path>), validated;
    PeerError or ValidationError when the writer cannot be asked or answers otherwise."""
    response = replication.client_for(pairing, here).get(path, timeout=timeout)
    if not response.ok:
        raise PeerError(response.detail)
    return answer.model_validate(response.data)


def _from_writer(session: Session, runtime: HaRuntime, pairing: HaPairing) -> ClusterStatus:
    here = get_node(session).name
    try:
        picture = ask_writer(pairing, here, "/cluster", ClusterStatus, STATUS_TIMEOUT)
    except (PeerError, ValidationError) as error:
        return ClusterStatus(
            role="member", writer=pairing.peer_name, writer_url=pairing.peer_url, nodes=[],
            message=f"the writer {pairing.peer_name} could not be asked for the cluster's picture: {error}",
        )  # fmt: skip
    for node in picture.nodes:
        node.local = node.name == here
        if node.writer:
            node.url = pairing.peer_url
    return picture.model_copy(update={"role": "member", "writer_url": pairing.peer_url})
