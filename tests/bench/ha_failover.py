"""HA failover benchmark in the VM lab: time to recovery and failed requests for each kind of
failure, and failover time against the VRRP advert interval, unplanned against planned.

Runs inside the kernel-test VM (it needs IPVS, keepalived and namespaces), through the kernel
rig, as root on the host:

    FULCRUM_VM_TIMEOUT=10800 tests/kernel/run-in-vm -s tests/bench/ha_failover.py

It prints Markdown tables with the conditions and writes them to
$FULCRUM_BENCH_OUT (default .kernel-results/ha_failover.md, or the results folder run-in-vm
uses). Settings (environment):

    FULCRUM_BENCH_RUNS        runs per measurement (default 10)
    FULCRUM_BENCH_ADVERT      advert interval for the failure-kind table (default 1)
    FULCRUM_BENCH_INTERVALS   advert intervals to compare (default 1,0.3,0.1)
    FULCRUM_BENCH_IDLE        seconds of quiet per interval, counting false failovers (default 120)
    FULCRUM_BENCH_RATE        client requests per second (default 20)
    FULCRUM_BENCH_SESSIONS    established echo sessions held through each run (default 5)

What is measured, per run, on the pair of real appliances of tests/lab/pair.py, each run
failing whichever node holds the VIPs (so the direction alternates):

  - VIPs moved: from the failure to the moment the peer holds every VIP of every group (each
    node's addresses sampled every 5 ms by a thread inside its namespace);
  - service restored: from the failure to the end of the first successful client request after
    the last failed one (0 when none failed); the client makes `rate` requests per second, each
    a new TCP connection with a 1 s timeout, round robin over the three front VIPs;
  - failed requests: requests in the run that failed (refused, reset or timed out);
  - established connections preserved: SESSIONS echo sessions through the echo service, opened
    before the failure (and seen in the standby's IPVS connection table through connection sync,
    up to SYNC_WAIT seconds), each echoing once more after the takeover.

Failure kinds: keepalived SIGKILLed (no goodbye: the peer waits out the master-down timer),
the front interface (VRRP and VIPs) down, the backend interface (tracked) down, the API hung
(SIGSTOP: the node-health check times out, so this is bounded by its interval, timeout and the
Python start-up of each check), the API stopped (its port refuses: the check fails at once, so
bounded by the interval), and the planned hand-over (POST /ha/maintenance; measured from the
request). A false failover is a VIP moving when nothing was done to the nodes: counted over an
idle period per interval and between runs.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

import lab  # noqa: E402
from lab import client, netns  # noqa: E402
from lab.pair import ALL_VIPS, API_START_TIMEOUT, ECHO_PORT, FRONT_VIPS, NODE_HEALTH_ENV, HaPair, HolderLog, Node, outage  # noqa: E402

RUNS = int(os.environ.get("FULCRUM_BENCH_RUNS", "10"))
# Which parts: "kinds" (every failure at the default interval), "intervals" (unplanned vs planned
# per advert interval, with an idle period counting false failovers), or both.
PARTS = set(os.environ.get("FULCRUM_BENCH_PARTS", "kinds,intervals").split(","))
DEFAULT_ADVERT = float(os.environ.get("FULCRUM_BENCH_ADVERT", "1"))
INTERVALS = [float(x) for x in os.environ.get("FULCRUM_BENCH_INTERVALS", "1,0.3,0.1").split(",")]
IDLE_SECONDS = float(os.environ.get("FULCRUM_BENCH_IDLE", "120"))
RATE = float(os.environ.get("FULCRUM_BENCH_RATE", "20"))
SESSIONS = int(os.environ.get("FULCRUM_BENCH_SESSIONS", "5"))
SYNC_WAIT = 20  # seconds for the standby to hold the sessions' synced entries before the failure
# Node health every 10 s with a 5 s probe timeout (the kernel tests' lab uses 30 s and 10 s, made
# for a VM loaded by other work): an API failure is seen within 2 runs, so ten runs of each API
# failure fit in minutes. Each run is a Python start, seconds of CPU in the emulated VM.
BENCH_ENV = {"FULCRUM_NODE_HEALTH_INTERVAL": "10", "FULCRUM_NODE_HEALTH_TIMEOUT": "5"}
HEALTH = {**NODE_HEALTH_ENV, **BENCH_ENV}
TAKEOVER_DEADLINE = 180  # seconds for the peer to hold every VIP before a run counts as failed


@dataclass
class Run:
    kind: str
    advert: float
    source: str
    moved: float | None  # seconds until the peer held every VIP (None: it never did)
    restored: float
    failed: int
    total: int
    sessions: int = 0  # established echo sessions held through the run
    synced: int = 0  # of them, in the standby's connection table before the failure
    preserved: int = 0  # of them, still echoing after the takeover


@dataclass
class Bench:
    pair: HaPair
    holders: HolderLog
    runs: list[Run] = field(default_factory=list)
    idle: dict[float, tuple[float, int]] = field(default_factory=dict)  # advert -> (seconds, false moves)
    between: dict[float, int] = field(default_factory=dict)  # advert -> unexplained moves between runs
    slip: dict[str, list[float]] = field(default_factory=dict)
    sampler_missed: int = 0  # runs whose takeover time is the poll's, not the 5 ms sampler's

    # --- one run ------------------------------------------------------------------------------

    def run(self, kind: str, advert: float, inject: Callable[[Node], None], restore: Callable[[Node], None]) -> Run:
        pair = self.pair
        old = pair.wait_single_master(TAKEOVER_DEADLINE)
        new = pair.other(old)
        self._settle(old)
        sessions, synced = self._open_sessions(new)
        injected = time.monotonic()
        inject(old)
        try:
            lab.wait_until(lambda: new.vips() == set(ALL_VIPS), TAKEOVER_DEADLINE, what=f"{kind}: {new.name} takes over",
                           interval=0.05)
            polled = time.monotonic()
            moved = self.holders.first(new, injected, frozenset(ALL_VIPS))
            if moved is None:  # the 5 ms sampler recorded no such change: the 50 ms poll's time, an upper bound
                moved = polled
                self.sampler_missed += 1
        except AssertionError as error:
            print(f"  {kind}: no takeover: {error}", flush=True)
            moved = None
        pair.probe.wait_for_requests(time.monotonic(), count=10, timeout=TAKEOVER_DEADLINE)
        seen = outage(pair.probe, injected, time.monotonic())
        preserved = sum(_still_echoes(sock) for sock in sessions)
        result = Run(kind, advert, old.name, None if moved is None else moved - injected,
                     seen.recovered_after, len(seen.failed), len(seen.requests), len(sessions), synced, preserved)
        print(f"  {kind} @ {advert:g} s from {old.name}: VIPs moved {_s(result.moved)}, service back "
              f"{result.restored:.2f} s, {result.failed}/{result.total} failed, sessions preserved "
              f"{preserved}/{len(sessions)} ({synced} synced before)", flush=True)
        restore(old)
        lab.wait_until(lambda: _states(old) == {"BACKUP"} and not old.vips(), TAKEOVER_DEADLINE,
                       what=f"{old.name} back as BACKUP")
        self.runs.append(result)
        return result

    def _open_sessions(self, standby: Node) -> tuple[list[socket.socket], int]:
        """SESSIONS established echo sessions through the VIP, and how many of them the standby's
        IPVS holds (synced) within SYNC_WAIT seconds. IPVS syncs a connection from its 3rd packet."""
        sessions = []
        for _ in range(SESSIONS):
            sock = client.hold_tcp(self.pair.client, FRONT_VIPS[0], ECHO_PORT, timeout=5)
            for n in range(5):
                client.exchange(sock, f"before {n}\n".encode())
            sessions.append(sock)
        ports = {f"{sock.getsockname()[1]:04X}" for sock in sessions}

        def synced() -> int:
            table = netns.proc_net(standby.host, "ip_vs_conn").splitlines()[1:]
            return len(ports & {line.split()[2] for line in table if len(line.split()) > 2})

        deadline = time.monotonic() + SYNC_WAIT
        while synced() < len(ports) and time.monotonic() < deadline:
            time.sleep(0.2)
        return sessions, synced()

    def _settle(self, master: Node) -> None:
        """Before a run: the client's requests succeed again and both nodes agree who is master."""
        lab.wait_until(lambda: _states(master) == {"MASTER"} and _states(self.pair.other(master)) == {"BACKUP"},
                       TAKEOVER_DEADLINE, what="MASTER and BACKUP reported")
        self.pair.probe.wait_for_requests(time.monotonic(), count=5, timeout=TAKEOVER_DEADLINE)

    # --- failure kinds ------------------------------------------------------------------------

    def kinds(self) -> dict[str, tuple[Callable[[Node], None], Callable[[Node], None]]]:
        pair = self.pair
        return {
            "keepalived killed (SIGKILL)": (pair.kill_keepalived, pair.start_keepalived),
            "front interface down (VRRP, VIPs)": (lambda n: pair.link(n, "eth0", False), lambda n: pair.link(n, "eth0", True)),
            "backend interface down (tracked)": (lambda n: pair.link(n, "eth1", False), lambda n: pair.link(n, "eth1", True)),
            "API hung (SIGSTOP)": (lambda n: os.kill(n.api.pid, signal.SIGSTOP), lambda n: os.kill(n.api.pid, signal.SIGCONT)),
            # The process ends (its port refuses): started again, it re-applies its revision.
            "API stopped": (lambda n: n.api.stop(), lambda n: n.api.start(API_START_TIMEOUT)),
            "planned: maintenance": (lambda n: pair.maintenance(n, True), lambda n: pair.maintenance(n, False)),
        }

    def set_advert(self, seconds: float) -> None:
        for node in self.pair.nodes:
            self.pair.set_advert_interval(node, seconds)
            if node.api.get("/changes")["has_changes"]:  # already at that interval: nothing to commit
                node.api.commit(f"advert interval {seconds:g} s")

    def idle_hold(self, advert: float) -> None:
        """Leave the pair alone with traffic; any VIP move now is a false failover."""
        self._settle(self.pair.wait_single_master(TAKEOVER_DEADLINE))
        start = time.monotonic()
        with TimerSlip() as slip:
            deadline = start + IDLE_SECONDS
            while time.monotonic() < deadline:
                time.sleep(1)
        self.slip[f"{advert:g} s idle"] = slip.late
        self.idle[advert] = (IDLE_SECONDS, len(self.holders.moves(start, time.monotonic())))


