"""Replicating the shared configuration and the users between the two nodes of a pair.

The sender offers its head revision's shared part with its lineage history. The receiver, holding
the commit lock, compares heads (fulcrum.ha.status.relation): the same shared configuration is
"in sync"; a sender whose history contains the receiver's head is ahead, and the receiver commits
the shared part merged with its own node settings as a new local revision through the revisions
service (rendered, validated, applied, read back like any commit); a sender that is behind is told
so; anything else is a conflict, recorded on both sides and never overwritten unless the
operator forces one side. Users (not part of revisions) travel with every push and are taken
whenever the configuration is in sync or taken.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any

from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier
from fulcrum.config.snapshot import WRITTEN, ConfigSnapshot
from fulcrum.errors import ConfigInvalid, Conflict
from fulcrum.ha import events, wire
from fulcrum.ha.pairing import current_pairing
from fulcrum.ha.peer_client import APPLY_TIMEOUT, PeerClient, PeerError, PeerResponse
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.status import relation
from fulcrum.ha.wire import ConfigPush, ConfigReply, Head, UserRecord
from fulcrum.models import Role, TokenKind, User
from fulcrum.models.ha import HaPairing
from fulcrum.schemas.ha import HaDiff, SyncResult
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, lineage, revisions
from fulcrum.services.candidate import bgp_settings, network_settings, node_settings
from fulcrum.services.ha_config import get_node
from fulcrum.services.users import list_users
from fulcrum.services.validation import validated


class ReplicationConflict(Conflict):
    """Both nodes changed the shared configuration since they last agreed. Recorded (the
    conflict event commits with the answer)."""

    keep_changes = True


class NotPaired(Conflict):
    pass


# --- users -------------------------------------------------------------------------------------


def users_payload(session: Session) -> list[dict[str, Any]]:
    return [
        {"username": u.username, "role": u.role, "password_hash": u.password_hash, "disabled": u.disabled}
        for u in list_users(session)
    ]


def users_hash(users: list[dict[str, Any]]) -> str:
    canonical = sorted(users, key=lambda u: u["username"])
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def apply_users(session: Session, actor: audit.Actor, records: list[UserRecord]) -> dict[str, list[str]]:
    """Make this node's accounts equal the peer's. Sessions end where a password changed or an
    account was disabled, as they do on the node where that was edited; API tokens stay."""
    if not any(r.role == Role.ADMIN and not r.disabled for r in records):
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "users"],
                    "msg": "the peer's users include no active admin; not taken",
                    "type": "value_error",
                }
            ]
        )
    existing = {u.username: u for u in list_users(session)}
    changes: dict[str, list[str]] = {"created": [], "updated": [], "deleted": []}
    for record in records:
        row = existing.pop(record.username, None)
        if row is None:
            session.add(
                User(
                    username=record.username,
                    password_hash=record.password_hash,
                    role=record.role.value,
                    disabled=record.disabled,
                )
            )
            changes["created"].append(record.username)
            continue
        if (row.password_hash, row.role, row.disabled) == (
            record.password_hash,
            record.role.value,
            record.disabled,
        ):
            continue
        if row.password_hash != record.password_hash:
            row.password_hash = record.password_hash
            row.tokens[:] = [t for t in row.tokens if t.kind == TokenKind.API.value]
        row.role = record.role.value
        row.disabled = record.disabled
        if row.disabled:
            row.tokens.clear()
        changes["updated"].append(record.username)
    for row in existing.values():
        session.delete(row)
        changes["deleted"].append(row.username)
    session.flush()
    if any(changes.values()):
        audit.record(session, actor, "user.replicate", "", changes)
    return changes


# --- what a node offers ------------------------------------------------------------------------


def outgoing(session: Session, node_name: str, force: bool = False) -> ConfigPush | None:
    """This node's offer; None if it has committed nothing (unless forced: users alone)."""
    head = lineage.head(session)
    if head is None or head.lineage is None or head.shared_hash is None:
        if not force:
            return None
        users = [UserRecord.model_validate(u) for u in users_payload(session)]
        return ConfigPush(
            shared=None,
            users=users,
            shared_hash=None,
            lineage=None,
            history=[],
            origin_revision=None,
            origin_node=node_name,
            force=True,
        )
    snapshot = revisions.snapshot_of(head)
    assert snapshot is not None
    return ConfigPush(
        shared=lineage.shared_part(snapshot),
        users=[UserRecord.model_validate(u) for u in users_payload(session)],
        shared_hash=head.shared_hash,
        lineage=head.lineage,
        history=lineage.history(session),
        origin_revision=head.number,
        origin_node=node_name,
        force=force,
    )


