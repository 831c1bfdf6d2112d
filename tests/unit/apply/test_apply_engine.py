"""The apply engine with the real validators, on this host's kernel.

Where the kernel has no IPVS (this host), `apply` must stop after validation with VALIDATED and
say so, leaving every live file as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.files import failed_path, new_path
from fulcrum.apply.result import ApplyOutcome, ApplyStep
from fulcrum.apply.state import StateFile

from applytest import IPVS_PRESENT, Netns, Paths, engine_config, make_snapshot

no_ipvs_only = pytest.mark.skipif(IPVS_PRESENT, reason="asserts behaviour on a kernel without IPVS")


def _assert_untouched(live_files: dict[Path, bytes]) -> None:
    for path, content in live_files.items():
        assert path.read_bytes() == content, f"{path} changed"
        assert not new_path(path).exists(), f"{new_path(path)} left behind"


def test_validate_passes_a_valid_snapshot_and_changes_nothing(
    engine: ApplyEngine, paths: Paths, live_files: dict[Path, bytes]
) -> None:
    result = engine.validate(make_snapshot(), 4)
    assert result.outcome == ApplyOutcome.VALIDATED, result.message
    assert result.revision == 4
    assert [(step.step, step.daemon, step.ok) for step in result.steps] == [
        (ApplyStep.RENDER, "nftables", True),
        (ApplyStep.RENDER, "keepalived", True),
        (ApplyStep.RENDER, "ipvs_sync", True),
        (ApplyStep.VALIDATE, "nftables", True),
        (ApplyStep.VALIDATE, "keepalived", True),
        (ApplyStep.VALIDATE, "ipvs_sync", True),
    ]
    _assert_untouched(live_files)
    assert not (paths.state / "state.json").exists()


def test_validate_reports_keepalived_rejecting_the_config(
    paths: Paths, netns: Netns, live_files: dict[Path, bytes]
) -> None:
    # A VRRP interface the namespace does not have: keepalived -t refuses it.
    snapshot = make_snapshot(node={"name": "lb1", "vrrp_interface": "eth9"})
    result = ApplyEngine(engine_config(paths, netns)).validate(snapshot, 5)
    assert result.outcome == ApplyOutcome.FAILED
    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VALIDATE, "keepalived")
    assert result.message.startswith("validate failed for keepalived: keepalived -t rejected keepalived.conf")
    assert "WARNING - interface eth9 for vrrp_instance VG_front doesn't exist" in result.message
    assert "eth9" in failed_path(paths.conf).read_text()
    assert not result.rolled_back
    _assert_untouched(live_files)


def test_apply_with_an_invalid_config_fails_before_touching_anything(
    paths: Paths, netns: Netns, live_files: dict[Path, bytes]
) -> None:
    snapshot = make_snapshot(node={"name": "lb1", "vrrp_interface": "eth9"})
    result = ApplyEngine(engine_config(paths, netns)).apply(snapshot, 6)
    assert result.outcome == ApplyOutcome.FAILED
    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VALIDATE, "keepalived")
    assert ApplyStep.INSTALL not in [step.step for step in result.steps]
    _assert_untouched(live_files)
    assert StateFile(paths.state / "state.json").load().pending is None


@no_ipvs_only
def test_apply_without_ipvs_validates_and_says_the_data_plane_is_unavailable(
    engine: ApplyEngine, paths: Paths, live_files: dict[Path, bytes]
) -> None:
    result = engine.apply(make_snapshot(), 7)
    assert result.outcome == ApplyOutcome.VALIDATED
    assert result.failed_step is None
    assert result.message.startswith("data plane unavailable: this kernel has no IPVS")
    validated = "Revision 7 passed the validation of nftables, keepalived, ipvs_sync but was not applied"
    assert validated in result.message
    dataplane = result.steps[-1]
    assert (dataplane.step, dataplane.daemon, dataplane.ok) == (ApplyStep.DATAPLANE, "keepalived", False)
    _assert_untouched(live_files)
    state = StateFile(paths.state / "state.json").load()
    assert state.applied is None and state.pending is None


@no_ipvs_only
def test_status_reports_tools_and_the_missing_data_plane(engine: ApplyEngine) -> None:
    status = engine.status()
    assert not status.ipvs_available
    assert "this kernel has no IPVS" in status.ipvs_detail
    assert not status.keepalived_running
    assert status.keepalived_version and status.keepalived_version[0].isdigit()
    assert status.nft_version and status.nft_version[0].isdigit()
    assert status.applied_revision is None and status.interrupted_revision is None


def test_status_reports_the_applied_and_an_interrupted_revision(engine: ApplyEngine, paths: Paths) -> None:
    state = StateFile(paths.state / "state.json")
    state.commit(8, "d" * 64)
    state.begin(9, "e" * 64)  # as if the helper died mid-apply
    status = engine.status()
    assert (status.applied_revision, status.applied_digest) == (8, "d" * 64)
    assert status.interrupted_revision == 9


def test_a_pending_apply_that_holds_the_lock_is_not_reported_as_interrupted(engine: ApplyEngine, paths: Paths) -> None:
    StateFile(paths.state / "state.json").begin(9, "e" * 64)
    with _held_lock(paths):
        assert engine.status().interrupted_revision is None


def test_applies_and_validations_are_serialised_across_processes(engine: ApplyEngine, paths: Paths) -> None:
    finished = threading.Event()
    results = []

    def validate() -> None:
        results.append(engine.validate(make_snapshot(), 10))
        finished.set()

    with _held_lock(paths):  # another process's engine, as far as flock is concerned
        worker = threading.Thread(target=validate)
        worker.start()
        assert not finished.wait(0.5), "validate ran while another engine held the lock"
    assert finished.wait(30)
    worker.join()
    assert results[0].outcome == ApplyOutcome.VALIDATED


@no_ipvs_only
def test_stats_without_ipvs_have_no_table(engine: ApplyEngine) -> None:
    stats = engine.stats()
    assert not stats.ipvs_available
    assert stats.table is None


@contextmanager
def _held_lock(paths: Paths) -> Iterator[None]:
    """Hold the engine's flock through a separate open file, as another process would."""
    paths.state.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.state / "apply.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_rendered_files_finding_the_disk_full_fail_cleanly_and_say_so(
    engine: ApplyEngine, paths: Paths
) -> None:
    """The live files' directory on a full tmpfs: staging FILE.new hits ENOSPC. The apply fails at
    render with `disk_full` set (the API answers 507, not "rejected"), and nothing is changed or
    left behind."""
    etc = paths.conf.parent
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(etc)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        live = {paths.conf: b"# live keepalived.conf\n", paths.nft: b"# live ruleset\n"}
        for path, content in live.items():
            path.write_bytes(content)
        with contextlib.suppress(OSError), open(etc / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        result = engine.apply(make_snapshot(), 9)
        assert result.outcome == ApplyOutcome.FAILED, result.message
        assert result.failed_step == ApplyStep.RENDER
        assert result.disk_full is True and "No space left on device" in result.message
        _assert_untouched(live)
    finally:
        subprocess.run(["umount", "-l", str(etc)], check=True)
