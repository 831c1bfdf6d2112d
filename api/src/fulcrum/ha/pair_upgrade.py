"""Upgrading an HA pair with one failover, driven by the active node (POST /ha/upgrade).

The steps, in order, each recorded with its times and what was found (fulcrum.ha.upgrade_record:
a file on /data, which both slots share, so the node that restarts itself finds where it was; the
peer gets it with each status, so its dashboard follows the upgrade too):

  send_bundle   this node's waiting bundle is streamed to the standby, which checks it with RAUC
                against its own keyring and compatible string (fulcrum.ha.peer_firmware)
  install_peer  the standby writes it into its inactive slot, still serving as the standby
  restart_peer  the standby restarts into it; done once its boot check found the new system
                good, and it is back as the standby, running the new version, in sync
  install_self  this node writes it into its own inactive slot, still holding the VIPs
  hand_over     once the standby's synced connection table holds what this node's does (or after
                ha_failback_deadline, as the fail-back waits), this node enters maintenance (a
                priority-0 advert): the standby takes every VIP. The one failover
  restart_self  this node restarts into the new slot, still in maintenance, so it cannot take the
                VIPs back as it comes up; done once its boot check found the new system good
  rejoin        maintenance off: this node is the standby (or, where the VIP groups preempt, it
                takes the VIPs back by the pair's own failback rule, fulcrum.ha.failback)

A node that already runs the new version skips its own steps. A step that fails stops the upgrade
there, with the reason: the standby's boot check rolls a bad new system back by itself (and this
node, not yet touched, keeps the VIPs); after the hand-over, a failure takes this node out of
maintenance again so that the pair has its standby. An admin may stop it too (POST
/ha/upgrade/stop): the driver's next round does, between two of its checks, so a step's action
under way (a bundle streaming, an install, a restart) runs to its end, and the message says which
node has the new version installed, to boot at its next restart.

The driver is a background round in the API process (PairUpgradeDriver): each round moves the
running step on when its condition holds, so a restart of this node's API, or of the node itself,
resumes where the record says.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fulcrum.apply.client import Applier
from fulcrum.errors import AppError, Conflict
from fulcrum.ha import events, handover, local, replication, upgrade_record
from fulcrum.ha.peer_client import PeerClient, PeerError
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import local_view
from fulcrum.ha.wire import PeerStatus
from fulcrum.periodic import PeriodicWorker
from fulcrum.schemas.firmware import FirmwareStatus
from fulcrum.schemas.ha import PairUpgrade, PairUpgradeStatus, PairUpgradeStep, PairUpgradeStepName
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, firmware, firmware_upgrade

log = logging.getLogger(__name__)

PEER_PROTOCOL = 3  # the first peer API with the /peer/firmware endpoints
STEPS: tuple[PairUpgradeStepName, ...] = (
    "send_bundle", "install_peer", "restart_peer", "install_self", "hand_over", "restart_self", "rejoin",
)  # fmt: skip
PEER_STEPS = frozenset({"send_bundle", "install_peer", "restart_peer"})
SELF_STEPS = frozenset({"install_self", "hand_over", "restart_self", "rejoin"})
# Seconds a step may take, from its start. Generous: under software emulation an install took
# about 3 minutes and a restart to a good boot check 3 to 4; the boot check itself waits up to
# boot_check_deadline (15 minutes) for a slow new system.
STEP_DEADLINES: dict[str, float] = {
    "send_bundle": 3600, "install_peer": 3600, "restart_peer": 3600, "install_self": 3600,
    "hand_over": 600, "restart_self": 3600, "rejoin": 300,
}  # fmt: skip
SEND_TIMEOUT = 3600.0  # the whole stream of one bundle to the peer
PEER_CALL_TIMEOUT = 60.0  # the peer's firmware calls run RAUC, which takes seconds
ROUND_SECONDS = 2.0
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# Two admins pressing Start at once: the second finds the first's record running and is refused.
_STARTING = threading.Lock()


class StepFailed(Exception):
    """The running step cannot succeed: the upgrade stops here, with this reason."""


# --- the record --------------------------------------------------------------------------------------


def read(runtime: HaRuntime) -> PairUpgrade | None:
    return upgrade_record.read(runtime.settings)


def write(runtime: HaRuntime, record: PairUpgrade) -> None:
    upgrade_record.write(runtime.settings, record)


def status(runtime: HaRuntime) -> PairUpgradeStatus:
    """This node's record, and the one the peer sent with its last status (the upgrade it drives)."""
    with runtime.lock:
        peer, seen = runtime.peer.status, runtime.peer.last_seen
    return PairUpgradeStatus(
        upgrade=read(runtime),
        peer_upgrade=peer.pair_upgrade if peer is not None else None,
        peer_seen_at=seen if peer is not None and peer.pair_upgrade is not None else None,
    )