class TimerSlip:
    """How late a 10 ms sleep wakes up in this VM while the block runs: emulation makes timers
    late and uneven, and keepalived's timers are no exception."""

    def __enter__(self) -> TimerSlip:
        self.late: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            time.sleep(0.01)
            self.late.append(time.monotonic() - started - 0.01)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _still_echoes(sock: socket.socket) -> bool:
    """One more exchange on a session opened before the failure; closes it."""
    try:
        sock.settimeout(5)
        return client.exchange(sock, b"after\n") == b"after\n"
    except OSError:
        return False
    finally:
        sock.close()


def _states(node: Node) -> set[str]:
    return {group["state"] for group in node.api.get("/ha/status")["node"]["groups"]}


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def _median_worst(values: list[float | None]) -> str:
    done = [v for v in values if v is not None]
    missing = len(values) - len(done)
    if not done:
        return "never"
    text = f"{statistics.median(done):.2f} / {max(done):.2f} s"
    return text + (f" ({missing} never)" if missing else "")


def _sessions(runs: list[Run]) -> str:
    return f"{sum(r.preserved for r in runs)} of {sum(r.sessions for r in runs)} ({sum(r.synced for r in runs)})"


def _failed(runs: list[Run]) -> str:
    return f"{sum(r.failed for r in runs)} of {sum(r.total for r in runs)}"


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


