"""The control plane at size, natively on the host (no VM, no IPVS): everything up to validation.

    .venv/bin/python tests/bench/native_control_plane.py [--sizes 5000,10000] [--per-service 100]

It starts the real API (uvicorn with the app factory, a real SQLite file in a temporary data
directory, apply mode `local`), builds the configuration through it (services of --per-service
backends, health check `none`, as `make bench`'s control part does) and, at each size, times:

- one API edit: PATCH of one backend's weight, which validates the candidate (median of --reps);
- a full candidate validation (`candidate_snapshot` on the same SQLite file, in this process);
- rendering keepalived.conf, and `keepalived -t` on it (when keepalived is installed);
- the read-back's own work: the expected IPVS table, and one poll's comparison (the kernel's
  table stood in for by the expected one);
- a commit: the engine renders and validates with the real tools, then stops as VALIDATED
  because this host has no IPVS;
- the API process's VmRSS / VmHWM;
- the statistics history's share: a fresh process holding a `History` for every service and
  backend with its finished hours on disk as in the API, fed one sample each (what exists as soon
  as the table is polled once) and then a day of one-a-minute samples (`--history-minutes`), idle
  (all metrics 0) and busy (traffic on every backend), as VmRSS growth of that process, with the
  file's size and `memory_bound` (a day of one-a-second samples too).

It prints the conditions and one JSON document; `make bench` measures the same in the VM with IPVS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for lab (run as a script)
from lab.api_client import ApiClient

FIRST_PORT = 20000


def backend_address(n: int) -> str:
    return f"10.88.{n // 250}.{n % 250 + 1}"


def vm_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in kB."""
    text = Path(f"/proc/{pid}/status").read_text()
    return {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()
            if line.startswith(("VmRSS:", "VmHWM:"))}