def _now() -> datetime:
    return datetime.now(UTC)


def _boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


# --- starting ------------------------------------------------------------------------------------------


def start(runtime: HaRuntime, actor: audit.Actor) -> PairUpgradeStatus:
    """Check that the pair can be upgraded now and record the upgrade; the driver's next round
    starts it. Conflict, naming what is missing, where it cannot."""
    with _STARTING:
        record = _checked_record(runtime, actor)
        upgrade_record.clear_stop(runtime.settings)  # asked of an earlier upgrade as it ended
        write(runtime, record)
    with runtime.session_scope() as session:
        audit.record(session, actor, "ha.upgrade", record.version, {"peer": record.peer})
    started = f"pair upgrade to {record.version} started by {actor.username}"
    events.emit(runtime.telemetry, "ha.upgrade", Severity.INFO,
                f"{started}: {record.peer} first, then {record.node}", _event_detail(record))  # fmt: skip
    return PairUpgradeStatus(upgrade=record)


def _checked_record(runtime: HaRuntime, actor: audit.Actor) -> PairUpgrade:
    current = read(runtime)
    if current is not None and current.state == "running":
        raise Conflict(f"a pair upgrade to {current.version} is running already")
    with runtime.session_scope() as session:
        view = local_view(session, runtime)
        pairing = replication.require_pairing(session)
    if pairing.cluster_writer:
        raise Conflict(
            "this node is a member of a cluster, not one node of a pair: upgrade a cluster's nodes one at a "
            "time (drain it on the writer, upgrade it on its Firmware page, return it to service)"
        )
    if view.role != "active":
        raise Conflict(f"a pair upgrade starts on the active node; this node is {view.role}")
    with runtime.lock:
        peer, reachable, sync_state = runtime.peer.status, runtime.peer.reachable, runtime.sync.state
        split = runtime.split.active
    if split:
        raise Conflict("split brain: resolve it before upgrading the pair")
    if not reachable or peer is None:
        raise Conflict(f"{pairing.peer_name} does not answer: an upgrade needs the standby")
    if peer.pair_upgrade is not None and peer.pair_upgrade.state == "running":
        raise Conflict(
            f"{pairing.peer_name} drives a pair upgrade to {peer.pair_upgrade.version}: wait until it ends"
        )
    if peer.role != "standby":
        raise Conflict(f"{pairing.peer_name} is {peer.role}, not standby: it could not take over")
    if peer.protocol < PEER_PROTOCOL:
        raise Conflict(
            f"{pairing.peer_name} runs {peer.software_version or 'a version'} whose peer API is too old to "
            f"be upgraded from here (protocol {peer.protocol}, needs {PEER_PROTOCOL}): upgrade it on its "
            "own page"
        )
    if sync_state != "in_sync":
        raise Conflict(f"the pair is not in sync ({sync_state}): both nodes must run the same revision")
    firmware.rauc_system(runtime.settings)
    bundle = firmware.pending_bundle(runtime.settings)
    if bundle is None:
        raise Conflict("no firmware bundle is waiting on this node: upload one (System → Firmware) first")
    firmware_upgrade.refuse_while_installing(runtime.settings, "upgrade the pair")
    self_current = firmware.running_version(runtime.settings) == bundle.version
    peer_current = peer.software_version == bundle.version
    if self_current and peer_current:
        raise Conflict(f"both nodes run {bundle.version} already")
    now = _now()
    steps = []
    for name in STEPS:
        skipped = (name in PEER_STEPS and peer_current) or (name in SELF_STEPS and self_current)
        owner = pairing.peer_name if name in PEER_STEPS else view.name
        steps.append(
            PairUpgradeStep(
                name=name,
                state="skipped" if skipped else "pending",
                detail=f"{owner} runs {bundle.version} already" if skipped else None,
            )
        )
    return PairUpgrade(
        version=bundle.version,
        node=view.name,
        peer=pairing.peer_name,
        started_by=actor.username,
        state="running",
        steps=steps,
        started_at=now,
        updated_at=now,
    )