# --- the whole benchmark ---------------------------------------------------------------------------


def measure(workdir: Path) -> Bench:
    pair = HaPair.build(workdir, env=BENCH_ENV)
    pair.setup_admin()
    for node in pair.nodes:
        pair.configure(node, advert_interval=DEFAULT_ADVERT, sync=True)
    pair.commit_both("bench")
    pair.start_probe(rate=RATE)
    bench = Bench(pair, HolderLog(pair.nodes))
    kinds = bench.kinds()
    try:
        if "kinds" in PARTS:
            print(f"failure kinds at {DEFAULT_ADVERT:g} s adverts, {RUNS} runs each", flush=True)
            with TimerSlip() as slip:
                for _ in range(RUNS):  # interleaved, so a slow phase of the host spreads over every kind
                    for kind, (inject, restore) in kinds.items():
                        bench.run(kind, DEFAULT_ADVERT, inject, restore)
            bench.slip[f"{DEFAULT_ADVERT:g} s runs"] = slip.late
        for advert in INTERVALS if "intervals" in PARTS else []:
            print(f"advert interval {advert:g} s", flush=True)
            bench.set_advert(advert)
            bench.idle_hold(advert)
            if advert != DEFAULT_ADVERT or "kinds" not in PARTS:
                for _ in range(RUNS):
                    for kind in ("keepalived killed (SIGKILL)", "planned: maintenance"):
                        bench.run(kind, advert, *kinds[kind])
    finally:
        bench.holders.stop()
    return bench


