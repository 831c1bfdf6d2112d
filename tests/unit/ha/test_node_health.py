"""fulcrum-node-health, the installed console script, against real HTTP servers on loopback.

127.0.0.1 plays this node and 127.0.0.2 the peer (the whole of 127.0.0.0/8 is local), both on
the same port, as the two appliances are.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

PROGRAM = Path(sys.executable).parent / "fulcrum-node-health"
PATH = "/api/v1/health"


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        behaviour = self.server.behaviour  # type: ignore[attr-defined]
        if behaviour == "hang":
            time.sleep(5)
        status = 200 if behaviour == "ok" and self.path == PATH else 503
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def serve(port: int) -> Iterator:
    servers: list[ThreadingHTTPServer] = []

    def start(address: str, behaviour: str) -> None:
        server = ThreadingHTTPServer((address, port), _Health)
        server.daemon_threads = True
        server.behaviour = behaviour  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run(port: int, *extra: str, timeout: float = 0.5) -> subprocess.CompletedProcess[str]:
    argv = [str(PROGRAM), "--url", f"http://127.0.0.1:{port}{PATH}", "--timeout", str(timeout), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def test_healthy_api(serve, port: int) -> None:
    serve("127.0.0.1", "ok")
    result = run(port)
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("behaviour", ["down", "error", "hang"])
def test_a_sick_api_steps_down_without_a_peer_to_ask(serve, port: int, behaviour: str) -> None:
    if behaviour != "down":
        serve("127.0.0.1", "error" if behaviour == "error" else "hang")
    started = time.monotonic()
    result = run(port)
    assert result.returncode == 1, result.stderr
    assert "stepping down" in result.stderr and f"127.0.0.1:{port}" in result.stderr
    if behaviour == "hang":
        assert time.monotonic() - started < 4, "the probe's timeout did not bound it"


def test_a_sick_api_steps_down_when_the_peer_is_healthy(serve, port: int) -> None:
    serve("127.0.0.2", "ok")
    result = run(port, "--peer", "127.0.0.2")
    assert result.returncode == 1 and "stepping down" in result.stderr, result.stderr


@pytest.mark.parametrize("peer", ["down", "error"])
def test_a_sick_api_stays_when_the_peer_cannot_take_over(serve, port: int, peer: str) -> None:
    if peer == "error":
        serve("127.0.0.2", "error")
    result = run(port, "--peer", "127.0.0.2")
    assert result.returncode == 0, result.stderr
    assert "staying: the peer cannot take over" in result.stderr


@pytest.fixture
def fake_keepalived(tmp_path: Path) -> Iterator[Path]:
    """A live process named keepalived, and its pid file."""
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None).prctl(15, b"keepalived", 0, 0, 0)  # PR_SET_NAME: /proc/PID/comm
        time.sleep(60)
        os._exit(0)
    pidfile = tmp_path / "keepalived-checkers.pid"
    pidfile.write_text(f"{pid}\n")
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}/comm").read_text().strip() != "keepalived" and time.monotonic() < deadline:
        time.sleep(0.01)
    yield pidfile
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_the_checker_process_must_be_alive(serve, port: int, fake_keepalived: Path, tmp_path: Path) -> None:
    serve("127.0.0.1", "ok")
    assert run(port, "--checker-pidfile", str(fake_keepalived)).returncode == 0
    stale = tmp_path / "stale.pid"
    stale.write_text(f"{os.getpid()}\n")  # alive, but not keepalived
    result = run(port, "--checker-pidfile", str(stale))
    assert result.returncode == 1 and "checker process" in result.stderr, result.stderr
    result = run(port, "--checker-pidfile", str(tmp_path / "missing.pid"))
    assert result.returncode == 1 and "checker process" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "argv",
    [[], ["--url"], ["--url", "ftp://x/"], ["--url", "http://127.0.0.1/", "--bogus", "1"], ["--timeout", "1"]],
)
def test_bad_usage_is_status_2(argv: list[str]) -> None:
    result = subprocess.run([str(PROGRAM), *argv], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2 and "usage:" in result.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="dropping privileges needs root")
def test_it_drops_root_before_probing(port: int) -> None:
    """keepalived runs it as root; by the time it connects it is nobody (checked in /proc while
    the probe waits on a server that never answers)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
    try:
        process = subprocess.Popen(
            [str(PROGRAM), "--url", f"http://127.0.0.1:{port}{PATH}", "--timeout", "5"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        connection, _ = listener.accept()  # connected: the drop happened before the probe
        status = Path(f"/proc/{process.pid}/status").read_text()
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        assert uid_line.split()[1:] == ["65534"] * 4, uid_line
        connection.close()
        process.wait(timeout=10)
    finally:
        listener.close()


@pytest.fixture
def journal() -> Iterator[tuple[Path, socket.socket]]:
    """A syslog datagram socket, as journald's /dev/log, where nobody (the script after its drop
    from root) may send to it: outside pytest's root-only temporary directories."""
    folder = Path(tempfile.mkdtemp(prefix="node-health-log-"))
    folder.chmod(0o755)
    path = folder / "log"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    path.chmod(0o666)
    receiver.settimeout(5)
    try:
        yield path, receiver
    finally:
        receiver.close()
        shutil.rmtree(folder)


def received(receiver: socket.socket, wait: float) -> list[str]:
    receiver.settimeout(wait)
    lines = []
    with contextlib.suppress(TimeoutError):
        while True:
            lines.append(receiver.recv(4096).decode())
    return lines


def test_a_changed_verdict_is_kept_and_told_to_the_journal_once(serve, port: int, tmp_path: Path, journal) -> None:
    """keepalived drops the script's output: a new verdict goes to the journal, once, and stays in
    the verdict file; the same verdict an interval later says nothing more."""
    log_socket, receiver = journal
    verdict_file = tmp_path / "node-health.verdict"
    extra = ("--verdict-file", str(verdict_file), "--log-socket", str(log_socket))
    assert run(port, *extra).returncode == 1  # nothing answers: sick, no peer to ask
    [line] = received(receiver, 5)
    assert re.fullmatch(rf"<28>fulcrum-node-health\[\d+\]: sick, stepping down: API http://127\.0\.0\.1:{port}\S+: "
                        r"ConnectionRefusedError: .*", line), line  # fmt: skip
    assert verdict_file.read_text() == line.split("]: ", 1)[1] + "\n"
    assert verdict_file.stat().st_mode & 0o777 == 0o644
    assert run(port, *extra).returncode == 1
    assert received(receiver, 0.5) == []

    serve("127.0.0.1", "ok")
    assert run(port, *extra).returncode == 0
    [line] = received(receiver, 5)
    assert re.fullmatch(r"<29>fulcrum-node-health\[\d+\]: healthy again", line), line
    assert verdict_file.read_text() == "healthy\n"
    assert run(port, *extra).returncode == 0
    assert received(receiver, 0.5) == []


def test_a_first_healthy_verdict_tells_nothing(serve, port: int, tmp_path: Path, journal) -> None:
    log_socket, receiver = journal
    serve("127.0.0.1", "ok")
    verdict_file = tmp_path / "node-health.verdict"
    assert run(port, "--verdict-file", str(verdict_file), "--log-socket", str(log_socket)).returncode == 0
    assert received(receiver, 0.5) == []
    assert verdict_file.read_text() == "healthy\n"