def _event_detail(record: PairUpgrade) -> dict[str, str | None]:
    return {"version": record.version, "node": record.node, "peer": record.peer, "state": record.state,
            "message": record.message}  # fmt: skip


def request_stop(runtime: HaRuntime, actor: audit.Actor) -> PairUpgradeStatus:
    """Ask the driver to stop the upgrade this node drives; its next round does (the module's
    docstring says at which point). Conflict when none runs here."""
    with _STARTING:
        record = read(runtime)
        if record is None or record.state != "running":
            with runtime.lock:
                peer = runtime.peer.status
            driven = peer.pair_upgrade if peer is not None else None
            if driven is not None and driven.state == "running":
                raise Conflict(f"{driven.node} drives the pair upgrade to {driven.version}: stop it there")
            raise Conflict("no pair upgrade is running on this node")
        upgrade_record.request_stop(runtime.settings, actor.username)
    with runtime.session_scope() as session:
        audit.record(session, actor, "ha.upgrade.stop", record.version, {"peer": record.peer})
    return status(runtime)


# --- the driver ----------------------------------------------------------------------------------------


@dataclass
class Context:
    runtime: HaRuntime
    applier: Applier
    record: PairUpgrade
    step: PairUpgradeStep

    @property
    def actor(self) -> audit.Actor:
        return audit.Actor(username=self.record.started_by, source="pair upgrade")

    def peer(self) -> PeerClient:
        with self.runtime.session_scope() as session:
            return replication.client_for(replication.require_pairing(session), self.record.node)

    def save(self) -> None:
        write(self.runtime, self.record)


def advance(runtime: HaRuntime, applier: Applier) -> None:
    """One round: move the running upgrade on by as many steps as are ready."""
    record = read(runtime)
    if record is None or record.state != "running":
        return
    for step in record.steps:
        if step.state in ("done", "skipped"):
            continue
        context = Context(runtime, applier, record, step)
        if record.stop_requested_by is not None:
            _stop(context, record.stop_requested_by)
            return
        if step.state == "pending":
            step.state, step.started_at = "running", _now()
            context.save()
        try:
            detail = HANDLERS[step.name](context)
            if detail is None and _overdue(step):
                raise StepFailed(f"not done {STEP_DEADLINES[step.name]:g} s after it started")
        except StepFailed as failure:
            _fail(context, str(failure))
            return
        except (PeerError, AppError, OSError, ValueError) as error:  # passing: the deadline decides
            message = error.message if isinstance(error, AppError) else str(error)
            if _overdue(step):
                _fail(context, message)
                return
            step.detail = f"waiting: {message}"
            context.save()
            return
        if detail is None:  # not yet: the next round looks again
            return
        step.state, step.ended_at, step.detail = "done", _now(), detail
        context.save()
    record.state, record.message = "done", f"both nodes run {record.version}"
    write(runtime, record)
    log.info("pair upgrade to %s: done", record.version)
    events.emit(runtime.telemetry, "ha.upgrade", Severity.INFO, f"pair upgrade to {record.version} done: "
                f"{record.message}", _event_detail(record))  # fmt: skip


def _overdue(step: PairUpgradeStep) -> bool:
    assert step.started_at is not None
    return (_now() - step.started_at).total_seconds() > STEP_DEADLINES[step.name]


