"""The drill's probe and the maintenance file, on real sockets and files."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from fulcrum.ha.handover import Probe
from fulcrum.ha.local import in_maintenance, set_maintenance


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
    assert not (tmp_path / "state" / "maintenance.new").exists()
    path.write_text("garbage")
    assert in_maintenance(path)  # not ours: do not promise the node is live
