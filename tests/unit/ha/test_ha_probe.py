"""The drill's probe and the maintenance file, on real sockets and files."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from fulcrum.ha.handover import Probe
from fulcrum.apply.maintenance import in_maintenance
from fulcrum.ha.local import set_maintenance


def test_the_probe_counts_refused_connects_as_failures() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                listener.accept()[0].close()
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]  # bound, never listening: connects are refused
        open_port = listener.getsockname()[1]
        probe = Probe([("127.0.0.1", open_port), ("127.0.0.1", closed_port)], rate=40)
        probe.start()
        deadline = time.monotonic() + 10
        while probe.total < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        probe.stop()
    stop.set()
    listener.close()
    assert probe.total >= 20
    assert probe.failed == probe.total // 2 or probe.failed == (probe.total + 1) // 2  # every other target is refused
    assert all(f"127.0.0.1:{closed_port}" in failure for failure in probe.failures)


def test_a_probe_without_targets_does_nothing() -> None:
    probe = Probe([])
    probe.start()
    probe.stop()
    assert (probe.total, probe.failed) == (0, 0)


def test_the_maintenance_file_is_what_keepalived_reads(tmp_path: Path) -> None:
    path = tmp_path / "state" / "maintenance"
    assert not in_maintenance(path)
    set_maintenance(path, True)
    assert path.read_text() == "1\n" and in_maintenance(path)
    set_maintenance(path, False)
    assert path.read_text() == "0\n" and not in_maintenance(path)
    assert not (tmp_path / "state" / "maintenance.tmp").exists()
    path.write_text("garbage")
    assert in_maintenance(path)  # not ours: do not promise the node is live


def test_the_maintenance_file_is_written_durably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node that crashes right after stepping down must not come back live: the new content and
    the rename are both on disk (the file and its directory fsynced) before the write returns."""
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    path = tmp_path / "state" / "maintenance"
    set_maintenance(path, True)
    assert str(path.parent) in synced  # the rename is durable
    assert any(name.startswith(str(path)) for name in synced)  # so is the content it renamed
    assert path.read_text() == "1\n" and path.stat().st_mode & 0o777 == 0o644