# --- receiving ---------------------------------------------------------------------------------


def _merged(session: Session, shared: dict[str, Any]) -> ConfigSnapshot:
    """The peer's shared part with this node's own node, network and BGP settings, validated as a whole."""
    local = {
        "node": node_settings(session),
        "network": network_settings(session),
        "bgp": bgp_settings(session),
    }
    return validated(
        lambda: ConfigSnapshot.model_validate({**shared, **local}, context=WRITTEN),
        prefix=("body", "shared"),
    )


def accept(
    session: Session, runtime: HaRuntime, applier: Applier, push: ConfigPush, source: str
) -> ConfigReply:
    """Handle a peer's push. The caller holds the commit lock."""
    actor = audit.Actor(username=f"peer:{push.origin_node}", source=source)
    head = lineage.head(session)
    if (
        push.shared is None
        or push.shared_hash is None
        or push.lineage is None
        or push.origin_revision is None
    ):
        if not push.force:
            raise ConfigInvalid(
                [
                    {
                        "loc": ["body", "shared"],
                        "msg": "only a forced push may come without configuration",
                        "type": "value_error",
                    }
                ]
            )
        apply_users(session, actor, push.users)
        return ConfigReply(
            result="forced",
            revision=head.number if head else None,
            state=head.state if head else None,
            shared_hash=head.shared_hash if head else None,
        )
    snapshot = _merged(session, push.shared)
    if lineage.shared_hash(snapshot) != push.shared_hash:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "shared_hash"],
                    "msg": "does not match the shared configuration sent",
                    "type": "value_error",
                }
            ]
        )
    mine = (
        Head(revision=head.number, shared_hash=head.shared_hash, lineage=head.lineage)
        if head and head.lineage and head.shared_hash
        else None
    )
    theirs = Head(revision=push.origin_revision, shared_hash=push.shared_hash, lineage=push.lineage)
    seen_from_here = relation(mine, lineage.history(session), theirs, push.history)
    if seen_from_here == "in_sync":
        if head is not None and head.lineage != push.lineage:
            # Same configuration reached by different paths: take the sender's id, so that the
            # next change on either side is recognised as a descendant.
            head.lineage = push.lineage
        apply_users(session, actor, push.users)
        return ConfigReply(
            result="in_sync",
            revision=head.number if head else None,
            state=head.state if head else None,
            shared_hash=push.shared_hash,
        )
    if seen_from_here == "peer_behind" and not push.force:
        return ConfigReply(
            result="peer_ahead",
            revision=mine.revision if mine else None,
            state=head.state if head else None,
            shared_hash=mine.shared_hash if mine else None,
        )
    if seen_from_here == "conflict" and not push.force:
        message = (
            f"configuration conflict with {push.origin_node}: both nodes changed the shared configuration "
            "since they "
            f"last agreed (here revision {mine.revision if mine else '-'}, there revision "
            f"{push.origin_revision}); "
            "nothing was overwritten; choose the winner (POST /api/v1/ha/resolve)"
        )
        runtime.record_conflict(mine.lineage if mine else "", push.lineage, message, session=session)
        raise ReplicationConflict(
            message, result="conflict", revision=mine.revision if mine else None,
            shared_hash=mine.shared_hash if mine else None, lineage=mine.lineage if mine else None,
        )  # fmt: skip
    verb = "forced by" if push.force else "replicated from"
    try:
        revision = revisions.commit(
            session, actor, applier, runtime.telemetry,
            f"{verb} {push.origin_node} revision {push.origin_revision}", None,
            snapshot=snapshot, lineage=push.lineage,
        )  # fmt: skip
    except Conflict as error:
        if isinstance(error, ReplicationConflict):
            raise
        raise Conflict(
            f"this node cannot take the configuration now: {error.message}", result="busy", **error.extra
        ) from error
    apply_users(session, actor, push.users)
    events.emit(
        runtime.telemetry, "ha.sync", Severity.INFO,
        f"revision {push.origin_revision} of {push.origin_node} applied here as revision {revision.number} "
        f"({revision.state})",
        {"peer": push.origin_node, "peer_revision": push.origin_revision, "revision": revision.number,
         "forced": push.force},
        session=session,
    )  # fmt: skip
    return ConfigReply(
        result="forced" if push.force else "fast_forward",
        revision=revision.number,
        state=revision.state,
        shared_hash=revision.shared_hash,
    )


