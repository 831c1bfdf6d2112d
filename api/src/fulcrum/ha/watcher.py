"""The HA watcher: every `ha_sync_interval` seconds (and at once after a local change) it reads
this node's VRRP state from the data plane (recording it where keepalived's notification was
lost, raising an alarm while the role cannot be read), polls the peer (on a cluster's writer:
every member, fulcrum.ha.cluster), records reachability,
pushes the shared configuration when the peer is behind, notices a conflict, watches for a
split brain, stepping this node down if it is the one to yield, and takes the VIPs back when the
groups preempt and this node's synced connection table has caught up (fulcrum.ha.failback).
"""

from __future__ import annotations

import logging
import threading
import time

from fulcrum.ha import cluster, events, failback, local, membership, replication
from fulcrum.ha.peer_client import PeerAuthFailed, PeerError, PeerUntrusted
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.status import both_master, by_priority, relation
from fulcrum.ha.view import LocalView, local_view
from fulcrum.ha.wire import PeerStatus
from fulcrum.render.keepalived import INSTANCE_PREFIX
from fulcrum.schemas.telemetry import Severity

log = logging.getLogger(__name__)


def instance_name_of(group: str) -> str:
    return f"{INSTANCE_PREFIX}{group}"


def keep_local_state(runtime: HaRuntime, view: LocalView, now: float | None = None) -> None:
    """Record a group state the data plane has shown for a while but keepalived never reported
    (its notification was lost, or never sent), and raise or clear the unknown-role alarm."""
    for group in view.groups:
        told = view.reported[group.name].state
        if runtime.disagrees_long(group.name, group.state not in (told, "UNKNOWN"), now):
            runtime.telemetry.record(
                "vrrp_state", Severity.CRITICAL if group.state == "FAULT" else Severity.INFO,
                f"VRRP instance {instance_name_of(group.name)} is {group.state} (was {told}): read from the "
                "data plane, keepalived's notification did not arrive",
                detail={"scope": "INSTANCE", "name": instance_name_of(group.name), "state": group.state,
                        "priority": None, "previous": told, "source": "dataplane",
                        "vips_held": list(group.vips_held)},
            )  # fmt: skip
            runtime.disagrees_long(group.name, False)
    change = runtime.role_unknown(
        view.pairing is not None and view.role == "unknown" and bool(view.groups), now
    )
    if change == "raise":
        states = ", ".join(f"{g.name} {g.state}" for g in view.groups)
        events.emit(runtime.telemetry, "ha.role_unknown", Severity.CRITICAL,
                    f"the role of this node cannot be read ({states}): neither the data plane nor keepalived "
                    "tells it",
                    {"groups": {g.name: g.state for g in view.groups}})  # fmt: skip
    elif change == "clear":
        events.emit(
            runtime.telemetry,
            "ha.role_known",
            Severity.INFO,
            f"the role of this node is known again: {view.role}",
            {"role": view.role},
        )


def poll(runtime: HaRuntime) -> tuple[LocalView, PeerStatus | None] | None:
    """Read this node's state, then ask the peer for its status; None when this node is not paired."""
    with runtime.session_scope() as session:
        view = local_view(session, runtime)
    keep_local_state(runtime, view)
    if view.pairing is None:
        runtime.forget_peer()
        return None
    peer = replication.client_for(view.pairing, view.name)
    peer_name = view.pairing.peer_name
    try:
        response = peer.get("/status")
        if response.clock_offset is not None:
            runtime.peer_clock(peer_name, response.clock_offset)
        if not response.ok:
            raise PeerError(f"the peer answered its status request with {response.detail}")
        status = PeerStatus.model_validate(response.data)
    except PeerUntrusted as error:
        runtime.peer_failed(peer_name, str(error), error.presented)
        return view, None
    except PeerAuthFailed as error:
        if error.clock_offset is not None:  # a refusal still dates itself: the skew may be why
            runtime.peer_clock(peer_name, error.clock_offset)
        runtime.peer_failed(peer_name, str(error))
        return view, None
    except (PeerError, ValueError) as error:
        runtime.peer_failed(peer_name, str(error))
        return view, None
    runtime.peer_answered(status)
    return view, status


def tick(runtime: HaRuntime) -> None:
    with runtime.pairing_lock:  # not between a pairing and its forced push
        _tick(runtime)


