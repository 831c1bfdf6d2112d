"""The transactional apply engine: a validated snapshot in, the kernel matching it (or not changed) out.

The engine names no daemon: it runs each step over an ordered list of managed daemons (the
`ManagedDaemon` protocol in fulcrum.apply.daemons; the appliance's are nftables, keepalived and the
IPVS sync daemons) and reports every step the same way, naming the daemon.

Order of an apply, and why it is crash-consistent
--------------------------------------------------
1. render: every daemon writes its files as FILE.new (fsynced);
2. validate: every daemon checks its .new files with its real tool (`nft -c`, `keepalived -t`), all
   of them side by side;
3. dataplane: every daemon says whether it can run here (keepalived needs IPVS); if one cannot,
   stop here: VALIDATED, nothing live touched;
4. record `pending` = this revision in the state file;
5. install: every daemon's FILE is kept as FILE.prev and FILE.new atomically becomes FILE;
6. load: every daemon takes its new files (`nft -f`, keepalived's SIGHUP or start, ...);
7. verify: every daemon reads back what it made of them (the nftables table; IPVS until it
   matches the snapshot, or a deadline passes);
8. record `applied` = this revision (clearing `pending`): the only step that changes what the
   state file claims is live.

Steps 1-3 touch only .new files, so a crash there changes nothing. The state file is written last
and never names a revision the kernel might not hold. A crash in 4-8 leaves files and kernel
somewhere between the previous revision and this one, with `pending` set and `applied` still
naming the previous revision; on start-up the API re-applies `applied` (status reports the
interrupted revision), which rewrites every file and reloads every daemon, so the system
converges on the last good revision. A crash after 8 leaves this revision applied and recorded.

A failure in 4-8 rolls back: every daemon whose install was attempted is undone, in reverse order
(FILE.prev restored, the rejected file kept as FILE.failed, and, if it was loaded, the daemon
reloaded from the previous files or stopped when there were none), `pending` is cleared, and the
result is FAILED with rolled_back=True, naming the step and the daemon that failed.

Applies and validations are serialised by a process-wide lock plus an flock on STATE_DIR/apply.lock,
so two helpers (or a helper and an in-process engine) cannot interleave on the same files.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from fulcrum.apply.announcement_watch import AnnouncementWatch
from fulcrum.apply.daemons import Checked, ManagedDaemon, standard_daemons
from fulcrum.apply.daemons.frr import FrrDaemon, FrrPaths
from fulcrum.apply.daemons.networkd import NetworkPaths
from fulcrum.apply.host_keys import (
    HostKeys,
    HostKeysInstalled,
    HostKeysRefused,
    install_host_keys,
    read_host_keys,
)
from fulcrum.apply.keepalived_control import KeepalivedControl, pid_of
from fulcrum.apply.nftables_control import nft_version
from fulcrum.apply.result import (
    ApplyOutcome,
    ApplyResult,
    ApplyStep,
    BgpView,
    DataplaneStats,
    DataplaneStatus,
    InterfaceView,
    RebootRefused,
    RebootResult,
    StepReport,
    VrrpView,
)
from fulcrum.apply.state import StateFile
from fulcrum.apply.tools import ToolError, run_tool
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import IpvsUnavailable, ipvs_available, read_ipvs
from fulcrum.dataplane.links import read_interfaces
from fulcrum.dataplane.vip_guard import VipGuard
from fulcrum.render import RuntimePaths

log = logging.getLogger(__name__)

# One apply at a time in this process; the flock extends that to other processes.
_PROCESS_LOCK = threading.Lock()


@dataclass(frozen=True)
class EngineConfig:
    state_dir: Path  # state.json and apply.lock
    keepalived_conf: Path
    nftables_file: Path
    keepalived_pidfile: Path
    keepalived_start: tuple[str, ...]  # argv that starts keepalived when it is not running
    keepalived_vrrp_pidfile: Path | None = None  # keepalived's VRRP process (default: beside the pidfile)
    runtime: RuntimePaths = field(default_factory=RuntimePaths)
    readback_timeout: float = 15.0  # seconds for IPVS to match after the reload
    # Once IPVS matches, how long to keep waiting for real servers that are still absent (not yet
    # checked) before reporting them as down: about one health-check cycle with default checks.
    readback_settle: float = 3.0
    readback_interval: float = 0.2
    # Wraps every external command (validators, nft, keepalived), e.g. ("ip", "netns", "exec", NS)
    # in tests. IPVS is read over netlink in the engine's own network namespace.
    command_prefix: tuple[str, ...] = ()
    # The appliance's own network through systemd-networkd; None where networkd does not manage
    # the machine (the VM lab, the host test rigs): the daemon is then not in the engine at all.
    network: NetworkPaths | None = None
    # How the machine is restarted on the admin's word (a firmware upgrade); None: it is not.
    reboot_command: tuple[str, ...] | None = None
    # Where sshd's host keys are (a backup reads them, a restore installs them), and how sshd is
    # made to take new ones; None: no host keys here, or sshd is not reloaded.
    ssh_host_key_dir: Path | None = None
    ssh_reload_command: tuple[str, ...] | None = None
    # This node's BGP through FRR; None where Fulcrum does not manage FRR: not in the engine at all.
    frr: FrrPaths | None = None


class _StepFailed(Exception):
    def __init__(self, step: ApplyStep, daemon: str | None, detail: str, message: str | None = None) -> None:
        super().__init__(detail)
        self.step = step
        self.daemon = daemon
        self.detail = detail
        where = f"{step.value} failed for {daemon}" if daemon else f"{step.value} failed"
        self.message = message or f"{where}: {detail}"


@dataclass
class _Progress:
    """What an apply changed so far, so that a rollback undoes exactly that."""

    pending_recorded: bool = False
    installing: list[ManagedDaemon] = field(default_factory=list)  # install attempted, in order
    loading: set[str] = field(default_factory=set)  # names of the daemons whose load was attempted


class _Steps:
    """Runs the steps of one apply, timing each and recording a StepReport."""

    def __init__(self) -> None:
        self.reports: list[StepReport] = []

    def run(self, step: ApplyStep, daemon: str | None, action: Callable[[], str]) -> str:
        started = time.monotonic()
        try:
            detail = action()
        except Exception as error:  # any failure, even a bug, must become a report and a rollback
            message = _describe(error)
            self.note(step, daemon, False, message, started)
            raise _StepFailed(step, daemon, message) from error
        self.note(step, daemon, True, detail, started)
        return detail

    def note(self, step: ApplyStep, daemon: str | None, ok: bool, detail: str, started: float) -> None:
        self._report(step, daemon, ok, detail, time.monotonic() - started)

    def run_side_by_side(
        self, step: ApplyStep, actions: Sequence[tuple[str, Callable[[], str]]]
    ) -> list[_StepFailed]:
        """Run one action per daemon, all at once (each waits on a tool of its own), and report them
        in the order given, as `run` would have one after the other. Returns the failures, in order."""

        def timed(action: Callable[[], str]) -> tuple[bool, str, float]:
            started = time.monotonic()
            try:
                detail = action()
            except Exception as error:  # noqa: BLE001  (as in `run`: any failure becomes a report)
                return False, _describe(error), time.monotonic() - started
            return True, detail, time.monotonic() - started

        with ThreadPoolExecutor(max_workers=max(1, len(actions)), thread_name_prefix=step.value) as pool:
            outcomes = list(pool.map(timed, [action for _, action in actions]))
        failures = []
        for (daemon, _), (ok, detail, seconds) in zip(actions, outcomes, strict=True):
            self._report(step, daemon, ok, detail, seconds)
            if not ok:
                failures.append(_StepFailed(step, daemon, detail))
        return failures

    def _report(self, step: ApplyStep, daemon: str | None, ok: bool, detail: str, seconds: float) -> None:
        report = StepReport(step=step, daemon=daemon, ok=ok, seconds=round(seconds, 3), detail=detail)
        self.reports.append(report)


def _describe(error: Exception) -> str:
    if isinstance(error, (ToolError, IpvsUnavailable, OSError, ValueError)):
        return str(error)
    log.exception("unexpected error during apply")
    return f"internal error: {type(error).__name__}: {error}"


def _collect(check: Callable[[], Checked], warnings: list[str]) -> str:
    """Run a validation or read-back, keeping its warnings; its summary is the step's detail."""
    checked = check()
    warnings.extend(checked.warnings)
    return checked.detail