def timed(action: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


class Api(ApiClient):
    """The real API in a child process, on a free loopback port (the calls: lab.api_client)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {**os.environ, "FULCRUM_DATA_DIR": str(data_dir), "FULCRUM_APPLY_MODE": "local",
               "FULCRUM_COOKIE_SECURE": "false", "FULCRUM_REAPPLY_ON_START": "false"}
        self.log = (data_dir / "api.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "fulcrum.main:create_app", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning", "--no-access-log"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.connect(f"http://127.0.0.1:{self.port}", timeout=600)
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.request("GET", "/setup").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the API did not start; see {data_dir / 'api.log'}")
            time.sleep(0.2)
        self.setup("admin", "bench-password-1")

    def stop(self) -> None:
        self.disconnect()
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def full_validation(database_url: str) -> dict[str, Any]:
    """Time what a whole-candidate validation costs, and the renderer, on the API's own database."""
    from sqlalchemy.orm import Session

    from fulcrum.apply.validators import validate_keepalived
    from fulcrum.dataplane.ipvs_table import compare, down_real_servers, expected_ipvs
    from fulcrum.db import make_engine
    from fulcrum.render import RuntimePaths, render_keepalived
    from fulcrum.services.candidate import candidate_snapshot

    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            validate_seconds, snapshot = timed(lambda: candidate_snapshot(session))
    finally:
        engine.dispose()
    render_seconds, text = timed(lambda: render_keepalived(snapshot, RuntimePaths()))
    expected_seconds, expected = timed(lambda: expected_ipvs(snapshot))
    # One read-back poll's own work, the kernel's table standing in for itself: what it costs
    # beyond reading IPVS, at every poll until the kernel matches.
    poll_seconds, _ = timed(lambda: (compare(expected, expected), down_real_servers(expected, expected)))
    found: dict[str, Any] = {"full_validation_seconds": validate_seconds, "render_keepalived_seconds": render_seconds,
                             "keepalived_conf_bytes": len(text), "expected_ipvs_seconds": expected_seconds,
                             "readback_poll_seconds": poll_seconds}
    if shutil.which("keepalived"):
        with tempfile.TemporaryDirectory() as folder:
            conf = Path(folder) / "keepalived.conf"
            conf.write_text(text)
            seconds, result = timed(lambda: validate_keepalived(conf))
            found["keepalived_t_seconds"] = seconds
            found["keepalived_t_ok"] = result.ok
    return found


HISTORY_PROBE = """
import json, sys, tempfile
from pathlib import Path
from fulcrum.telemetry.history import History, memory_bound
from fulcrum.telemetry.series import METRICS
from fulcrum.telemetry.minutes import DiskMinutes
def rss():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))
services, backends, minutes, busy = (int(a) for a in sys.argv[1:5])
keys = [(f"cp{s}", None) for s in range(services)] + [(f"cp{b % services}", f"b{b}") for b in range(backends)]
zero = (0.0,) * len(METRICS)
traffic = tuple(float(i + 1) for i in range(len(METRICS)))
with tempfile.TemporaryDirectory() as folder:
    store = DiskMinutes(Path(folder) / "statistics-history.sqlite")  # as the API keeps it
    history = History(store)
    before = rss()
    history.add(0.0, [(key, traffic if busy else zero) for key in keys])
    first = rss()
    for minute in range(1, minutes + 1):
        history.add(minute * 60.0, [(key, traffic if busy else zero) for key in keys])
        if minute % 60 == 1:
            store.flush()  # an hour passes between two hours' writes, not a few milliseconds
    print(json.dumps({"one_sample_kb": first - before, "after_kb": rss() - before,
                      "memory_bytes": history.memory_bytes(), "bound_bytes": memory_bound(services, backends),
                      "file_bytes": sum(p.stat().st_size for p in Path(folder).iterdir())}))
    store.close()
"""


def history_share(services: int, backends: int, minutes: int) -> dict[str, Any]:
    found = {}
    for label, busy in (("idle", 0), ("busy", 1)):
        seconds, run = timed(lambda busy=busy: subprocess.run(
            [sys.executable, "-c", HISTORY_PROBE, str(services), str(backends), str(minutes), str(busy)],
            check=True, capture_output=True, text=True))
        found[label] = {**json.loads(run.stdout), "seconds": seconds}
    return found


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="fulcrum-native-bench-"))
    api = Api(work)
    data: dict[str, Any] = {
        "conditions": {
            "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_start": os.getloadavg(), "per_service": args.per_service, "reps": args.reps,
            "history_minutes": args.history_minutes, "keepalived": shutil.which("keepalived"),
            "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                  cwd=Path(__file__).parent).stdout.strip(),
        },
        "sizes": [],
    }
    total = services = 0
    ids: list[int] = []
    try:
        for size in sizes:
            level: dict[str, Any] = {"backends": size}
            started = time.perf_counter()
            while total < size:
                count = min(size - total, args.per_service)
                spec = {"name": f"cp{services}", "address": "10.77.0.100", "ports": [FIRST_PORT + services],
                        "scheduler": "rr", "health_check": {"type": "none"},
                        "backends": [{"address": backend_address(total + i)} for i in range(count)]}
                ids.append(api.post("/services", spec, expect=201)["id"])
                total += count
                services += 1
            level["services"] = services
            level["build_seconds"] = time.perf_counter() - started
            first = api.get(f"/services/{ids[0]}")["backends"][0]
            edits = []
            for rep in range(args.reps):
                seconds, _ = timed(lambda rep=rep: api.call(
                    "PATCH", f"/services/{ids[0]}/backends/{first['id']}", json={"weight": 2 + rep % 2}))
                edits.append(seconds)
            level["api_edit_seconds"] = {"median": statistics.median(edits), "all": edits}
            level.update(full_validation(f"sqlite:///{work / 'fulcrum.db'}"))
            commit_seconds, revision = timed(lambda: api.post("/revisions", {"message": f"{size}"}, expect=(200, 201)))
            level["commit"] = {
                "seconds": commit_seconds, "state": revision["state"],
                "steps": {"_".join(filter(None, (s["step"], s["daemon"]))): s["seconds"]
                          for s in revision["apply_result"]["steps"]},
            }
            level["api_memory_kb"] = vm_status(api.process.pid)
            level["history"] = history_share(services, total, args.history_minutes)
            data["sizes"].append(level)
            print(json.dumps(level), file=sys.stderr, flush=True)
    finally:
        api.stop()
        shutil.rmtree(work, ignore_errors=True)
    data["conditions"]["load_end"] = os.getloadavg()
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,10000", help="real servers at each level (default: 5000,10000)")
    parser.add_argument("--per-service", type=int, default=100, help="backends per service (default: 100)")
    parser.add_argument("--reps", type=int, default=5, help="API edits timed at each size (default: 5)")
    parser.add_argument("--history-minutes", type=int, default=1440,
                        help="minutes of one-a-minute samples fed to the history probe (default: a day)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    data = measure(args)
    text = json.dumps(data, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
