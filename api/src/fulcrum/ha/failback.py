"""Fail-back without resets: a returning node takes the VIPs back only once its synced connection
table has caught up with the master's.

keepalived never preempts (render/keepalived.py renders every instance `nopreempt`): its preempt
takes the VIPs the moment the returning node hears a lower-priority advert, before the IPVS sync
daemon has sent it the connections opened while it was away, and the node then resets every one
of them. When a running VIP group preempts, the HA watcher of the node with the higher priority,
standby while its peer is active, waits until the ESTABLISHED entries its sync daemon installed
reach the master's count (IPVS's active connection counters on both nodes, the master's from its
status answer), or until `ha_failback_deadline` seconds have passed, and then takes the VIPs back
through the planned hand-over (handover.take_over: the peer's maintenance, a priority-0 advert).
Either way an `ha.failback` event says which it was and with what counts.
"""

from __future__ import annotations

import time

from fulcrum.ha import events, handover, local, replication
from fulcrum.ha.peer_client import PeerError
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import LocalView
from fulcrum.ha.wire import PeerStatus
from fulcrum.schemas.telemetry import Severity


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
    synced = local.established(runtime.telemetry.latest)
    waited = now - runtime.failback_waiting_since
    caught_up = synced is not None and peer.established is not None and synced >= peer.established
    if not caught_up and waited < deadline:
        return
    runtime.failback_waiting_since = None
    counts = f"{synced} of {peer.established} ESTABLISHED connections synced here"
    why = f"caught up after {waited:.1f} s" if caught_up else f"deadline of {deadline:g} s passed"
    detail = {"peer": peer.name, "synced": synced, "peer_established": peer.established,
              "waited_s": round(waited, 1), "deadline_hit": not caught_up}  # fmt: skip
    client = replication.client_for(view.pairing, view.name)
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