def _fail(context: Context, reason: str) -> None:
    record, step = context.record, context.step
    step.state, step.ended_at, step.detail = "failed", _now(), reason
    record.state = "failed"
    left = _leave_maintenance(context)
    record.message = f"{_label(step)} failed: {reason}{left}"
    context.save()
    log.warning("pair upgrade to %s: %s", record.version, record.message)
    stopped = f"pair upgrade to {record.version} stopped: {record.message}"
    events.emit(context.runtime.telemetry, "ha.upgrade", Severity.CRITICAL, stopped, _event_detail(record))


def _stop(context: Context, username: str) -> None:
    """An admin's stop, at the step that is next or under way."""
    record, step, settings = context.record, context.step, context.runtime.settings
    when = "during" if step.state == "running" else "before"
    if step.state == "running":
        step.state, step.ended_at = "stopped", _now()
    record.state, record.stop_requested_by = "stopped", None
    left = _leave_maintenance(context)
    record.message = f"stopped by {username} {when} {_label(step)}{_installed_not_booted(record)}{left}"
    context.save()
    upgrade_record.clear_stop(settings)
    log.warning("pair upgrade to %s: %s", record.version, record.message)
    events.emit(context.runtime.telemetry, "ha.upgrade", Severity.WARNING,
                f"pair upgrade to {record.version} {record.message}", _event_detail(record))  # fmt: skip


def _label(step: PairUpgradeStep) -> str:
    return step.name.replace("_", " ")


def _installed_not_booted(record: PairUpgrade) -> str:
    """Which node holds the new version in its other slot without having restarted into it: RAUC
    has made that slot the next to boot, as after an install on System → Firmware."""
    steps = {step.name: step for step in record.steps}

    def asked(step: PairUpgradeStep) -> bool:  # done, or under way (an install goes on to its end)
        return step.state == "done" or step.requested_at is not None

    waiting = [
        node
        for node, install, restart in (
            (record.peer, steps["install_peer"], steps["restart_peer"]),
            (record.node, steps["install_self"], steps["restart_self"]),
        )
        if asked(install) and not asked(restart)
    ]
    if not waiting:
        return ""
    has = "has" if len(waiting) == 1 else "have"
    return (
        f"; {' and '.join(waiting)} {has} {record.version} installed, to boot at the next restart "
        f"(System → Firmware on that node cancels it)"
    )


def _leave_maintenance(context: Context) -> str:
    """After the hand-over this node is in maintenance for its own restart: back out of it, the
    pair's standby. What happened, as a clause for the record's message."""
    record, step = context.record, context.step
    handed_over = any(s.name == "hand_over" and s.state == "done" for s in record.steps)
    if not (handed_over or (step.name == "hand_over" and step.state != "pending")):
        return ""
    try:
        with context.runtime.session_scope() as session:
            handover.set_maintenance(session, context.runtime, context.actor, False, "pair upgrade stopped")
    except (AppError, OSError) as error:
        return f"; leaving maintenance failed ({error}): clear it on {record.node}"
    return f"; {record.node} left maintenance"


# --- the steps: each returns what it found when done, None to wait, or raises StepFailed ---------------


def _send_bundle(context: Context) -> str | None:
    settings = context.runtime.settings
    bundle = firmware.pending_bundle(settings)
    if bundle is None or bundle.version != context.record.version:
        raise StepFailed(f"the bundle for {context.record.version} is no longer waiting on this node")
    path = firmware.firmware_dir(settings) / firmware.BUNDLE_FILE
    answer = context.peer().post_file("/firmware/bundle", path, bundle.sha256, timeout=SEND_TIMEOUT)
    if not answer.ok:
        raise StepFailed(f"{context.record.peer} refused the bundle: {answer.detail}")
    return f"{context.record.peer} checked the bundle with RAUC and keeps it ({bundle.size} bytes)"


def _install_peer(context: Context) -> str | None:
    peer = context.peer()
    if context.step.requested_at is None:
        answer = peer.request("POST", "/firmware/install", None, PEER_CALL_TIMEOUT)
        if not answer.ok:
            raise StepFailed(f"{context.record.peer} did not start the install: {answer.detail}")
        context.step.requested_at = _now()
        context.save()
    return _install_outcome(context, _peer_firmware(peer), context.record.peer)