# --- sending -----------------------------------------------------------------------------------


def client_for(pairing: HaPairing, node_name: str) -> PeerClient:
    return PeerClient(pairing.peer_url, node_name, bytes.fromhex(pairing.key), pairing.peer_certificate)


def require_pairing(session: Session) -> HaPairing:
    pairing = current_pairing(session)
    if pairing is None:
        raise NotPaired("this node is not paired")
    return pairing


def push(runtime: HaRuntime, force: bool = False) -> SyncResult:
    """Offer this node's head to the peer and record the outcome. Opens its own short sessions:
    the caller must not hold a database transaction (the peer may take seconds to apply)."""
    with runtime.session_scope() as session:
        pairing = require_pairing(session)
        name = get_node(session).name
        payload = outgoing(session, name, force)
        peer = client_for(pairing, name)
        peer_name = pairing.peer_name
    if payload is None:
        return SyncResult(
            result="nothing_to_push",
            local_revision=None,
            peer_revision=None,
            message="this node has no committed configuration yet",
        )
    unreadable = _unreadable_by_peer(runtime, payload, peer_name)
    if unreadable is not None:
        with runtime.lock:
            newly = runtime.sync.state != "incompatible"
        if newly:  # once, not at every poll while it lasts
            events.emit(runtime.telemetry, "ha.sync", Severity.WARNING, unreadable, {"peer": peer_name})
        runtime.set_sync("incompatible", unreadable)
        mine = payload.origin_revision
        return SyncResult(result="incompatible", local_revision=mine, peer_revision=None, message=unreadable)

    try:
        response = peer.post("/config", payload.model_dump(mode="json"), timeout=APPLY_TIMEOUT)
    except PeerError as error:
        runtime.peer_failed(peer_name, str(error))
        return SyncResult(
            result="failed", local_revision=payload.origin_revision, peer_revision=None, message=str(error)
        )
    return _outcome(runtime, payload, response, peer_name)


def _unreadable_by_peer(runtime: HaRuntime, payload: ConfigPush, peer_name: str) -> str | None:
    """Why the peer, as it last described itself, cannot read this configuration; None when it can
    (or has not answered yet: an older node then refuses what it cannot parse, and says so)."""
    with runtime.lock:
        known = runtime.peer.status
    if payload.shared is None or known is None or known.config_schema >= wire.CONFIG_SCHEMA:
        return None
    version = f"Fulcrum {known.software_version}" if known.software_version else "an older Fulcrum"
    return (
        f"{peer_name} runs {version}, which reads configuration schema {known.config_schema}; this node "
        f"writes schema {wire.CONFIG_SCHEMA}, so nothing is sent to {peer_name} until it is upgraded too"
    )


def _outcome(runtime: HaRuntime, payload: ConfigPush, response: PeerResponse, peer_name: str) -> SyncResult:
    mine = payload.origin_revision
    lineage_id = payload.lineage or ""
    data = response.data if isinstance(response.data, dict) else {}
    if response.ok:
        reply = ConfigReply.model_validate(data)
        runtime.retry_at.pop(lineage_id, None)
        if payload.shared is None:
            message = f"{peer_name} took this node's users; this node has no committed configuration yet"
            runtime.set_sync(
                "peer_ahead" if reply.revision is not None else "in_sync",
                message,
                reply.revision,
                reply.shared_hash,
            )
        elif reply.result in ("fast_forward", "forced"):
            message = f"{peer_name} applied revision {mine} as its revision {reply.revision} ({reply.state})"
            events.emit(
                runtime.telemetry,
                "ha.sync",
                Severity.INFO,
                message,
                {
                    "peer": peer_name,
                    "revision": mine,
                    "peer_revision": reply.revision,
                    "forced": payload.force,
                },
            )
            runtime.set_sync("in_sync", message, reply.revision, reply.shared_hash)
        elif reply.result == "in_sync":
            message = f"{peer_name} runs the same shared configuration (its revision {reply.revision})"
            runtime.set_sync("in_sync", message, reply.revision, reply.shared_hash)
        else:
            message = f"{peer_name} has newer configuration (its revision {reply.revision}); it sends it here"
            runtime.set_sync("peer_ahead", message, reply.revision, reply.shared_hash)
        return SyncResult(
            result=reply.result, local_revision=mine, peer_revision=reply.revision, message=message
        )
    if response.status == 409 and data.get("result") == "conflict":
        message = response.detail
        runtime.record_conflict(lineage_id, str(data.get("lineage")), message)
        runtime.set_sync("conflict", message, data.get("revision"), data.get("shared_hash"))
        return SyncResult(
            result="conflict", local_revision=mine, peer_revision=data.get("revision"), message=message
        )
    runtime.push_failed(lineage_id)
    message = f"{peer_name} could not apply revision {mine}: {_describe(response)}"
    runtime.set_sync("peer_behind", message)
    return SyncResult(result="failed", local_revision=mine, peer_revision=None, message=message)