def report(bench: Bench) -> str:
    runs = bench.runs
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    keepalived = subprocess.run(["keepalived", "--version"], capture_output=True, text=True).stderr.split("\n")[0]
    lines = [
        "## HA failover in the VM lab",
        "",
        f"Conditions: qemu TCG (software emulation, no KVM), {os.cpu_count()} vCPUs ({cpu}), "
        f"kernel {platform.release()}, {keepalived}; two appliances (API, engine, keepalived each), "
        f"3 backends; client {RATE:g} requests/s, new connection each, 1 s timeout, round robin over "
        f"3 VIPs; node health every {HEALTH['FULCRUM_NODE_HEALTH_INTERVAL']} s, fall {HEALTH['FULCRUM_NODE_HEALTH_FALL']}, "
        f"rise {HEALTH['FULCRUM_NODE_HEALTH_RISE']}, probe timeout {HEALTH['FULCRUM_NODE_HEALTH_TIMEOUT']} s; "
        f"VM load average at the end {os.getloadavg()[0]:.1f}.",
        "Timer slip (how late a 10 ms sleep wakes in the VM): "
        + "; ".join(f"{phase}: median {1000 * statistics.median(late):.1f} ms, p99 {1000 * _percentile(late, 0.99):.0f} ms, "
                    f"worst {1000 * max(late):.0f} ms" for phase, late in bench.slip.items() if late) + ".",
        "",
    ]
    by_kind: dict[str, list[Run]] = {}
    for run in runs:
        if run.advert == DEFAULT_ADVERT and "kinds" in PARTS:
            by_kind.setdefault(run.kind, []).append(run)
    if by_kind:
        lines += [
            f"### Failure kinds, advert interval {DEFAULT_ADVERT:g} s ({RUNS} runs each; median / worst)",
            "",
            "| failure | runs | VIPs on the peer after | service restored after | failed requests: total (median / worst per run) "
            "| established sessions preserved (synced before) |",
            "|---|---|---|---|---|---|",
        ]
    for kind, kind_runs in by_kind.items():
        failed = [r.failed for r in kind_runs]
        lines.append(
            f"| {kind} | {len(kind_runs)} | {_median_worst([r.moved for r in kind_runs])} | "
            f"{_median_worst([r.restored for r in kind_runs])} | {sum(failed)} ({statistics.median(failed):g} / {max(failed)}) | "
            f"{_sessions(kind_runs)} |"
        )
    lines += [
        "",
        f"### Advert interval: unplanned (keepalived killed) vs planned (maintenance), {RUNS} runs each",
        "",
        "Time columns: median / worst over the runs. Sessions: established echo sessions, opened before the "
        "failure, that still echoed after it (in brackets: how many the standby held through connection sync "
        "before the failure). A false failover is a VIP moving while nothing was done to the nodes.",
        "",
        "| advert interval | failure | master-down timer, nominal | VIPs on the peer after | service restored after "
        "| failed requests | sessions preserved | false failovers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for advert in INTERVALS:
        idle_seconds, idle_moves = bench.idle.get(advert, (0, 0))
        nominal = 3 * advert + (256 - 100) / 256 * advert  # the standby's priority is 100
        for label, prefix in (("unplanned: keepalived killed", "keepalived"), ("planned: maintenance", "planned")):
            chosen = [r for r in runs if r.advert == advert and r.kind.startswith(prefix)]
            lines.append(
                f"| {advert:g} s | {label} | {nominal:.2f} s | {_median_worst([r.moved for r in chosen])} | "
                f"{_median_worst([r.restored for r in chosen])} | {_failed(chosen)} | {_sessions(chosen)} | "
                f"{idle_moves} in {idle_seconds:.0f} s idle |"
            )
    if bench.sampler_missed:
        lines += ["", f"In {bench.sampler_missed} runs the 5 ms holder sampler recorded no takeover; their 'VIPs moved' "
                      "is when the 50 ms poll saw it (an upper bound)."]
    lines += ["", "Raw runs: " + json.dumps([run.__dict__ for run in runs])]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)) + "\n"  # one blank line where a table was left out


def main(workdir: Path | None = None, out: Path | None = None) -> str:
    if not Path("/proc/net/ip_vs").exists():
        raise SystemExit("no IPVS in this kernel: run it in the VM (tests/kernel/run-in-vm -s tests/bench/ha_failover.py)")
    import tempfile

    with lab.scope("ha failover bench"):
        bench = measure(workdir or Path(tempfile.mkdtemp(prefix="ha-bench-")))
        text = report(bench)
    print(text, flush=True)
    out = Path(os.environ.get("FULCRUM_BENCH_OUT") or out or TESTS.parent / ".kernel-results" / "ha_failover.md")
    try:
        out.write_text(text)
        print(f"written to {out}")
    except OSError as error:  # the repository is read-only in the VM, apart from the results folder
        print(f"could not write {out}: {error}")
    return text


@pytest.mark.kernel
@pytest.mark.bench_part("failover")
@pytest.mark.timeout(4 * 3600)
def test_ha_failover_bench(tmp_path, request):
    """The benchmark as a kernel 'test', so that run-in-vm runs it; it asserts nothing. The table
    lands beside run-in-vm's junit report (its results folder)."""
    if not Path("/proc/net/ip_vs").exists():
        pytest.skip("no IPVS in this kernel: run it with tests/kernel/run-in-vm")
    xml = getattr(request.config.option, "xmlpath", None)
    main(tmp_path, Path(xml).parent / "ha_failover.md" if xml else None)


if __name__ == "__main__":
    main()
