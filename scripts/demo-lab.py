"""The demo HA pair, built inside the VM (or on a host whose kernel has IPVS) by scripts/demo.

    python scripts/demo-lab.py RUN_DIR [--port 8080] [--listen 0.0.0.0] [--rate 25]

Builds the HA lab of the kernel tests (tests/lab/pair.py): two appliances lb1 and lb2, each its
API, apply engine and keepalived in its own namespace, three backends, a client and a sync link.
Creates the admin (a generated password) on both, configures lb1 through its API (three VIP
groups in one VRRP sync group, five services over the three front VIPs, connection sync on
eth2), commits, and pairs lb2 with a pairing code, so that lb2 receives everything by
replication. Then the client sends a steady stream of HTTP requests through the VIPs.

lb1's dashboard is relayed to LISTEN:PORT, lb2's to LISTEN:PORT+1 (tests/lab/relay.py).
Progress goes to stdout and RUN_DIR/progress; RUN_DIR/ready (JSON: urls, username, password,
seconds) appears once everything runs. It then waits for SIGTERM/SIGINT or RUN_DIR/stop, and
tears everything down (load, APIs, keepalived, servers, namespaces) before exiting. The work
folder's logs (each API's, keepalived's syslog) are copied to RUN_DIR/logs when a stop is asked
for, before the teardown, and again at exit: in the VM the work folder is in guest memory and
goes with the VM.
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
from lab import pair as ha  # noqa: E402
from lab.pair import HaPair  # noqa: E402
from lab.relay import PortRelay  # noqa: E402

# IPVS with every scheduler (to try them from the dashboard), conntrack, and the lab's links.
MODULES = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_wlc", "ip_vs_lblc", "ip_vs_lblcr", "ip_vs_dh",
           "ip_vs_sh", "ip_vs_sed", "ip_vs_nq", "ip_vs_fo", "ip_vs_ovf", "ip_vs_mh", "nf_conntrack", "nf_tables", "nft_ct",
           "nft_chain_nat", "nft_nat", "nft_masq", "nft_reject_inet", "veth", "bridge"]
# Adverts every second: the interval that stayed free of false failovers in the emulated VM
# (ha/README.md); an appliance on real hardware can go much lower.
ADVERT = 1.0
NEWCOMER_VIP, NEWCOMER_PORT = "10.77.0.101", 8080
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


def keep_logs(workdir: Path, run_dir: Path) -> None:
    """Copy every *.log of the work folder to RUN_DIR/logs, keeping their relative paths."""
    for log in sorted(workdir.rglob("*.log")):
        kept = run_dir / "logs" / log.relative_to(workdir)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, kept)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--listen", default="0.0.0.0")
    parser.add_argument("--rate", type=float, default=25)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fulcrum-demo"))
    args = parser.parse_args()
    run_dir: Path = args.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ("ready", "stop", "progress"):
        (run_dir / name).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "logs", ignore_errors=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    shutil.rmtree(args.workdir, ignore_errors=True)  # a previous run's database and state
    args.workdir.mkdir(parents=True)
    subprocess.run(["modprobe", "-a", *MODULES], check=True)

    try:
        return run(args, run_dir)
    finally:
        keep_logs(args.workdir, run_dir)


def run(args: argparse.Namespace, run_dir: Path) -> int:
    global waiting
    webui = REPO / "webui" / "dist"
    env = {"FULCRUM_WEBUI_DIR": str(webui)} if (webui / "index.html").is_file() else {}
    with lab.scope("demo"):
        say(run_dir, "lab up next: client c1 10.77.0.10, lb1 and lb2 (front .2/.3, back 10.77.1.2/.3, "
                     "sync 10.77.2.2/.3), backends b1-b3 10.77.1.21-23; both APIs starting (minutes in the emulated VM)")
        pair = HaPair.build(args.workdir, env=env)
        lb1, lb2 = pair.nodes
        say(run_dir, f"both APIs answering after {time.monotonic() - T0:.0f} s")
        password = pair.setup_admin()  # one password on both; lb2 takes lb1's users once paired
        pair.configure(lb1, advert_interval=ADVERT, sync=True)
        revision = lb1.api.commit("demo: three VIP groups, five services", expect_state=None)
        say(run_dir, f"lb1 revision {revision['number']}: {revision['state']}: {revision['apply_result']['message']}")
        pair.wait_single_master(300, node=lb1)
        lb2.api.put("/node", pair.node_settings(lb2))
        pair.pair(lb1, lb2)
        lab.wait_until(lambda: all(node.api.get("/ha/status")["sync"]["state"] == "in_sync" for node in pair.nodes),
                       600, what="lb1 and lb2 in sync", interval=2)
        say(run_dir, f"paired: lb2 runs lb1's configuration (revision {lb2.api.revisions()[0]['number']} on lb2), "
                     f"lb1 holds the VIPs {', '.join(ha.ALL_VIPS)}")
        lab.wait_until(lambda: (stats := lb1.api.service_stats("web0")) and stats["backends_up"] == 3, 180,
                       what="three healthy backends")
        # Also to 10.77.0.101:8080, where nothing listens yet: the first service a newcomer
        # creates there fills at once (webui/e2e-lab does exactly that).
        load = pair.start_probe(rate=args.rate, name="demo-traffic", extra=[(NEWCOMER_VIP, NEWCOMER_PORT)])
        say(run_dir, f"traffic: {load.description}")
        for node, port in ((lb1, args.port), (lb2, args.port + 1)):
            PortRelay((args.listen, port), node.host, ("127.0.0.1", ha.API_PORT)).start()
        ready = {
            "url": f"http://127.0.0.1:{args.port}/",
            "peer_url": f"http://127.0.0.1:{args.port + 1}/",
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
            for process in (lb1.api, lb2.api, load):
                if not process.running:
                    say(run_dir, f"{process.description} stopped unexpectedly:\n{process.log()[-3000:]}")
                    stop.set()
        keep_logs(args.workdir, run_dir)  # now: a teardown cut short (the VM killed) would lose them
        say(run_dir, "stopping: load, APIs, keepalived, servers, namespaces")
    say(run_dir, "stopped")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("demo-lab: interrupted while starting; cleaned up", flush=True)
        sys.exit(130)
