"""The transactional apply engine: a validated snapshot in, the kernel matching it (or not changed) out.

Order of an apply, and why it is crash-consistent
--------------------------------------------------
1. render both files and write them as FILE.new (fsynced);
2. validate both .new files with the real tools (`keepalived -t`, `nft -c`);
3. check that the kernel has IPVS; without it stop here: VALIDATED, nothing live touched;
4. record `pending` = this revision in the state file;
5. promote both files: FILE is kept as FILE.prev, FILE.new atomically becomes FILE;
6. `nft -f FILE` (one kernel transaction);
7. reload keepalived (SIGHUP, or start it);
8. read IPVS back until it matches the snapshot, or a deadline passes;
9. record `applied` = this revision (clearing `pending`): the only step that changes what the
   state file claims is live.

Steps 1-3 touch only .new files, so a crash there changes nothing. The state file is written last
and never names a revision the kernel might not hold. A crash in 5-9 leaves files and kernel
somewhere between the previous revision and this one, with `pending` set and `applied` still
naming the previous revision; on start-up the API re-applies `applied` (status reports the
interrupted revision), which rewrites both files and reloads both daemons, so the system
converges on the last good revision. A crash after 9 leaves this revision applied and recorded.

A failure in 5-9 rolls back: every promoted file is restored from FILE.prev (the rejected one is
kept as FILE.failed), nftables is reloaded from it (or `table inet fulcrum` deleted when there was
no previous ruleset), keepalived is reloaded from it (or stopped when there was no previous
config), `pending` is cleared, and the result is FAILED with rolled_back=True.

Applies and validations are serialised by a process-wide lock plus an flock on STATE_DIR/apply.lock,
so two helpers (or a helper and an in-process engine) cannot interleave on the same files.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from fulcrum.apply import sync_daemons
from fulcrum.apply.files import discard_new, mark_failed, new_path, promote, restore_previous, write_new
from fulcrum.apply.keepalived_control import KeepalivedControl, pid_of
from fulcrum.apply.nftables_control import (
    delete_table,
    enable_ipvs_conntrack,
    load_ruleset,
    nft_version,
    verify_loaded,
)
from fulcrum.apply.result import (
    ApplyOutcome,
    ApplyResult,
    ApplyStep,
    DataplaneStats,
    DataplaneStatus,
    InterfaceView,
    StepReport,
    VrrpView,
)
from fulcrum.apply.state import EngineState, StateFile
from fulcrum.apply.tools import ToolError
from fulcrum.apply.validators import Validation, validate_keepalived, validate_nftables
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import (
    IpvsTable,
    IpvsUnavailable,
    compare,
    down_real_servers,
    expected_ipvs,
    ipvs_available,
    read_ipvs,
)
from fulcrum.dataplane.links import read_interfaces
from fulcrum.dataplane.vip_guard import VipGuard
from fulcrum.render import RuntimePaths, balanced_services, render_keepalived, render_nftables

log = logging.getLogger(__name__)

# One apply at a time in this process; the flock extends that to other processes.
_PROCESS_LOCK = threading.Lock()
# Mismatches quoted in a failed read-back; the rest are counted.
MAX_QUOTED_MISMATCHES = 10


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


class _StepFailed(Exception):
    def __init__(self, step: ApplyStep, detail: str) -> None:
        super().__init__(detail)
        self.step = step
        self.detail = detail


@dataclass
class _Progress:
    """What an apply changed so far, so that a rollback undoes exactly that."""

    pending_recorded: bool = False
    promoted: dict[Path, bool] = field(default_factory=dict)  # live file -> had a previous version
    attempted: set[ApplyStep] = field(default_factory=set)


class _Steps:
    """Runs the steps of one apply, timing each and recording a StepReport."""

    def __init__(self) -> None:
        self.reports: list[StepReport] = []

    def run(self, step: ApplyStep, action: Callable[[], str]) -> str:
        started = time.monotonic()
        try:
            detail = action()
        except Exception as error:  # any failure, even a bug, must become a report and a rollback
            message = _describe(error)
            self.note(step, False, message, started)
            raise _StepFailed(step, message) from error
        self.note(step, True, detail, started)
        return detail

    def note(self, step: ApplyStep, ok: bool, detail: str, started: float) -> None:
        self.reports.append(StepReport(step=step, ok=ok, seconds=round(time.monotonic() - started, 3), detail=detail))


def _describe(error: Exception) -> str:
    if isinstance(error, (ToolError, IpvsUnavailable, OSError, ValueError)):
        return str(error)
    log.exception("unexpected error during apply")
    return f"internal error: {type(error).__name__}: {error}"


class ApplyEngine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.state = StateFile(config.state_dir / "state.json")
        self.keepalived = KeepalivedControl(
            pidfile=config.keepalived_pidfile,
            start_argv=config.keepalived_start,
            prefix=config.command_prefix,
        )
        self.vip_guard = VipGuard()  # probes DR/TUN backends of the live configuration

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
                message=f"revision {revision} passed keepalived -t and nft -c",
                steps=steps.reports,
                warnings=warnings,
            )

    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        """Make the kernel match `snapshot`, or leave (or put back) the previous configuration."""
        with self._exclusive():
            steps = _Steps()
            try:
                warnings = self._stage_and_validate(snapshot, steps)
            except _StepFailed as failure:
                return _failed(revision, steps, failure)
            started = time.monotonic()
            available, detail = ipvs_available()
            steps.note(ApplyStep.DATAPLANE, available, detail, started)
            if not available:
                self._discard_staged()
                return ApplyResult(
                    outcome=ApplyOutcome.VALIDATED,
                    revision=revision,
                    message=(
                        f"data plane unavailable: {detail}. Revision {revision} passed keepalived -t "
                        "and nft -c but was not applied; nothing changed."
                    ),
                    steps=steps.reports,
                    warnings=warnings,
                )
            return self._go_live(snapshot, revision, steps, warnings)

    def status(self) -> DataplaneStatus:
        available, detail = ipvs_available()
        state = self.state.load()
        interrupted = state.pending if state.pending and not self._apply_in_progress() else None
        return DataplaneStatus(
            ipvs_available=available,
            ipvs_detail=detail,
            keepalived_running=self.keepalived.running_pid() is not None,
            keepalived_version=self.keepalived.version(),
            nft_version=nft_version(self.config.command_prefix),
            applied_revision=state.applied.revision if state.applied else None,
            applied_digest=state.applied.digest if state.applied else None,
            interrupted_revision=interrupted.revision if interrupted else None,
        )

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

    def vrrp_view(self) -> VrrpView:
        """The interfaces with their addresses, and whether keepalived's VRRP process runs."""
        available, _ = ipvs_available()
        vrrp_pidfile = self.config.keepalived_vrrp_pidfile or self.config.keepalived_pidfile.parent / "keepalived-vrrp.pid"
        return VrrpView(
            ipvs_available=available,
            vrrp_running=pid_of(vrrp_pidfile) is not None,
            interfaces=[InterfaceView(name=i.name, up=i.up, addresses=sorted(i.addresses)) for i in read_interfaces()],
        )

    def applied_state(self) -> EngineState:
        """The last applied revision and digest, and an interrupted apply if there was one."""
        return self.state.load()

    # --- staging and validation -----------------------------------------------------------------

    def _stage_and_validate(self, snapshot: ConfigSnapshot, steps: _Steps) -> list[str]:
        """Steps 1-2. Returns the validators' warnings; raises _StepFailed naming the first failure."""
        try:
            steps.run(ApplyStep.RENDER, lambda: self._stage(snapshot))
        except _StepFailed:
            self._discard_staged()
            raise
        warnings: list[str] = []
        failures: list[_StepFailed] = []
        checks = (
            (ApplyStep.VALIDATE_KEEPALIVED, self.config.keepalived_conf, validate_keepalived, "keepalived -t"),
            (ApplyStep.VALIDATE_NFTABLES, self.config.nftables_file, validate_nftables, "nft -c"),
        )
        # Both validators run, so an operator sees every error at once.
        for step, path, validator, tool in checks:
            try:
                steps.run(step, partial(self._check, validator, path, tool, warnings))
            except _StepFailed as failure:
                failures.append(failure)
                mark_failed(path)
        if failures:
            self._discard_staged()
            detail = "; ".join(failure.detail for failure in failures)
            raise _StepFailed(failures[0].step, detail)
        return warnings

    def _stage(self, snapshot: ConfigSnapshot) -> str:
        keepalived = render_keepalived(snapshot, self.config.runtime)
        nftables = render_nftables(snapshot)
        write_new(self.config.keepalived_conf, keepalived)
        write_new(self.config.nftables_file, nftables)
        return (
            f"staged {self.config.keepalived_conf}.new ({len(keepalived)} bytes) and "
            f"{self.config.nftables_file}.new ({len(nftables)} bytes)"
        )

    def _check(self, validator: Callable[..., Validation], path: Path, tool: str, warnings: list[str]) -> str:
        result = validator(new_path(path), self.config.command_prefix)
        if not result.ok:
            raise ToolError(f"{tool} rejected {path.name}: {result.message}")
        if result.message:
            warnings.append(f"{tool} warned about {path.name}: {result.message}")
        return result.message or f"{tool} accepted {path.name}"

    def _discard_staged(self) -> None:
        discard_new(self.config.keepalived_conf)
        discard_new(self.config.nftables_file)

    # --- going live -----------------------------------------------------------------------------

    def _go_live(self, snapshot: ConfigSnapshot, revision: int, steps: _Steps, warnings: list[str]) -> ApplyResult:
        """Steps 4-9, with rollback on any failure."""
        digest = snapshot.digest()
        expected = expected_ipvs(snapshot)
        progress = _Progress()

        def attempt(step: ApplyStep, action: Callable[[], str]) -> None:
            progress.attempted.add(step)
            steps.run(step, action)

        try:
            attempt(ApplyStep.WRITE, lambda: self._promote(revision, digest, progress))
            attempt(ApplyStep.LOAD_NFTABLES, lambda: self._load_nftables(snapshot))
            attempt(ApplyStep.RELOAD_KEEPALIVED, lambda: self._reload_keepalived(snapshot))
            attempt(ApplyStep.READBACK, lambda: self._read_back(expected, warnings))
            attempt(ApplyStep.RECORD, lambda: self._record(revision, digest))
        except _StepFailed as failure:
            rollback_problems = self._roll_back(progress, steps)
            return _failed(revision, steps, failure, rollback_problems, warnings)
        self.vip_guard.watch(snapshot)
        return ApplyResult(
            outcome=ApplyOutcome.APPLIED,
            revision=revision,
            message=f"revision {revision} is live: IPVS matches it",
            steps=steps.reports,
            warnings=warnings,
        )

    def _promote(self, revision: int, digest: str, progress: _Progress) -> str:
        self.state.begin(revision, digest)
        progress.pending_recorded = True
        for path in (self.config.keepalived_conf, self.config.nftables_file):
            progress.promoted[path] = promote(path)
        return "; ".join(
            f"promoted {path}" + (f" (previous kept as {path.name}.prev)" if kept else " (first version)")
            for path, kept in progress.promoted.items()
        )

    def _reload_keepalived(self, snapshot: ConfigSnapshot) -> str:
        done = self.keepalived.reload()
        stopped = sync_daemons.stop_unwanted(snapshot, self.config.command_prefix)
        return f"{done}; {stopped}" if stopped else done

    def _load_nftables(self, snapshot: ConfigSnapshot) -> str:
        prefix = self.config.command_prefix
        load_ruleset(self.config.nftables_file, prefix)
        summary = verify_loaded(prefix)
        if any(service.one_arm for service in balanced_services(snapshot)):
            enable_ipvs_conntrack(prefix)
            summary += "; net.ipv4.vs.conntrack=1 for one-arm SNAT"
        return summary

    def _read_back(self, expected: IpvsTable, warnings: list[str]) -> str:
        """Poll IPVS until it matches `expected`, then allow absent real servers time to appear."""
        config = self.config
        deadline = time.monotonic() + config.readback_timeout
        matched_since: float | None = None
        while True:
            actual = read_ipvs()
            mismatches = compare(expected, actual)
            down = down_real_servers(expected, actual)
            now = time.monotonic()
            if not mismatches:
                matched_since = matched_since if matched_since is not None else now
                if not down or now - matched_since >= config.readback_settle or now >= deadline:
                    break
            else:
                matched_since = None
            if now >= deadline:
                quoted = mismatches[:MAX_QUOTED_MISMATCHES]
                more = len(mismatches) - len(quoted)
                raise ToolError(
                    f"IPVS did not match the configuration within {config.readback_timeout:g} s: "
                    + "; ".join(quoted)
                    + (f"; and {more} more" if more else "")
                )
            time.sleep(min(config.readback_interval, deadline - now))
        warnings.extend(down)
        servers = sum(len(service.real_servers) for service in expected.services)
        summary = f"IPVS matches: {len(expected.services)} services, {servers} real servers"
        return summary + (f" ({len(down)} down or not yet checked)" if down else "")

    def _record(self, revision: int, digest: str) -> str:
        self.state.commit(revision, digest)
        return f"recorded revision {revision} as applied in {self.state.path}"

    def _roll_back(self, progress: _Progress, steps: _Steps) -> list[str]:
        """Undo what `progress` says was done; returns the undo actions that failed (empty: all worked)."""
        if not progress.pending_recorded:
            return []  # the failure came before anything live changed
        started = time.monotonic()
        done: list[str] = []
        problems: list[str] = []

        def undo(what: str, action: Callable[[], object]) -> None:
            try:
                outcome = action()
            except Exception as error:  # noqa: BLE001  (report every undo that failed, and carry on with the rest)
                problems.append(f"{what}: {_describe(error)}")
            else:
                done.append(outcome if isinstance(outcome, str) else what)

        restored: dict[Path, bool] = {}
        for path in progress.promoted:
            undo(f"restore {path}", partial(self._restore, path, restored))
        nftables, keepalived = self.config.nftables_file, self.config.keepalived_conf
        prefix = self.config.command_prefix
        if ApplyStep.LOAD_NFTABLES in progress.attempted and nftables in restored:
            if restored[nftables]:
                undo(f"reload nftables from {nftables}", lambda: load_ruleset(nftables, prefix))
            else:
                undo("delete table inet fulcrum (there was no previous ruleset)", lambda: delete_table(prefix))
        if ApplyStep.RELOAD_KEEPALIVED in progress.attempted and keepalived in restored:
            if restored[keepalived]:
                undo(f"reload keepalived from {keepalived}", self.keepalived.reload)
            else:
                undo("stop keepalived (there was no previous config)", self.keepalived.stop)
        undo(f"clear the pending apply in {self.state.path}", self.state.abort)
        steps.note(ApplyStep.ROLLBACK, not problems, "; ".join(problems or done), started)
        return problems

    @staticmethod
    def _restore(path: Path, restored: dict[Path, bool]) -> str:
        restored[path] = restore_previous(path)
        if restored[path]:
            return f"restored {path} from {path.name}.prev (rejected version kept as {path.name}.failed)"
        return f"removed {path}: there was no previous version (rejected version kept as {path.name}.failed)"

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
    message = f"{failure.step.value} failed: {failure.detail}"
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
    return ApplyResult(
        outcome=ApplyOutcome.FAILED,
        revision=revision,
        failed_step=failure.step,
        message=message,
        steps=steps.reports,
        rolled_back=rolled_back,
        warnings=warnings or [],
    )
