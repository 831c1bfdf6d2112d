"""Moving the VIPs on purpose: maintenance, "make this node active", and the failover drill.

Maintenance writes keepalived's track file (settings.maintenance_file); a non-zero value puts
every VRRP instance in FAULT, which sends a priority-0 advert, so the peer takes over at once.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from fulcrum.config.types import Protocol
from fulcrum.errors import AppError, Conflict
from fulcrum.ha import events, local, replication
from fulcrum.ha.peer_client import PeerClient, PeerError
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import local_view
from fulcrum.ha.wire import PeerStatus
from fulcrum.schemas.ha import DrillResult, MaintenanceState, MakeActiveResult
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, revisions

HANDOVER_DEADLINE = 15.0  # seconds a takeover may take before it is reported as failed
POLL_SECONDS = 0.05
PROBE_RATE = 20.0  # connects per second
PROBE_TIMEOUT = 0.5
PROBE_TAIL = 1.0  # seconds the probe keeps running after the takeover
# IPVS balances the node's own outgoing connections to a VIP whether or not the node holds the
# VIP, so a probe from the node checks the service path, not which node holds the address.
PROBE_CAVEAT = (
    "the probe runs on this node, whose own IPVS answers connects to the VIPs whether or not it "
    "holds them: it shows the services kept answering through the drill, not which node held the "
    "VIPs; measure from a client to see that"
)


class HandoverTimeout(AppError):
    status_code = 504


def set_maintenance(
    session: Session, runtime: HaRuntime, actor: audit.Actor, enabled: bool, reason: str
) -> MaintenanceState:
    path = runtime.settings.maintenance_file
    assert path is not None
    local.set_maintenance(path, enabled)
    runtime.split.holding = False  # an operator's (or the peer's) word replaces a split-brain hold
    state = "on" if enabled else "off"
    message = f"maintenance {state} ({reason})" if reason else f"maintenance {state}"
    events.emit(
        runtime.telemetry,
        "ha.maintenance",
        Severity.WARNING if enabled else Severity.INFO,
        message,
        {"enabled": enabled, "reason": reason, "by": actor.username},
        session=session,
    )
    audit.record(session, actor, "ha.maintenance", state, {"reason": reason})
    return MaintenanceState(maintenance=enabled, file=str(path))


def _wait(condition: Callable[[], bool], deadline: float) -> bool:
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(POLL_SECONDS)
    return condition()


def _local_groups(runtime: HaRuntime) -> dict[str, str]:
    with runtime.session_scope() as session:
        return local_view(session, runtime).group_states


def _peer_and_client(runtime: HaRuntime) -> tuple[PeerClient, str, str, dict[str, str]]:
    with runtime.session_scope() as session:
        view = local_view(session, runtime)
        pairing = replication.require_pairing(session)
        return replication.client_for(pairing, view.name), pairing.peer_name, view.role, view.group_states


def _local_name(runtime: HaRuntime) -> str:
    with runtime.session_scope() as session:
        return local_view(session, runtime).name


def _order_peer(peer: PeerClient, enabled: bool, reason: str) -> None:
    response = peer.post("/maintenance", {"enabled": enabled, "reason": reason})
    if not response.ok:
        raise PeerError(f"the peer refused maintenance {'on' if enabled else 'off'}: {response.detail}")


@dataclass(frozen=True)
class Takeover:
    took_over: bool  # this node became MASTER of every group within HANDOVER_DEADLINE
    ms: int
    cleared: str  # what became of the peer's maintenance


def take_over(runtime: HaRuntime, peer: PeerClient, peer_name: str, why: str) -> Takeover:
    """Have the peer step down (its maintenance: a priority-0 advert), wait until this node is
    MASTER of every group, then let the peer come back as BACKUP. PeerError when the peer
    refuses to step down (nothing changed then)."""
    started = time.monotonic()
    _order_peer(peer, True, why)
    try:
        took_over = _wait(
            lambda: all(s == "MASTER" for s in _local_groups(runtime).values()), started + HANDOVER_DEADLINE
        )
        elapsed = int((time.monotonic() - started) * 1000)
    finally:
        try:
            _order_peer(peer, False, f"{why} finished")
            cleared = f"{peer_name} left maintenance and rejoins as BACKUP"
        except PeerError as error:
            cleared = f"clearing {peer_name}'s maintenance failed ({error}): clear it there"
    return Takeover(took_over, elapsed, cleared)


def make_active(runtime: HaRuntime, actor: audit.Actor) -> MakeActiveResult:
    """On the standby: have the peer step down, wait until this node is MASTER of every group,
    then let the peer come back (as BACKUP: keepalived never preempts)."""
    peer, peer_name, role, groups = _peer_and_client(runtime)
    if role == "active":
        raise Conflict("this node is already active")
    if not groups:
        raise Conflict("there are no VIP groups in the running configuration: nothing to hand over")
    if role == "maintenance":
        raise Conflict("this node is in maintenance; turn maintenance off first")
    try:
        result = take_over(runtime, peer, peer_name, f"hand over to {actor.username}'s make-active")
    except PeerError as error:
        raise Conflict(f"could not ask {peer_name} to step down: {error}") from error
    took_over, elapsed, cleared = result.took_over, result.ms, result.cleared
    with runtime.session_scope() as session:
        audit.record(
            session,
            actor,
            "ha.make_active",
            peer_name,
            {"took_over": took_over, "ms": elapsed},
            success=took_over,
        )
    if not took_over:
        raise HandoverTimeout(
            f"this node was not MASTER of every group {HANDOVER_DEADLINE:g} s after {peer_name} "
            f"stepped down; {cleared}"
        )
    return MakeActiveResult(handover_ms=elapsed, message=f"this node is MASTER of every group; {cleared}")


# --- the drill -----------------------------------------------------------------------------------


@dataclass
class Probe:
    """TCP connects to `targets` in turn at `rate` per second, each with its own timeout."""

    targets: list[tuple[str, int]]
    rate: float = PROBE_RATE
    timeout: float = PROBE_TIMEOUT
    total: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        if self.targets:
            self._thread = threading.Thread(target=self._run, name="ha-drill-probe", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)

    def _run(self) -> None:
        with ThreadPoolExecutor(max_workers=16, thread_name_prefix="ha-probe") as pool:
            index = 0
            next_at = time.monotonic()
            while not self._stop.is_set():
                pool.submit(self._connect, self.targets[index % len(self.targets)])
                index += 1
                next_at += 1.0 / self.rate
                self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _connect(self, target: tuple[str, int]) -> None:
        try:
            with socket.create_connection(target, timeout=self.timeout):
                ok, problem = True, ""
        except OSError as error:
            ok, problem = False, f"{target[0]}:{target[1]}: {error}"
        with self._lock:
            self.total += 1
            if not ok:
                self.failed += 1
                if len(self.failures) < 10:
                    self.failures.append(problem)


def probe_targets(runtime: HaRuntime) -> list[tuple[str, int]]:
    with runtime.session_scope() as session:
        running = revisions.snapshot_of(revisions.running(session))
    if running is None:
        return []
    return [
        (str(s.address), port)
        for s in running.services
        if s.enabled and s.protocol == Protocol.TCP and any(b.enabled for b in s.backends)
        for port in s.ports
    ]


def peer_status_or_none(peer: PeerClient) -> PeerStatus | None:
    """The peer's status answer, or None when it does not give one."""
    try:
        response = peer.get("/status")
        return PeerStatus.model_validate(response.data) if response.ok else None
    except (PeerError, ValueError):
        return None


