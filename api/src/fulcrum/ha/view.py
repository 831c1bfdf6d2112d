"""This node's HA picture, assembled for the operator (/ha/status) and for the peer's poll."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.alerts.node import NodeView
from fulcrum.apply.client import ApplierError
from fulcrum.apply.maintenance import in_maintenance
from fulcrum.apply.result import VrrpView
from fulcrum.config.snapshot import Node
from fulcrum.ha import local, replication, upgrade_record, wire
from fulcrum.ha.pairing import current_pairing
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.status import Side, is_writer
from fulcrum.ha.wire import Head, PeerStatus
from fulcrum.models._types import utcnow
from fulcrum.models.ha import ClusterMember, HaPairing
from fulcrum.schemas.ha import (
    ActiveNode,
    ConnSync,
    GroupState,
    HaNode,
    HaPeer,
    HaStatus,
    HaSync,
    SplitBrain,
    Transition,
)
from fulcrum.services import firmware, lineage, revisions
from fulcrum.services.ha_config import get_node

log = logging.getLogger(__name__)


def cluster_role(session: Session, pairing: HaPairing | None) -> str:
    """writer, member or none (fulcrum.ha.cluster)."""
    if pairing is not None:
        return "member" if pairing.cluster_writer else "none"
    return "writer" if session.scalar(select(ClusterMember.id).limit(1)) is not None else "none"


@dataclass(frozen=True)
class LocalView:
    pairing: HaPairing | None
    name: str  # this node's name in the pair (its settings as last saved)
    running_node: Node  # the node settings keepalived runs (the candidate's before any commit)
    groups: list[local.GroupState]
    reported: dict[str, local.Reported]  # keepalived's newest notification per group
    maintenance: bool
    role: str
    writer: bool
    head: Head | None
    history: list[str]
    preempt: bool = False  # a running VIP group preempts: the higher priority takes the VIPs back

    @property
    def side(self) -> Side:
        return Side(self.name, self.running_node.priority, self.role)

    @property
    def group_states(self) -> dict[str, str]:
        return {g.name: g.state for g in self.groups}


def head_of(session: Session) -> Head | None:
    row = lineage.head(session)
    if row is None or row.shared_hash is None or row.lineage is None:
        return None
    return Head(revision=row.number, shared_hash=row.shared_hash, lineage=row.lineage)


def vrrp_view(runtime: HaRuntime) -> VrrpView | None:
    """The data plane's addresses and keepalived's VRRP process now; None when it cannot be read."""
    try:
        return runtime.telemetry.applier.vrrp_view()
    except (ApplierError, OSError) as error:
        log.warning("reading the VRRP state from the data plane failed: %s", error)
        return None


def local_view(session: Session, runtime: HaRuntime) -> LocalView:
    pairing = current_pairing(session)
    running = revisions.vrrp_part_of(revisions.running(session))
    saved = get_node(session)
    node = running.node if running else saved
    # Never None: Settings fills the default in after validation.
    maintenance = in_maintenance(runtime.settings.maintenance_file)  # type: ignore[arg-type]
    reported = local.reported_states(session, running)
    dataplane = vrrp_view(runtime) if running and running.vip_groups else None
    groups = []
    for group in sorted(running.vip_groups if running else [], key=lambda g: g.name):
        told = reported[group.name]
        state, held = local.read_state(group, node, told.state, dataplane, maintenance)
        groups.append(
            local.GroupState(group.name, state, runtime.since(group.name, state, told.state, told.at), held)
        )
    cluster = cluster_role(session, pairing)
    if cluster != "none" and not groups:
        # Every node of a cluster announces the VIPs and balances (no VRRP decides who does).
        role = "maintenance" if maintenance else "active"
    elif pairing is None:
        role = "maintenance" if maintenance else "standalone"
    else:
        role = local.role_of(groups, maintenance)
    peer = runtime.peer.status
    peer_side = Side(peer.name, peer.priority, peer.role) if peer else None
    peer_name = peer.name if peer else (pairing.peer_name if pairing else "")
    member = pairing is not None and pairing.cluster_writer
    writer = is_writer(
        Side(saved.name, node.priority, role), pairing is not None, peer_side, peer_name, member
    )
    preempt = any(group.preempt for group in running.vip_groups) if running else False
    return LocalView(
        pairing,
        saved.name,
        node,
        groups,
        reported,
        maintenance,
        role,
        writer,
        head_of(session),
        lineage.history(session),
        preempt,
    )


def _groups(view: LocalView) -> list[GroupState]:
    # LocalView keeps it as a str; the model checks the literal.
    # LocalView keeps the state as a str; the model checks the literal.
    return [
        GroupState(name=g.name, state=g.state, since=g.since, vips_held=list(g.vips_held))  # type: ignore[arg-type]
        for g in view.groups
    ]


def active_node(view: LocalView, peer: HaPeer | None, split_brain_confirmed: bool) -> ActiveNode:
    """Who holds the VIPs: this node by its own data plane; the peer by its last answer, while it
    answers (an unreachable peer's last word is not evidence of what it does now).

    Both active is a split brain only once the split-brain watch has confirmed it: right after a
    takeover the peer's last answer (up to one poll old) still says it is active."""
    here = view.role in ("active", "standalone") and any(g.state == "MASTER" for g in view.groups)
    there = peer is not None and peer.reachable and peer.role == "active"
    if here:
        return ActiveNode(name=view.name, local=True, url=None, split_brain=there and split_brain_confirmed)
    if there:
        assert peer is not None
        return ActiveNode(name=peer.name, local=False, url=peer.url, split_brain=False)
    return ActiveNode(name=None, local=False, url=None, split_brain=False)


def _daemon(view: LocalView) -> str:
    if view.running_node.sync_interface is None or not view.groups:
        return "off"
    # keepalived's sync daemon follows the first VRRP instance by name (render/keepalived.py).
    return "master" if view.groups[0].state == "MASTER" else "backup"


def peer_status(session: Session, runtime: HaRuntime) -> PeerStatus:
    """What this node tells its peer when polled."""
    view = local_view(session, runtime)
    return PeerStatus(
        name=view.name,
        priority=view.running_node.priority,
        role=view.role,  # type: ignore[arg-type]  # kept as str in LocalView; the model checks the literal
        groups=_groups(view),
        maintenance=view.maintenance,
        writer=view.writer,
        head=view.head,
        history=view.history,
        users_hash=replication.users_hash(replication.users_payload(session)),
        connections=local.connections(runtime.telemetry.latest),
        established=local.established(runtime.telemetry.latest),
        # LocalView keeps it as a str; the model checks the literal.
        conn_sync_daemon=_daemon(view),  # type: ignore[arg-type]
        transitions=[Transition.model_validate(t) for t in local.transitions(session, view.name)],
        time=utcnow(),
        protocol=wire.PROTOCOL,
        config_schema=wire.CONFIG_SCHEMA,
        software_version=firmware.running_version(runtime.settings),
        pair_upgrade=upgrade_record.read(runtime.settings),
    )


def ha_status(session: Session, runtime: HaRuntime) -> HaStatus:
    view = local_view(session, runtime)
    with runtime.lock:
        cache = runtime.peer
        sync = runtime.sync
        peer_state = cache.status
        peer = None
        if view.pairing is not None:
            peer = HaPeer(
                name=peer_state.name if peer_state else view.pairing.peer_name,
                url=view.pairing.peer_url,
                reachable=bool(cache.reachable),
                last_seen=cache.last_seen,
                unreachable_since=cache.unreachable_since,
                role=peer_state.role if peer_state else None,
                groups=peer_state.groups if peer_state else [],
                applied_revision=peer_state.head.revision if peer_state and peer_state.head else None,
                writer=peer_state.writer if peer_state else None,
                certificate=view.pairing.peer_certificate,
                untrusted_certificate=cache.untrusted_certificate,
                clock_offset=round(cache.clock_offset, 3) if cache.clock_offset is not None else None,
                software_version=peer_state.software_version if peer_state else None,
                protocol=peer_state.protocol if peer_state else None,
                config_schema=peer_state.config_schema if peer_state else None,
            )
        sync_state = (
            "unpaired"
            if view.pairing is None
            else (sync.state if sync.state != "unpaired" else "unreachable")
        )
        message = sync.message
        if view.pairing is not None and cache.reachable is None:
            message = "the peer has not been asked yet"
        transitions = [Transition.model_validate(t) for t in local.transitions(session, view.name)]
        if peer_state is not None:
            transitions += peer_state.transitions
        transitions.sort(key=lambda t: t.time, reverse=True)
        split = runtime.split
        unknown = view.role == "unknown"
        return HaStatus(
            cluster=cluster_role(session, view.pairing),  # type: ignore[arg-type]  # the model checks the literal
            node=HaNode(
                name=view.name,
                # LocalView keeps it as a str; the model checks the literal.
                role=view.role,  # type: ignore[arg-type]
                groups=_groups(view),
                maintenance=view.maintenance,
                writer=view.writer,
                priority=view.running_node.priority,
                certificate=runtime.served_certificate,
                software_version=firmware.running_version(runtime.settings),
                config_schema=wire.CONFIG_SCHEMA,
                role_unknown_since=runtime.local.role_unknown_since if unknown else None,
                role_unknown_alarm=runtime.local.role_alarm and unknown,
            ),
            peer=peer,
            active=active_node(view, peer, split.active),
            sync=HaSync(
                # LocalView keeps it as a str; the model checks the literal.
                state=sync_state,  # type: ignore[arg-type]
                local_revision=view.head.revision if view.head else None,
                local_hash=view.head.shared_hash if view.head else None,
                peer_revision=peer_state.head.revision
                if peer_state and peer_state.head
                else sync.peer_revision,
                peer_hash=peer_state.head.shared_hash if peer_state and peer_state.head else sync.peer_hash,
                since=sync.since,
                message=message,
            ),
            conn_sync=ConnSync(
                enabled=view.running_node.sync_interface is not None,
                interface=view.running_node.sync_interface,
                # LocalView keeps it as a str; the model checks the literal.
                local_daemon=_daemon(view),  # type: ignore[arg-type]
                local_connections=local.connections(runtime.telemetry.latest),
                peer_connections=peer_state.connections if peer_state else None,
            ),
            split_brain=SplitBrain(
                active=split.active,
                since=split.since,
                groups=split.groups if split.active else [],
                holding=split.holding,
            ),
            transitions=transitions[: local.TRANSITIONS_SHOWN],
        )


def alert_sender(runtime: HaRuntime) -> NodeView:
    """This node as the alert dispatcher sees it: a pair's events go out from the active node only."""
    with runtime.session_scope() as session:
        view = local_view(session, runtime)
    # A cluster's nodes are all active and check their backends each for itself: each sends its own.
    sends = view.pairing is None or view.pairing.cluster_writer or view.role == "active"
    return NodeView(view.name, sends)
