"""The demo appliance, built inside the VM (or on a host whose kernel has IPVS) by scripts/demo.

    python scripts/demo-lab.py RUN_DIR [--port 8080] [--listen 0.0.0.0] [--rate 25]

Builds the lab's NAT topology (a client, one LB, three backends), runs Fulcrum's API for the
LB exactly as `tests/lab/appliance.py` does in the kernel tests (uvicorn, in-process apply
engine, keepalived started by the engine), creates the first admin with a generated password,
a VIP group (keepalived's VRRP brings the VIP up) and a service `web` (wlc, three backends,
TCP health checks), commits it, and starts a steady HTTP load from the client through the VIP.

Progress goes to stdout and RUN_DIR/progress; RUN_DIR/ready (JSON: url, username, password,
seconds) appears once everything runs. It then waits for SIGTERM/SIGINT or RUN_DIR/stop, and
tears everything down (load, API, keepalived, servers, namespaces) before exiting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import lab  # noqa: E402
from lab import appliance, traffic  # noqa: E402
from lab.topo import GATEWAY  # noqa: E402

# IPVS with every scheduler (to try them from the dashboard), conntrack, and the lab's links.
MODULES = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_wlc", "ip_vs_lblc", "ip_vs_lblcr", "ip_vs_dh",
           "ip_vs_sh", "ip_vs_sed", "ip_vs_nq", "ip_vs_fo", "ip_vs_ovf", "ip_vs_mh", "nf_conntrack", "veth", "bridge"]
T0 = time.monotonic()
stop = threading.Event()
waiting = False  # True once everything runs: a signal then ends the wait loop


def on_signal(signum, frame) -> None:
    stop.set()
    if not waiting:  # still building: unwind through the cleanup scope at once
        raise KeyboardInterrupt


def say(run_dir: Path, text: str) -> None:
    line = f"[{time.monotonic() - T0:5.1f} s] {text}"
    print(line, flush=True)
    with open(run_dir / "progress", "a") as handle:
        handle.write(line + "\n")


def main() -> int:
    global waiting
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--listen", default="0.0.0.0")
    parser.add_argument("--rate", type=float, default=25)
    parser.add_argument("--start-timeout", type=float, default=900)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fulcrum-demo"))
    args = parser.parse_args()
    run_dir: Path = args.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ("ready", "stop", "progress"):
        (run_dir / name).unlink(missing_ok=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    shutil.rmtree(args.workdir, ignore_errors=True)  # a previous run's database and state
    subprocess.run(["modprobe", "-a", *MODULES], check=True)

    webui = REPO / "webui" / "dist"
    env = {"FULCRUM_WEBUI_DIR": str(webui)} if (webui / "index.html").is_file() else {}
    with lab.scope("demo"):
        net = lab.build("nat", backends=3, workdir=args.workdir, static_vips=False)
        net.lb.add_address(GATEWAY, dev=net.lb.interfaces["back"])
        for backend in net.backends:
            net.start_http(backend)
        say(run_dir, "lab up: client c1 10.77.0.10, LB lb1 10.77.0.2 / 10.77.1.2, backends b1-b3 10.77.1.21-23; "
                     "starting the API (a minute or two in the emulated VM)")
        # A generous start-up allowance: on a busy 2-core host the emulated VM needs minutes.
        api = appliance.Appliance(net.lb, args.workdir / "appliance", listen=(args.listen, args.port), env=env)
        api.start(timeout=args.start_timeout)
        say(run_dir, f"API answering after {api.start_seconds:.0f} s")
        password = api.setup("admin")
        api.put_node(name="lb1", vrrp_interface=net.lb.interfaces["front"])
        api.create_vip_group(name="front", virtual_router_id=51, addresses=[f"{net.vip}/32"])
        api.create_service(
            name="web", description="demo: three HTTP backends", address=net.vip, ports=[80], scheduler="wlc",
            backends=[{"address": address, "weight": weight} for address, weight in zip(net.backend_addresses(), (2, 1, 1))],
        )
        revision = api.commit("demo: web service", expect_state=None)
        say(run_dir, f"revision {revision['number']}: {revision['state']}: {revision['apply_result']['message']}")
        lab.wait_until(lambda: api.service_stats("web") and api.service_stats("web")["backends_up"] == 3, 120,
                       what="three healthy backends")
        load = traffic.start(net.client, net.vip, 80, rate=args.rate)
        say(run_dir, f"traffic: {load.description}")
        ready = {
            "url": f"http://127.0.0.1:{args.port}/",
            "username": "admin",
            "password": password,
            "seconds": round(time.monotonic() - T0, 1),
            "dashboard": bool(env),
        }
        tmp = run_dir / "ready.tmp"
        tmp.write_text(json.dumps(ready))
        os.replace(tmp, run_dir / "ready")
        waiting = True
        say(run_dir, "ready")
        while not stop.wait(1):
            if (run_dir / "stop").exists():
                break
            for process in (api, load):
                if not process.running:
                    say(run_dir, f"{process.description} stopped unexpectedly:\n{process.log()[-3000:]}")
                    stop.set()
        say(run_dir, "stopping: load, API, keepalived, servers, namespaces")
    say(run_dir, "stopped")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("demo-lab: interrupted while starting; cleaned up", flush=True)
        sys.exit(130)