def _restart_peer(context: Context) -> str | None:
    peer = context.peer()
    name, version = context.record.peer, context.record.version
    if context.step.requested_at is None:
        answer = peer.request("POST", "/firmware/reboot", None, PEER_CALL_TIMEOUT)
        if not answer.ok:
            raise StepFailed(f"{name} did not restart: {answer.detail}")
        context.step.requested_at, context.step.detail = _now(), f"{name} is restarting"
        context.save()
        return None
    state = _peer_firmware(peer)
    upgrade = state.upgrade
    if upgrade is not None and upgrade.version == version and upgrade.state in ("failed", "rolled_back"):
        raise StepFailed(
            f"{name}'s new system was not healthy and went back to slot {upgrade.from_slot}"
            f"{f': {upgrade.reason}' if upgrade.reason else ''}; {context.record.node} was not touched "
            "and keeps the VIPs"
        )
    if upgrade is None or upgrade.version != version or upgrade.state != "good":
        context.step.detail = f"waiting for {name}'s boot check ({upgrade.state if upgrade else 'no record'})"
        context.save()
        return None
    status = _peer_status(peer)
    with context.runtime.session_scope() as session:
        view = local_view(session, context.runtime)
    head = view.head
    behind = status.head is None or head is None or status.head.shared_hash != head.shared_hash
    if status.software_version != version or status.role != "standby" or behind:
        context.step.detail = (
            f"{name} runs {status.software_version}, {status.role}, "
            f"{'not yet in sync' if behind else 'in sync'}: waiting for it to be the standby, in sync"
        )
        context.save()
        return None
    revision = status.head.revision if status.head else "?"
    return f"{name} runs {version} (slot good), standby, in sync at revision {revision}"


def _install_self(context: Context) -> str | None:
    settings = context.runtime.settings
    if context.step.requested_at is None:
        try:
            with context.runtime.session_scope() as session:
                firmware_upgrade.start_install(session, context.actor, settings)
        except AppError as error:
            raise StepFailed(f"{context.record.node} did not start the install: {error.message}") from None
        context.step.requested_at = _now()
        context.save()
    return _install_outcome(context, firmware_upgrade.status(settings), context.record.node)


def _hand_over(context: Context) -> str | None:
    runtime, peer_name = context.runtime, context.record.peer
    peer = context.peer()
    status = _peer_status(peer)
    if status.role != "standby" or status.software_version != context.record.version:
        raise StepFailed(f"{peer_name} is {status.role} on {status.software_version}: not handing over to it")
    if not status.groups:
        return f"{peer_name} has no VIP groups: nothing to hand over"
    # As the fail-back does (fulcrum.ha.failback): the restarted standby's connection table fills
    # only as traffic flows; hand over once it holds what this node holds, or at the deadline.
    held = local.established(runtime.telemetry.latest)
    synced = status.established
    assert context.step.started_at is not None
    waited = (_now() - context.step.started_at).total_seconds()
    if held and (synced or 0) < held and waited < runtime.settings.ha_failback_deadline:
        context.step.detail = f"waiting for {peer_name}'s synced connections: {synced or 0} of {held}"
        context.save()
        return None
    started = time.monotonic()
    with runtime.session_scope() as session:
        handover.set_maintenance(
            session, runtime, context.actor, True, f"pair upgrade: hand over to {peer_name}"
        )
    deadline = started + handover.HANDOVER_DEADLINE
    # What the step waited for before the hand-over: the standby's synced connections, or nothing.
    before = ""
    if waited >= 1:
        before = f" ({waited:.0f} s for its synced connections first: {synced or 0} of {held})"
    while time.monotonic() < deadline:
        taken = handover.peer_status_or_none(peer)
        if taken is not None and taken.groups and all(g.state == "MASTER" for g in taken.groups):
            return f"{peer_name} holds every VIP after {int((time.monotonic() - started) * 1000)} ms{before}"
        time.sleep(handover.POLL_SECONDS * 4)
    raise StepFailed(f"{peer_name} did not take every VIP within {handover.HANDOVER_DEADLINE:g} s")


