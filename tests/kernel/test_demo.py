"""`make demo` on a kernel that loads IPVS: scripts/demo builds the HA pair right here (no VM),
serves both nodes' APIs on localhost with live traffic through the active node, and Ctrl-C
leaves nothing behind.

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

# Two API start-ups, side by side in the emulated VM, then pairing: minutes.
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(1800)]

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

    password = lab.wait_until(ready, 1500, what="the demo's ready message", interval=1)[1]
    assert "building the lab on this host" in output.text, output.text

    # Generous: argon2 at login takes seconds in an emulated VM on a busy host.
    with (httpx.Client(base_url=f"http://127.0.0.1:{PORT}/api/v1", timeout=120) as lb1,
          httpx.Client(base_url=f"http://127.0.0.1:{PORT + 1}/api/v1", timeout=120) as lb2):
        for api in (lb1, lb2):  # the same admin on both: lb2 has lb1's users by replication
            answer = api.post("/auth/login", json={"username": "admin", "password": password})
            answer.raise_for_status()
            # A script's way: the bearer token (a change made with only the cookie needs an Origin).
            api.headers["Authorization"] = f"Bearer {answer.json()['token']}"

        def web_connections() -> int | None:
            (web,) = [s for s in lb1.get("/stats/current").json()["services"] if s["name"] == "web0"]
            return web["counters"]["conns"] if web["backends_up"] == 3 and web["counters"] else None

        first = lab.wait_until(web_connections, 60, what="the web0 service with 3 backends up in the stats")
        lab.wait_until(lambda: (web_connections() or 0) > first, 60, what="connections through the VIP to grow")

        # The pair: lb1 active, lb2 standby at lb1's revision, each seeing the other.
        statuses = {name: api.get("/ha/status").json() for name, api in (("lb1", lb1), ("lb2", lb2))}
        assert {name: s["node"]["role"] for name, s in statuses.items()} == {"lb1": "active", "lb2": "standby"}, statuses
        assert {s["sync"]["state"] for s in statuses.values()} == {"in_sync"}, statuses
        refused = lb2.post("/services", json={"name": "x", "address": "10.77.0.101", "ports": [8080]})
        assert refused.status_code == 409 and refused.json()["code"] == "standby_read_only", refused.text

    process.send_signal(signal.SIGINT)
    assert process.wait(180) == 130, output.text
    assert "nothing left running" in output.text
    assert namespaces() == before