class ApplyEngine:
    def __init__(self, config: EngineConfig, daemons: Sequence[ManagedDaemon] | None = None) -> None:
        """`daemons` in apply order; the appliance's own (`standard_daemons`) unless given."""
        self.config = config
        self.daemons = list(daemons) if daemons is not None else standard_daemons(config)
        self.state = StateFile(config.state_dir / "state.json")
        # For the status only: what keepalived runs is the keepalived daemon's business.
        self.keepalived = KeepalivedControl(
            pidfile=config.keepalived_pidfile,
            start_argv=config.keepalived_start,
            prefix=config.command_prefix,
        )
        self.vip_guard = VipGuard()  # probes DR/TUN backends of the live configuration
        frr = next((d for d in self.daemons if isinstance(d, FrrDaemon)), None)
        # Withdraws or announces the VIPs when this node's fitness changes between applies.
        self.announcement_watch = (
            AnnouncementWatch(frr, self._exclusive, keep=config.state_dir / "announced-snapshot.json")
            if frr
            else None
        )
        if self.announcement_watch is not None:
            with suppress(ValueError):  # an unreadable state file: status() reports it
                applied = self.state.load().applied
                if applied is not None:
                    self.announcement_watch.resume(applied.digest)

    # --- public ---------------------------------------------------------------------------------

    def validate(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        """Render and validate with the real tools; nothing live changes."""
        with self._exclusive():
            steps = _Steps()
            try:
                warnings = self._stage_and_validate(snapshot, steps)
            except _StepFailed as failure:
                return _failed(revision, steps, failure)
            self._discard_staged()
            return ApplyResult(
                outcome=ApplyOutcome.VALIDATED,
                revision=revision,
                message=f"revision {revision} passed the validation of {self._names()}",
                steps=steps.reports,
                warnings=warnings,
            )

    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        """Make the kernel match `snapshot`, or leave (or put back) the previous configuration."""
        with self._exclusive():
            steps = _Steps()
            try:
                warnings = self._stage_and_validate(snapshot, steps)
                unavailable = self._unavailable(steps)
            except _StepFailed as failure:
                return _failed(revision, steps, failure)
            if unavailable is not None:
                self._discard_staged()
                return ApplyResult(
                    outcome=ApplyOutcome.VALIDATED,
                    revision=revision,
                    message=(
                        f"data plane unavailable: {unavailable}. Revision {revision} passed the validation "
                        f"of {self._names()} but was not applied; nothing changed."
                    ),
                    steps=steps.reports,
                    warnings=warnings,
                )
            return self._go_live(snapshot, revision, steps, warnings)

    def status(self) -> DataplaneStatus:
        available, detail = ipvs_available()
        state = self.state.load()
        interrupted = state.pending if state.pending and not self._apply_in_progress() else None
        announcing, fitness = self.announcement_watch.view() if self.announcement_watch else (None, None)
        return DataplaneStatus(
            ipvs_available=available,
            ipvs_detail=detail,
            keepalived_running=self.keepalived.running_pid() is not None,
            keepalived_version=self.keepalived.version(),
            nft_version=nft_version(self.config.command_prefix),
            applied_revision=state.applied.revision if state.applied else None,
            applied_digest=state.applied.digest if state.applied else None,
            interrupted_revision=interrupted.revision if interrupted else None,
            bgp_announcing=announcing,
            bgp_fitness=fitness,
        )

    def bgp_view(self) -> BgpView:
        watch = self.announcement_watch
        if watch is None:
            return BgpView(managed=False)
        announcing, _ = watch.view()
        view = BgpView(managed=True, announcing=announcing, fitness=watch.frr.announcing().reason)
        try:
            return view.model_copy(
                update={"originated": sorted(watch.frr.originated()), "neighbors": watch.frr.sessions()}
            )
        except ToolError as error:
            return view.model_copy(update={"error": str(error)})

    def stats(self) -> DataplaneStats:
        available, detail = ipvs_available()
        if not available:
            return DataplaneStats(ipvs_available=False, ipvs_detail=detail)
        try:
            table = read_ipvs()
        except IpvsUnavailable as error:
            return DataplaneStats(ipvs_available=False, ipvs_detail=str(error))
        return DataplaneStats(
            ipvs_available=True, ipvs_detail=detail, table=table, backend_warnings=self.vip_guard.warnings()
        )

    def reboot(self) -> RebootResult:
        """Restart the machine with the configured command (a request never carries one)."""
        command = self.config.reboot_command
        if not command:
            raise RebootRefused("this node does not restart itself: no reboot command is configured")
        try:
            run = run_tool(command)
        except ToolError as error:
            raise RebootRefused(str(error)) from error
        if run.returncode != 0:
            raise RebootRefused(f"{command[0]} failed (exit {run.returncode}): {run.output.strip()[:300]}")
        log.warning("restarting the machine on the API's request (%s)", " ".join(command))
        return RebootResult(message="the node is restarting")

    def ssh_host_keys(self) -> HostKeys:
        """sshd's host keys, for a backup (none where this node has no host key directory)."""
        directory = self.config.ssh_host_key_dir
        return read_host_keys(directory) if directory else HostKeys()

    def install_ssh_host_keys(self, keys: HostKeys) -> HostKeysInstalled:
        """A restored backup's host keys, checked, installed, and sshd reloaded."""
        if self.config.ssh_host_key_dir is None:
            raise HostKeysRefused("this node has no SSH host key directory configured")
        return install_host_keys(self.config.ssh_host_key_dir, keys, self.config.ssh_reload_command)

    def vrrp_view(self) -> VrrpView:
        """The interfaces with their addresses, and whether keepalived's VRRP process runs."""
        available, _ = ipvs_available()
        default_pidfile = self.config.keepalived_pidfile.parent / "keepalived-vrrp.pid"
        vrrp_pidfile = self.config.keepalived_vrrp_pidfile or default_pidfile
        return VrrpView(
            ipvs_available=available,
            vrrp_running=pid_of(vrrp_pidfile) is not None,
            interfaces=[
                InterfaceView(name=i.name, up=i.up, addresses=sorted(i.addresses)) for i in read_interfaces()
            ],
        )

    # --- staging and validation -----------------------------------------------------------------

    def _stage_and_validate(self, snapshot: ConfigSnapshot, steps: _Steps) -> list[str]:
        """Steps 1-2. Returns the validators' warnings; raises _StepFailed naming the first failure."""
        try:
            for daemon in self.daemons:
                steps.run(ApplyStep.RENDER, daemon.name, partial(daemon.render, snapshot))
        except _StepFailed:
            self._discard_staged()
            raise
        # Every validator runs, so an operator sees every error at once; side by side, as each checks
        # its own staged files with its own tool (keepalived -t, nft -c, FRR's checker).
        found: dict[str, list[str]] = {daemon.name: [] for daemon in self.daemons}
        checks = [(d.name, partial(_collect, d.validate, found[d.name])) for d in self.daemons]
        failures = steps.run_side_by_side(ApplyStep.VALIDATE, checks)
        refused = {failure.daemon for failure in failures}
        for daemon in self.daemons:
            if daemon.name in refused:
                daemon.reject()
        warnings = [warning for daemon in self.daemons for warning in found[daemon.name]]
        if failures:
            self._discard_staged()
            first = failures[0]
            if len(failures) == 1:
                raise first
            rejected = " and ".join(str(failure.daemon) for failure in failures)
            detail = "; ".join(failure.detail for failure in failures)
            message = f"{first.step.value} failed for {rejected}: {detail}"
            raise _StepFailed(first.step, first.daemon, detail, message)
        return warnings

    def _unavailable(self, steps: _Steps) -> str | None:
        """Step 3: why the first daemon that cannot run here cannot (None: all can)."""
        for daemon in self.daemons:
            started = time.monotonic()
            try:
                available, detail = daemon.precondition()
            except Exception as error:  # noqa: BLE001  (a check that cannot tell says the daemon cannot run here)
                available, detail = False, _describe(error)
            steps.note(ApplyStep.DATAPLANE, daemon.name, available, detail, started)
            if not available:
                return detail
        return None

    def _discard_staged(self) -> None:
        for daemon in self.daemons:
            daemon.discard()

    def _names(self) -> str:
        return ", ".join(daemon.name for daemon in self.daemons)

    # --- going live -----------------------------------------------------------------------------

    def _go_live(
        self, snapshot: ConfigSnapshot, revision: int, steps: _Steps, warnings: list[str]
    ) -> ApplyResult:
        """Steps 4-8, with rollback on any failure."""
        digest = snapshot.digest()
        progress = _Progress()
        try:
            steps.run(ApplyStep.RECORD, None, partial(self._record_pending, revision, digest, progress))
            for daemon in self.daemons:
                progress.installing.append(daemon)
                steps.run(ApplyStep.INSTALL, daemon.name, daemon.install)
            for daemon in self.daemons:
                progress.loading.add(daemon.name)
                steps.run(ApplyStep.LOAD, daemon.name, partial(daemon.load, snapshot))
            for daemon in self.daemons:
                verify = partial(daemon.verify, snapshot)
                steps.run(ApplyStep.VERIFY, daemon.name, partial(_collect, verify, warnings))
            steps.run(ApplyStep.RECORD, None, partial(self._record, revision, digest))
        except _StepFailed as failure:
            rollback_problems = self._roll_back(progress, steps)
            return _failed(revision, steps, failure, rollback_problems, warnings)
        self.vip_guard.watch(snapshot)
        if self.announcement_watch is not None:
            self.announcement_watch.watch(snapshot)
        return ApplyResult(
            outcome=ApplyOutcome.APPLIED,
            revision=revision,
            message=f"revision {revision} is live: {self._names()} verified it",
            steps=steps.reports,
            warnings=warnings,
        )

    def _record_pending(self, revision: int, digest: str, progress: _Progress) -> str:
        self.state.begin(revision, digest)
        progress.pending_recorded = True
        return f"recorded revision {revision} as pending in {self.state.path}"

    def _record(self, revision: int, digest: str) -> str:
        self.state.commit(revision, digest)
        return f"recorded revision {revision} as applied in {self.state.path}"

    def _roll_back(self, progress: _Progress, steps: _Steps) -> list[str]:
        """Undo what `progress` says was done; returns the undo actions that failed (empty: all worked)."""
        self._discard_staged()
        if not progress.pending_recorded:
            return []  # the failure came before anything live changed
        problems: list[str] = []
        undos: list[tuple[str | None, Callable[[], str]]] = [
            (daemon.name, partial(daemon.undo, daemon.name in progress.loading))
            for daemon in reversed(progress.installing)
        ]
        undos.append((None, self._clear_pending))
        for daemon_name, undo in undos:
            started = time.monotonic()
            try:  # report every undo that failed, and carry on with the rest
                done = undo()
            except Exception as error:  # noqa: BLE001  (report every undo that failed, and carry on)
                problem = _describe(error)
                problems.append(f"{daemon_name}: {problem}" if daemon_name else problem)
                steps.note(ApplyStep.ROLLBACK, daemon_name, False, problem, started)
            else:
                steps.note(ApplyStep.ROLLBACK, daemon_name, True, done, started)
        return problems

    def _clear_pending(self) -> str:
        self.state.abort()
        return f"cleared the pending apply in {self.state.path}"

    # --- locking --------------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with _PROCESS_LOCK:
            fd = self._open_lock()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def _apply_in_progress(self) -> bool:
        """Whether some engine holds the apply lock right now (so `pending` is not a crash)."""
        fd = self._open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _open_lock(self) -> int:
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        return os.open(self.config.state_dir / "apply.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _failed(
    revision: int,
    steps: _Steps,
    failure: _StepFailed,
    rollback_problems: list[str] | None = None,
    warnings: list[str] | None = None,
) -> ApplyResult:
    message = failure.message
    rolled_back = any(report.step == ApplyStep.ROLLBACK for report in steps.reports) and not rollback_problems
    if rolled_back:
        message += "; the previous configuration was restored"
    elif rollback_problems:
        message += (
            "; restoring the previous configuration also failed ("
            + "; ".join(rollback_problems)
            + "), re-apply a known-good revision"
        )
    log.warning("revision %s: %s", revision, message)
    cause = failure.__cause__
    return ApplyResult(
        outcome=ApplyOutcome.FAILED,
        revision=revision,
        failed_step=failure.step,
        failed_daemon=failure.daemon,
        message=message,
        steps=steps.reports,
        rolled_back=rolled_back,
        disk_full=isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT),
        warnings=warnings or [],
    )
