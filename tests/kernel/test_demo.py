"""`make demo` on a kernel that loads IPVS: scripts/demo builds the lab right here (no VM),
serves the API with live traffic on localhost, and Ctrl-C leaves nothing behind.

On the CI host (no IPVS) `make demo` takes its VM path instead; this test is the proof of the
other path, run where IPVS exists: inside the kernel-rig VM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

import lab
from lab.wait import StopWaiting

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
PORT = 18080


class Output:
    """The demo's stdout, collected by a thread so that waiting never blocks on a read."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def namespaces() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split())


def test_demo_runs_on_a_host_with_ipvs_and_stops_cleanly(tmp_path):
    before = namespaces()
    env = {**os.environ, "FULCRUM_DEMO_PORT": str(PORT), "FULCRUM_DEMO_RATE": "5",
           "FULCRUM_DEMO_RUN_DIR": str(tmp_path / "run")}
    process = subprocess.Popen([str(REPO / "scripts" / "demo")], cwd=REPO, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lab.defer(lambda: process.poll() is None and (process.send_signal(signal.SIGINT), process.wait(120)))
    output = Output(process)

    def ready():
        if process.poll() is not None:
            raise StopWaiting(f"scripts/demo exited with {process.returncode}:\n{output.text}")
        return re.search(r"Password\s+(\S+)", output.text)

    password = lab.wait_until(ready, 900, what="the demo's ready message", interval=1)[1]
    assert "building the lab on this host" in output.text, output.text

    # Generous: argon2 at login takes seconds in an emulated VM on a busy host.
    with httpx.Client(base_url=f"http://127.0.0.1:{PORT}/api/v1", timeout=120) as api:
        api.post("/auth/login", json={"username": "admin", "password": password}).raise_for_status()

        def web_connections() -> int | None:
            (web,) = [s for s in api.get("/stats/current").json()["services"] if s["name"] == "web"]
            return web["counters"]["conns"] if web["backends_up"] == 3 and web["counters"] else None

        first = lab.wait_until(web_connections, 60, what="the web service with 3 backends up in the stats")
        lab.wait_until(lambda: (web_connections() or 0) > first, 60, what="connections through the VIP to grow")

    process.send_signal(signal.SIGINT)
    assert process.wait(180) == 130, output.text
    assert "nothing left running" in output.text
    assert namespaces() == before
