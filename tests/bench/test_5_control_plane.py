"""Part 5: the control plane at size. Time from an API commit to the kernel matching it, for 10,
100, 1,000, 5,000 and 10,000 backends spread over services; keepalived's reload time at each size; the
API process's memory; and whether a connection through the VIP survives every reload.

The configuration grows by adding services through the API (10 backends, then 90, then services
of 100 backends). The backends are addresses in 10.88.0.0/16 with health check `none`, so
keepalived puts them in IPVS as configured and no checker traffic competes with the reload
(checks are part 2's subject). At each size:

- the commit: POST /revisions, which returns once the engine has rendered, validated (keepalived
  -t, nft -c), swapped the files, reloaded keepalived and read IPVS back until it matched; its
  wall time, the engine's own step timings, and (independently, from /proc/net/ip_vs polled in a
  thread inside the LB) when the kernel held every real server;
- one weight changed: REPS times (2 from 5,000 on), a PATCH of one backend's weight (the API edit,
  timed alone) and a commit, so keepalived re-reads the whole configuration and applies one change;
  the commit's wall time, the engine's reload + read-back time, and when /proc/net/ip_vs showed the
  new weight;
- memory: VmRSS and VmHWM of the API process and of keepalived's processes;
- a TCP connection through the VIP (the `echo` service) opened before the first commit gets an
  echo after each one.

With FULCRUM_BENCH_PYSPY=PATH (a py-spy executable the VM can run; pass it as
`--bench-env FULCRUM_BENCH_PYSPY=PATH`), the API process and its children are sampled with py-spy
during each size's one-weight changes from PROFILE_FROM backends on: collapsed stacks in
data/profile-api-SIZE.txt (`py-spy record --nonblocking --format raw`: the API is not paused to be
sampled), to read where the emulated time goes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import lab
from bench import ipvsproc, results
from bench.results import spread
from lab import client
from lab.netns import proc_net

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("control"), pytest.mark.timeout(3600)]

SIZES = (10, 100, 1000, 5000, 10000)
PER_SERVICE = 100
REPS = 3  # one-weight changes per size; 2 from 5,000 on, where one takes most of a minute in the VM
FIRST_PORT = 20000
COMMIT_TIMEOUT = 900
PROFILE_FROM = 5000
ECHO_PORT = 7


def backend_address(n: int) -> str:
    return f"10.88.{n // 250}.{n % 250 + 1}"


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in kB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(line.split()[1]) for line in status.splitlines() for key in ("VmRSS", "VmHWM")
            if line.startswith(key + ":")}


def keepalived_memory(state_dir: Path) -> dict[str, dict[str, int]]:
    found = {}
    for name in ("keepalived.pid", "keepalived-checkers.pid", "keepalived-vrrp.pid"):
        try:
            pid = int((state_dir / name).read_text().split()[0])
            found[name.removesuffix(".pid")] = memory(pid)
        except (OSError, ValueError, IndexError):
            continue
    return found


def start_profiler(out: Path, pid: int, size: int) -> subprocess.Popen[bytes] | None:
    """py-spy sampling the API (and its children) until stop_profiler, when asked for and at size."""
    pyspy = os.environ.get("FULCRUM_BENCH_PYSPY")
    if not pyspy or size < PROFILE_FROM:
        return None
    output = out / f"profile-api-{size}.txt"
    return subprocess.Popen([pyspy, "record", "--pid", str(pid), "--subprocesses", "--rate", "20", "--nonblocking", "--format", "raw",
                             "--output", str(output)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profiler(profiler: subprocess.Popen[bytes] | None) -> None:
    if profiler is not None:
        profiler.send_signal(signal.SIGINT)  # py-spy writes its output as it stops
        profiler.wait(timeout=120)


def timed_commit(env, message: str, expected_reals: int, matched: Callable[[str], bool] | None = None) -> dict:
    """Commit; time it, and separately time when /proc/net/ip_vs holds `expected_reals` real servers
    (and, given `matched`, when that text also satisfies it)."""
    seen: dict[str, float] = {}
    stop = threading.Event()
    # Reading /proc/net/ip_vs costs the kernel a text line per real server: poll large tables
    # less often, so the watcher does not take the CPU from the commit it times.
    interval = 0.05 if expected_reals < 500 else 0.5
    started = time.monotonic()

    def watch() -> None:
        while not stop.is_set():
            text = proc_net(env.lb, "ip_vs")
            if ipvsproc.count_real_servers(text) == expected_reals and (matched is None or matched(text)):
                seen.setdefault("kernel", time.monotonic() - started)
            else:
                seen.pop("kernel", None)  # count only the moment it matched for good
            stop.wait(interval)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        revision = env.api.post("/revisions", {"message": message}, expect=201, timeout=COMMIT_TIMEOUT)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        watcher.join()
    # Keyed "validate_keepalived", "load_keepalived", "verify_keepalived" (the IPVS read-back), ...
    steps = {"_".join(filter(None, (step["step"], step["daemon"]))): step["seconds"]
             for step in revision["apply_result"]["steps"]}
    return {"state": revision["state"], "commit_seconds": elapsed, "kernel_matched_seconds": seen.get("kernel"),
            "steps": steps, "reload_and_readback_seconds": steps.get("load_keepalived", 0) + steps.get("verify_keepalived", 0),
            "message": revision["apply_result"]["message"],
            # Real servers reported down or unchecked: they make the read-back wait its settle time.
            "warnings": revision["apply_result"]["warnings"][:5], "warning_count": len(revision["apply_result"]["warnings"])}


def test_commit_to_kernel_at_size(env):
    for backend in env.nat:
        key = f"{backend.role}:{ECHO_PORT}"
        if key not in env.servers:
            env.servers[key] = env.net.start_tcp_echo(backend, port=ECHO_PORT)
    if "echo" not in env.ids:
        env.ids["echo"] = env.api.create_service(
            name="echo", address=env.net.vip, ports=[ECHO_PORT], scheduler="rr",
            backends=[{"address": b.address} for b in env.nat])["id"]
        env.api.commit("bench: echo")
    lab.wait_until(lambda: len(ipvsproc.read(env.lb).get(f"TCP {env.net.vip}:{ECHO_PORT}", {})) == 3, 60,
                   what="the echo service's backends")
    held = client.hold_tcp(env.clients[0], env.net.vip, ECHO_PORT, timeout=30)
    base_reals = ipvsproc.real_server_count(env.lb)
    data = {"sizes": [], "per_service": PER_SERVICE, "reps": REPS, "base_real_servers": base_reals,
            "reference": "keepalived upstream: 2,284 virtual / 37,298 real servers reloaded in about 5 s"}
    total, services, survived_all = 0, 0, True
    api_pid = env.api.pid

    def survives(tag: str) -> bool:
        payload = f"ping {tag}\n".encode()
        try:
            return client.exchange(held, payload) == payload
        except OSError:
            return False

    assert survives("before"), "the held connection does not echo even before any reload"
    try:
        for size in SIZES:
            level = {"backends": size}
            started = time.monotonic()
            while total < size:
                count = min(size - total, PER_SERVICE if total >= 100 else size - total)
                spec = {"name": f"cp{services}", "address": env.net.vip, "ports": [FIRST_PORT + services],
                        "scheduler": "rr", "health_check": {"type": "none"},
                        "backends": [{"address": backend_address(total + i)} for i in range(count)]}
                env.ids[spec["name"]] = env.api.create_service(**spec)["id"]
                total += count
                services += 1
            level["services"] = services
            level["api_edit_seconds"] = time.monotonic() - started
            level["commit"] = timed_commit(env, f"bench: {size} backends", base_reals + total)
            level["survived_commit"] = survives(f"{size} commit")
            reloads = []
            profiler = start_profiler(env.out, api_pid, size)
            for rep in range(REPS if size <= 1000 else 2):
                cp0 = env.service("cp0")
                first = cp0["backends"][0]
                weight = 2 if first["weight"] == 1 else 1
                edit_started = time.monotonic()
                env.api.update_backend(env.ids["cp0"], first["id"], weight=weight)
                edit_seconds = time.monotonic() - edit_started
                real = (first["address"], first["port"] or cp0["ports"][0])
                service = ("TCP", cp0["address"], cp0["ports"][0])
                reload = timed_commit(env, f"bench: one weight at {size}", base_reals + total,
                                      lambda text, service=service, real=real, weight=weight:
                                      ipvsproc.weight_in(text, service, real) == weight)
                reload["edit_seconds"] = edit_seconds
                reload["survived"] = survives(f"{size} reload {rep}")
                reloads.append(reload)
            stop_profiler(profiler)
            level["reloads"] = reloads
            level["reload_seconds"] = spread([r["reload_and_readback_seconds"] for r in reloads])
            level["reload_commit_seconds"] = spread([r["commit_seconds"] for r in reloads])
            level["reload_kernel_seconds"] = spread([r["kernel_matched_seconds"] for r in reloads])
            level["edit_seconds"] = spread([r["edit_seconds"] for r in reloads])
            level["api_memory_kb"] = memory(api_pid)
            level["keepalived_memory_kb"] = keepalived_memory(env.api.state_dir)
            level["survived"] = level["survived_commit"] and all(r["survived"] for r in reloads)
            survived_all &= level["survived"]
            data["sizes"].append(level)
            results.save(env.out, "control_plane", data)
    finally:
        started = time.monotonic()
        for n in range(services):
            env.api.delete_service(env.ids.pop(f"cp{n}"))
        if services:
            data["teardown"] = timed_commit(env, "bench: control-plane services removed", base_reals)
            data["teardown"]["api_edit_and_commit_seconds"] = time.monotonic() - started
        results.save(env.out, "control_plane", data)
    assert survived_all, "a connection through the VIP did not survive a reload: see control_plane.json"
