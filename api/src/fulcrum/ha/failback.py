"""Fail-back without resets: a returning node takes the VIPs back only once its synced connection
table has caught up with the master's.

keepalived never preempts (render/keepalived.py renders every instance `nopreempt`): its preempt
takes the VIPs the moment the returning node hears a lower-priority advert, before the IPVS sync
daemon has sent it the connections opened while it was away, and the node then resets every one
of them. When a running VIP group preempts, the HA watcher of the node with the higher priority,
standby while its peer is active, waits until every ESTABLISHED connection the master holds is in
its own table (the master's list from `GET /peer/connections`, compared by client and virtual
address), or until `ha_failback_deadline` seconds have passed, and then takes the VIPs back
through the planned hand-over (handover.take_over: the peer's maintenance, a priority-0 advert).
Either way an `ha.failback` event says which it was and with what counts.

Counts alone were the gate before, and they were fooled: a node whose keepalived died keeps its
own connections in the kernel, so it "caught up after 0.0 s" with none of those opened on the
peer meanwhile, and took the VIPs back over them (tests/kernel/test_ha_failback.py, seen once in a
full run). Counts remain the gate only when the list cannot be had: a peer of an older version,
one holding more than `wire.MAX_ESTABLISHED_KEYS`, or no IPVS table here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from fulcrum.dataplane.ipvs_connections import established_keys
from fulcrum.ha import events, handover, local, replication
from fulcrum.ha.peer_client import PeerClient, PeerError
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import LocalView
from fulcrum.ha.wire import MAX_ESTABLISHED_KEYS, EstablishedConnections, PeerStatus
from fulcrum.schemas.telemetry import Severity


def established_here(conn_file: Path) -> EstablishedConnections:
    """This node's ESTABLISHED connections, as a returning peer asks for them."""
    keys = sorted(established_keys(conn_file) or ())
    return EstablishedConnections(keys=keys[:MAX_ESTABLISHED_KEYS], more=len(keys) > MAX_ESTABLISHED_KEYS)


@dataclass(frozen=True)
class Progress:
    synced: int | None  # of the peer's ESTABLISHED connections, those in the table here
    expected: int | None  # the peer's ESTABLISHED connections
    caught_up: bool
    compared: str  # "connections" (each one) or "counts"


def progress(runtime: HaRuntime, client: PeerClient, peer: PeerStatus) -> Progress:
    """How far this node's synced table has caught up with the peer's."""
    here = established_keys(runtime.settings.ipvs_conn_file)
    theirs = _peer_connections(client) if here is not None else None
    if here is not None and theirs is not None and not theirs.more:
        synced = len(here.intersection(theirs.keys))
        return Progress(synced, len(theirs.keys), synced == len(theirs.keys), "connections")
    counted = local.established(runtime.telemetry.latest)
    caught_up = counted is not None and peer.established is not None and counted >= peer.established
    return Progress(counted, peer.established, caught_up, "counts")


def _peer_connections(client: PeerClient) -> EstablishedConnections | None:
    try:
        response = client.get("/connections")
        return EstablishedConnections.model_validate(response.data) if response.ok else None
    except (PeerError, ValidationError):
        return None  # an older peer (its 404 is not signed), or one not answering now: the counts then


def should_take_back(view: LocalView, peer: PeerStatus) -> bool:
    """This node is the one a preempting pair wants active, and the peer holds the VIPs."""
    return (
        view.preempt
        and view.role == "standby"
        and peer.role == "active"
        and not peer.maintenance
        and view.running_node.priority > peer.priority
    )


def consider(runtime: HaRuntime, view: LocalView, peer: PeerStatus, now: float | None = None) -> None:
    """Called by the watcher after each answered poll: start, keep or end the wait, and take the
    VIPs back once the synced table has caught up or the deadline has passed."""
    now = time.monotonic() if now is None else now
    if not should_take_back(view, peer) or view.pairing is None:
        runtime.failback_waiting_since = None
        return
    deadline = runtime.settings.ha_failback_deadline
    if runtime.failback_waiting_since is None:
        runtime.failback_waiting_since = now
        events.emit(
            runtime.telemetry, "ha.failback_waiting", Severity.INFO,
            f"{peer.name} holds the VIPs and the groups preempt: this node takes them back once its synced "
            f"connection table has caught up ({peer.established} ESTABLISHED there), "
            f"at most {deadline:g} s from now",
            {"peer": peer.name, "peer_established": peer.established},
        )  # fmt: skip
    client = replication.client_for(view.pairing, view.name)
    found = progress(runtime, client, peer)
    waited = now - runtime.failback_waiting_since
    caught_up = found.caught_up
    if not caught_up and waited < deadline:
        return
    runtime.failback_waiting_since = None
    counts = f"{found.synced} of {found.expected} ESTABLISHED connections of {peer.name} synced here"
    if found.compared == "counts":
        counts += " (counted, not compared one by one)"
    why = f"caught up after {waited:.1f} s" if caught_up else f"deadline of {deadline:g} s passed"
    detail = {"peer": peer.name, "synced": found.synced, "peer_established": found.expected,
              "compared": found.compared, "waited_s": round(waited, 1),
              "deadline_hit": not caught_up}  # fmt: skip
    try:
        result = handover.take_over(runtime, client, peer.name, f"fail-back to {view.name} ({why})")
    except PeerError as error:
        events.emit(runtime.telemetry, "ha.failback", Severity.WARNING,
                    f"fail-back from {peer.name} not started: it refused to step down ({error})",
                    detail)  # fmt: skip
        return
    detail["handover_ms"] = result.ms
    if result.took_over:
        severity = Severity.INFO if caught_up else Severity.WARNING
        message = f"took the VIPs back from {peer.name} in {result.ms} ms, {why}: {counts}"
        if not caught_up:
            message += "; connections not synced here were reset"
    else:
        severity = Severity.CRITICAL
        message = (
            f"fail-back from {peer.name} failed: not MASTER of every group "
            f"{handover.HANDOVER_DEADLINE:g} s after it stepped down"
        )
    events.emit(runtime.telemetry, "ha.failback", severity, f"{message}; {result.cleared}", detail)