def _tick(runtime: HaRuntime) -> None:
    membership.announce_certificate(runtime)  # first: the peer cannot reach a renewed certificate before it
    cluster.tick(runtime)  # a cluster's writer: every member (no pairing of its own, so poll() stops)
    polled = poll(runtime)
    if polled is None:
        return
    view, peer = polled
    if peer is None:
        return
    guard_split_brain(runtime, view, peer)
    failback.consider(runtime, view, peer)
    with runtime.session_scope() as session:
        view = local_view(session, runtime)  # the writer flag may have changed with the peer's answer
        users = replication.users_hash(replication.users_payload(session))
    seen = relation(view.head, view.history, peer.head, peer.history)
    peer_revision = peer.head.revision if peer.head else None
    peer_hash = peer.head.shared_hash if peer.head else None
    if seen == "in_sync":
        differs = users != peer.users_hash or (
            view.head is not None and peer.head is not None and view.head.lineage != peer.head.lineage
        )
        if differs and view.writer:
            replication.push(runtime)
        else:
            runtime.set_sync(
                "in_sync",
                f"{peer.name} runs the same shared configuration (its revision {peer_revision})",
                peer_revision,
                peer_hash,
            )
    elif seen == "peer_behind":
        assert view.head is not None
        if view.pairing is not None and view.pairing.cluster_writer:
            # A member never pushes: its writer's history lost what the member has (a restore?).
            runtime.set_sync(
                "peer_behind",
                f"the cluster's writer {peer.name} has older configuration than this node (its revision "
                f"{peer_revision}); sync this member from there",
                peer_revision,
                peer_hash,
            )
        elif runtime.may_push(view.head.lineage):
            replication.push(runtime)
        else:
            with runtime.lock:
                message = runtime.sync.message
            runtime.set_sync("peer_behind", message, peer_revision, peer_hash)
    elif seen == "peer_ahead":
        runtime.set_sync(
            "peer_ahead",
            f"{peer.name} has newer configuration (its revision {peer_revision}); it sends it here",
            peer_revision,
            peer_hash,
        )
    else:
        assert view.head is not None and peer.head is not None
        message = (
            f"configuration conflict with {peer.name}: both nodes changed the shared configuration since "
            "they last "
            f"agreed (here revision {view.head.revision}, there revision {peer_revision}); choose the winner"
        )
        runtime.record_conflict(
            view.head.lineage, peer.head.lineage, message
        )  # the event first: the status then implies it
        runtime.set_sync("conflict", message, peer_revision, peer_hash)


def guard_split_brain(
    runtime: HaRuntime, view: LocalView, peer: PeerStatus, now: float | None = None
) -> None:
    now = time.monotonic() if now is None else now
    mine = view.group_states
    theirs = {g.name: g.state for g in peer.groups}
    split = runtime.split
    maintenance_file = runtime.settings.maintenance_file
    assert maintenance_file is not None
    if split.observe(now, both_master(mine, theirs), peer_stepped_down=peer.maintenance):
        events.emit(
            runtime.telemetry, "ha.split_brain", Severity.CRITICAL,
            f"split brain: this node and {peer.name} are both MASTER of {', '.join(split.groups)}",
            {"groups": split.groups, "peer": peer.name},
        )  # fmt: skip
        if not by_priority(view.side, peer.name, peer.priority):
            local.set_maintenance(maintenance_file, True)
            split.start_hold(now)
            events.emit(
                runtime.telemetry, "ha.maintenance", Severity.WARNING,
                f"maintenance on: stepping down for at least {split.hold:.0f} s to end the split brain "
                f"({peer.name} has precedence)",
                {"enabled": True, "reason": "split_brain"},
            )  # fmt: skip
    peer_master_of_all = bool(theirs) and all(state == "MASTER" for state in theirs.values())
    if split.may_release(now, peer_master_of_all, "MASTER" in mine.values()):
        local.set_maintenance(maintenance_file, False)
        split.holding = False
        events.emit(
            runtime.telemetry, "ha.maintenance", Severity.INFO,
            f"maintenance off: the split brain is over, {peer.name} is MASTER of every group",
            {"enabled": False, "reason": "split_brain"},
        )  # fmt: skip


class Watcher(threading.Thread):
    def __init__(self, runtime: HaRuntime, interval: float) -> None:
        super().__init__(name="ha-watcher", daemon=True)
        self.runtime = runtime
        self.interval = interval
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()
        self.runtime.wakeup.set()
        if self.is_alive():
            self.join(timeout=10)

    def run(self) -> None:
        while not self._stopping.is_set():
            self.runtime.wakeup.clear()
            try:
                tick(self.runtime)
            except Exception:
                log.exception("HA watcher")
            self.runtime.wakeup.wait(self.interval)