def _handback_ms(runtime: HaRuntime) -> int | None:
    """From leaving maintenance until this node is BACKUP or MASTER of every group again (ready
    to take over, or holding the VIPs if its groups preempt); None if not within the deadline."""
    cleared = time.monotonic()
    if _wait(
        lambda: all(s in ("MASTER", "BACKUP") for s in _local_groups(runtime).values()),
        cleared + HANDOVER_DEADLINE,
    ):
        return int((time.monotonic() - cleared) * 1000)
    return None


def _all_master(states: list[str]) -> bool:
    return bool(states) and all(s == "MASTER" for s in states)


def _active_after(peer: PeerStatus | None, peer_name: str, runtime: HaRuntime, local_name: str) -> str | None:
    """Which node holds the VIPs once the drill is over (the groups' preempt decides)."""
    if peer is not None and _all_master([g.state for g in peer.groups]):
        return peer_name
    return local_name if _all_master(list(_local_groups(runtime).values())) else None


def drill(runtime: HaRuntime, actor: audit.Actor) -> DrillResult:
    """From the active node: probe the VIPs, step down, time the peer's takeover, come back as
    BACKUP. Every number is measured; what could not be measured is None and said so."""
    peer, peer_name, role, _groups = _peer_and_client(runtime)
    local_name = _local_name(runtime)
    if role != "active":
        raise Conflict(f"a drill starts on the active node; this node is {role}")
    status = peer_status_or_none(peer)
    if status is None:
        raise Conflict(f"{peer_name} does not answer: a drill would leave nobody to take over")
    if status.role != "standby":
        raise Conflict(f"{peer_name} is {status.role}, not standby: it could not take over")
    path = runtime.settings.maintenance_file
    assert path is not None
    targets = probe_targets(runtime)
    connections_before = local.connections(runtime.telemetry.latest)
    probe = Probe(targets)
    probe.start()
    handover_ms: int | None = None
    final: PeerStatus | None = None
    try:
        time.sleep(0.5)  # a baseline: failures before the step-down are not the failover's
        started = time.monotonic()
        local.set_maintenance(path, True)

        def peer_took_over() -> bool:
            nonlocal final
            final = peer_status_or_none(peer)
            return final is not None and _all_master([g.state for g in final.groups])

        if _wait(peer_took_over, started + HANDOVER_DEADLINE):
            handover_ms = int((time.monotonic() - started) * 1000)
            time.sleep(PROBE_TAIL)
    finally:
        local.set_maintenance(path, False)
        probe.stop()
    handback_ms = _handback_ms(runtime)
    after = peer_status_or_none(peer)
    peer_connections = after.connections if after else (final.connections if final else None)
    notes = [PROBE_CAVEAT if targets else "no enabled TCP service with an enabled backend: nothing to probe"]
    if handover_ms is None:
        notes.insert(
            0,
            f"{peer_name} did not report MASTER of every group within {HANDOVER_DEADLINE:g} s; "
            "maintenance was cleared here",
        )
    if handback_ms is None:
        notes.insert(
            0,
            f"this node did not report BACKUP or MASTER for every group within {HANDOVER_DEADLINE:g} "
            "s of leaving maintenance",
        )
    if probe.failures:
        notes.append("first failures: " + "; ".join(probe.failures[:3]))
    result = DrillResult(
        handover_ms=handover_ms,
        probe_failed=probe.failed,
        probe_total=probe.total,
        probe_targets=[f"{a}:{p}" for a, p in targets],
        connections_before=connections_before,
        peer_connections_after=peer_connections,
        handback_ms=handback_ms,
        active_after=_active_after(after, peer_name, runtime, local_name),
        message="; ".join(notes),
    )
    text = f"failover drill to {peer_name}: " + (
        f"taken over in {handover_ms} ms" if handover_ms is not None else "no takeover"
    )
    with runtime.session_scope() as session:
        events.emit(
            runtime.telemetry,
            "ha.drill",
            Severity.INFO if handover_ms is not None else Severity.CRITICAL,
            f"{text}, {probe.failed} of {probe.total} probe connects failed",
            result.model_dump(mode="json"),
            session=session,
        )
        audit.record(
            session,
            actor,
            "ha.drill",
            peer_name,
            result.model_dump(mode="json"),
            success=handover_ms is not None,
        )
    return result