def _restart_self(context: Context) -> str | None:
    record, step = context.record, context.step
    if step.requested_at is None:
        record.boot_id, step.requested_at = _boot_id(), _now()
        step.detail = f"{record.node} is restarting"
        context.save()  # before the restart: the next process reads it
        try:
            with context.runtime.session_scope() as session:
                firmware_upgrade.reboot(session, context.actor, context.applier, context.runtime.settings)
        except AppError as error:
            raise StepFailed(f"{record.node} did not restart: {error.message}") from None
        return None
    if _boot_id() == record.boot_id:
        return None  # not restarted yet (the deadline decides)
    upgrade = firmware_upgrade.status(context.runtime.settings).upgrade
    if upgrade is None or upgrade.version != record.version:
        raise StepFailed(f"{record.node} restarted without a record of the upgrade to {record.version}")
    if upgrade.state in ("failed", "rolled_back"):
        raise StepFailed(
            f"{record.node}'s new system was not healthy and went back to slot {upgrade.from_slot}"
            f"{f': {upgrade.reason}' if upgrade.reason else ''}; {record.peer} runs {record.version} and "
            "holds the VIPs"
        )
    if upgrade.state != "good":
        step.detail = f"waiting for {record.node}'s boot check ({upgrade.state})"
        context.save()
        return None
    return f"{record.node} runs {record.version} (slot {upgrade.to_slot} good)"


def _rejoin(context: Context) -> str | None:
    runtime = context.runtime
    if context.step.requested_at is None:
        with runtime.session_scope() as session:
            handover.set_maintenance(session, runtime, context.actor, False, "pair upgrade done")
        context.step.requested_at = _now()
        context.save()
    with runtime.session_scope() as session:
        states = local_view(session, runtime).group_states
    if not states:
        return f"{context.record.node} left maintenance (no VIP groups)"
    if not all(state in ("BACKUP", "MASTER") for state in states.values()):
        return None
    role = (
        "holds the VIPs again (its groups preempt)"
        if all(s == "MASTER" for s in states.values())
        else "is the standby"
    )
    return f"{context.record.node} left maintenance and {role}"


HANDLERS: dict[str, Callable[[Context], str | None]] = {
    "send_bundle": _send_bundle,
    "install_peer": _install_peer,
    "restart_peer": _restart_peer,
    "install_self": _install_self,
    "hand_over": _hand_over,
    "restart_self": _restart_self,
    "rejoin": _rejoin,
}


def _install_outcome(context: Context, state: FirmwareStatus, node: str) -> str | None:
    upgrade, version = state.upgrade, context.record.version
    if upgrade is None or upgrade.version != version:
        return None
    if upgrade.state == "install_failed":
        raise StepFailed(f"installing {version} on {node} failed: {upgrade.reason or 'no reason given'}")
    if upgrade.state == "installing":
        install = state.install
        if install is not None and install.progress is not None:
            context.step.detail = f"{node}: {install.message or 'installing'} ({install.progress} %)"
            context.save()
        return None
    return f"{version} written to slot {upgrade.to_slot} of {node}"


def _peer_firmware(peer: PeerClient) -> FirmwareStatus:
    answer = peer.get("/firmware", timeout=PEER_CALL_TIMEOUT)
    if not answer.ok:
        raise PeerError(f"the peer's firmware state: {answer.detail}")
    return FirmwareStatus.model_validate(answer.data)


def _peer_status(peer: PeerClient) -> PeerStatus:
    answer = peer.get("/status")
    if not answer.ok:
        raise PeerError(f"the peer's status: {answer.detail}")
    return PeerStatus.model_validate(answer.data)


class PairUpgradeDriver(PeriodicWorker):
    """Moves a running pair upgrade on every ROUND_SECONDS (idle otherwise: one small file read)."""

    thread_name = "pair-upgrade"

    def __init__(self, runtime: HaRuntime, applier: Applier) -> None:
        super().__init__()
        self.runtime = runtime
        self.applier = applier

    def seconds_between_rounds(self) -> float:
        return ROUND_SECONDS

    def run_once(self) -> None:
        advance(self.runtime, self.applier)