def _describe(response: PeerResponse) -> str:
    data = response.data
    if isinstance(data, dict) and isinstance(data.get("detail"), list):
        return "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg')}" for e in data["detail"]
        )
    return response.detail


def sync_now(runtime: HaRuntime, actor: audit.Actor) -> SyncResult:
    """ "Make the standby match": push now, even a head the peer failed to apply a moment ago."""
    with runtime.session_scope() as session:
        audit.record(session, actor, "ha.sync", "")
    runtime.retry_at.clear()
    return push(runtime)


def resolve(runtime: HaRuntime, applier: Applier, actor: audit.Actor, winner: str) -> SyncResult:
    """End a conflict: this node's configuration wins ("local": forced on the peer) or the peer's."""
    result = push(runtime, force=True) if winner == "local" else pull(runtime, applier)
    with runtime.session_scope() as session:
        audit.record(
            session,
            actor,
            "ha.resolve",
            winner,
            result.model_dump(mode="json"),
            success=result.result not in ("failed", "conflict"),
        )
    runtime.wake()
    return result


def fetch_peer_config(runtime: HaRuntime) -> tuple[HaPairing, ConfigPush | None]:
    with runtime.session_scope() as session:
        pairing = require_pairing(session)
        peer = client_for(pairing, get_node(session).name)
    try:
        response = peer.get("/config")
    except PeerError as error:
        runtime.peer_failed(pairing.peer_name, str(error))
        raise Conflict(f"the peer could not be asked: {error}") from error
    if response.status == 404:
        return pairing, None
    if not response.ok:
        raise Conflict(f"the peer did not send its configuration: {response.detail}")
    return pairing, ConfigPush.model_validate(response.data)


def pull(runtime: HaRuntime, applier: Applier) -> SyncResult:
    """Take the peer's configuration here, whatever this node's history (resolve: peer wins)."""
    pairing, payload = fetch_peer_config(runtime)
    if payload is None:
        raise Conflict(f"{pairing.peer_name} has no committed configuration to take")
    with revisions.commit_lock, runtime.session_scope() as session:
        reply = accept(
            session, runtime, applier, payload.model_copy(update={"force": True}), pairing.peer_url
        )
    message = f"took {pairing.peer_name}'s revision {payload.origin_revision} as revision {reply.revision}"
    runtime.set_sync("in_sync", message, payload.origin_revision, payload.shared_hash)
    return SyncResult(
        result="pulled" if reply.result != "in_sync" else "in_sync",
        local_revision=reply.revision,
        peer_revision=payload.origin_revision,
        message=message,
    )


# --- comparing ---------------------------------------------------------------------------------


def _document(payload: ConfigPush | None) -> list[str]:
    if payload is None:
        return []
    users = [
        {
            "username": u.username,
            "role": u.role.value,
            "disabled": u.disabled,
            "password": hashlib.sha256(u.password_hash.encode()).hexdigest()[:12],
        }
        for u in payload.users
    ]
    return json.dumps({**(payload.shared or {}), "users": users}, indent=2, sort_keys=True).splitlines(
        keepends=True
    )


def diff(runtime: HaRuntime) -> HaDiff:
    pairing, theirs = fetch_peer_config(runtime)
    with runtime.session_scope() as session:
        mine = outgoing(session, get_node(session).name)
    text = "".join(
        difflib.unified_diff(
            _document(mine),
            _document(theirs),
            fromfile=f"this node (revision {mine.origin_revision})"
            if mine
            else "this node (nothing committed)",
            tofile=f"{pairing.peer_name} (revision {theirs.origin_revision})"
            if theirs
            else f"{pairing.peer_name} (nothing committed)",
        )
    )
    return HaDiff(
        in_sync=not text,
        local_revision=mine.origin_revision if mine else None,
        peer_revision=theirs.origin_revision if theirs else None,
        local_hash=mine.shared_hash if mine else None,
        peer_hash=theirs.shared_hash if theirs else None,
        text=text,
    )
