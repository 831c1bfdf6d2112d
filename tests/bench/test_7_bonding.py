"""Part 7: two bonded links when one of them is slower, the seed's round-robin result re-measured.

SARA's GigaPort3 report D1.2 (seed 004_16cf3e580eb9959f.txt, §3.4) bonded two 10GE links with
balance-rr and sent one link through a 17 ms loop: TCP collapsed (under 1 Gb/s one way, negligible
the other), because packets of one flow arrive out of order. The appliance therefore refuses
balance-rr unless told otherwise and hashes per flow (fulcrum.config.network). This part measures
the same contrast inside the VM, between two namespaces and nothing else:

    tx (sender)                                     rx (receiver)
    bond0 10.88.N.1/24 ─ eth0 ───── veth ───── eth0 ─ bond0 10.88.N.2/24
                       └ eth1 ─ netem D ── netem D ─ eth1 ┘

one such pair per bonding mode (balance-rr; balance-xor and 802.3ad hashing layer3+4), the same
netem qdisc on eth1 in both directions with D = 0 or DELAY_MS. iperf3 sends FLOWS parallel TCP
flows tx -> rx for SECONDS (after one omitted second of slow start). Around every run: TCP's
reordering and retransmission counters (what `nstat` prints, read from /proc/net/netstat and
/proc/net/snmp in the sender's and the receiver's namespace) and each link's transmitted bytes.
Rounds interleave modes and delays, so drift in the shared host spreads over all of them; the
ratios are taken within one round.
"""

from __future__ import annotations

import json
import time

import lab
import pytest
from lab.cmd import bkg
from lab.netns import NetNS, create_namespaces, listening, proc_net

from bench import benchlab, results
from bench.results import spread

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("bonding"), pytest.mark.timeout(1800)]

MODES = ("balance-rr", "balance-xor", "802.3ad")
HASHING = {"balance-xor", "802.3ad"}
DELAY_MS = 5  # one way, on eth1 only: 10 ms more round trip than eth0
ROUNDS = 3
SECONDS = 6
FLOWS = 4
PORT = 5201
# Counters read in the receiver's namespace (segments that arrived out of order) and in the
# sender's (reordering it detected, retransmissions, retransmissions that proved spurious).
RECEIVER_COUNTERS = ("TcpExtTCPOFOQueue", "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent")
SENDER_COUNTERS = ("TcpRetransSegs", "TcpExtTCPFastRetrans", "TcpExtTCPSACKReorder", "TcpExtTCPTSReorder",
                   "TcpExtTCPDSACKRecv", "TcpExtTCPLostRetransmit")
SEED_CLAIM = ("SARA/GigaPort3 D1.2 (2010), seed 004_16cf3e580eb9959f.txt, §3.4: two 10GE links bonded "
              "round-robin, one through a 17 ms loop: \"The performance of TCP has collapsed due to the "
              "difference in round trip time. The throughput from server A to server B is less than 1 Gb/s, "
              "and the throughput from server B to server A is negligible.\" With two equal links (§3.3) the "
              "same bond carried about 9 Gb/s of TCP.")


class BondPair:
    """A sender and a receiver namespace joined by two veth links bonded in `mode`."""

    def __init__(self, index: int, mode: str, workdir):
        self.mode = mode
        self.tx, self.rx = NetNS(f"tx{index}", create=False), NetNS(f"rx{index}", create=False)
        self.address = f"10.88.{index}.2"
        self.index = index
        self.workdir = workdir

    def build(self) -> None:
        options = f"mode {self.mode} miimon 100"
        if self.mode in HASHING:
            options += " xmit_hash_policy layer3+4"
        if self.mode == "802.3ad":
            options += " lacp_rate fast"
        self.tx.ip_batch([f"link add eth{n} type veth peer name eth{n} netns {self.rx.name}" for n in (0, 1)])
        for ns, host in ((self.rx, 2), (self.tx, 1)):
            ns.ip_batch([
                "link set lo up",
                f"link add bond0 type bond {options}",
                "link set eth0 master bond0", "link set eth1 master bond0",
                "link set eth0 up", "link set eth1 up", "link set bond0 up",
                f"addr add 10.88.{self.index}.{host}/24 dev bond0",
            ])

    def start_server(self) -> None:
        server = bkg(["iperf3", "-s", "-p", str(PORT)], self.rx, log_path=self.workdir / f"iperf3-{self.mode}.log")
        lab.wait_until(lambda: server.check_running() or listening(self.rx, PORT), 30,
                       what=f"iperf3 listening in {self.rx.name}")

    def set_delay(self, ms: int) -> None:
        for ns in (self.tx, self.rx):
            # The same qdisc for 0 ms as for D ms: only the delay differs between the runs.
            ns.cmd(["tc", "qdisc", "replace", "dev", "eth1", "root", "netem", "delay", f"{ms}ms", "limit", "100000"])

    def bonding(self) -> str:
        return self.tx.cmd(["cat", "/proc/net/bonding/bond0"]).stdout

    def aggregated(self) -> bool:
        """802.3ad: both links in the one active aggregator (LACP agreed with the other bond)."""
        text = self.bonding()
        return "Active Aggregator Info:" in text and "Number of ports: 2" in text.split("Active Aggregator Info:")[1]


def counters(ns, names: tuple[str, ...]) -> dict[str, int]:
    """TCP's counters as nstat names them (TcpExt*, Tcp*), from /proc/net/netstat and snmp in `ns`."""
    found: dict[str, int] = {}
    for table in ("netstat", "snmp"):
        lines = proc_net(ns, table).splitlines()
        for header, values in zip(lines[::2], lines[1::2], strict=True):
            prefix, _, keys = header.partition(":")
            if prefix in ("Tcp", "TcpExt"):
                found |= {prefix + k: int(v) for k, v in zip(keys.split(), values.split(":", 1)[1].split(), strict=True)}
    return {name: found[name] for name in names}


def tx_bytes(ns) -> dict[str, int]:
    """Bytes each link of `ns` transmitted (/proc/net/dev)."""
    sent = {}
    for line in proc_net(ns, "dev").splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() in ("eth0", "eth1"):
            sent[name.strip()] = int(fields.split()[8])
    return sent


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before[key] for key in after}


@pytest.fixture(scope="module")
def pairs(request, bench_out, tmp_path_factory):
    with lab.scope("bonding"):
        workdir = tmp_path_factory.mktemp("bonding")
        built = [BondPair(index, mode, workdir) for index, mode in enumerate(MODES)]
        create_namespaces([ns for pair in built for ns in (pair.tx, pair.rx)])
        for pair in built:
            pair.build()
            pair.set_delay(0)
            pair.start_server()
        lacp = next(pair for pair in built if pair.mode == "802.3ad")
        lab.wait_until(lacp.aggregated, 60, what="802.3ad: both links in the active aggregator")
        yield built


def measure(pair: BondPair, seconds: float) -> dict:
    before = (counters(pair.tx, SENDER_COUNTERS), counters(pair.rx, RECEIVER_COUNTERS), tx_bytes(pair.tx))
    started = time.monotonic()
    run = pair.tx.cmd(["iperf3", "-c", pair.address, "-p", str(PORT), "-t", f"{seconds:g}", "-O", "1",
                       "-P", str(FLOWS), "-J", "--connect-timeout", "10000"], timeout=seconds + 90)
    wall = time.monotonic() - started
    after = (counters(pair.tx, SENDER_COUNTERS), counters(pair.rx, RECEIVER_COUNTERS), tx_bytes(pair.tx))
    report = json.loads(run.stdout)
    links = delta(after[2], before[2])
    return {
        "mbit_per_s": report["end"]["sum_received"]["bits_per_second"] / 1e6,
        "iperf3_retransmits": report["end"]["sum_sent"].get("retransmits"),
        "sender": delta(after[0], before[0]),
        "receiver": delta(after[1], before[1]),
        "slow_link_share": links["eth1"] / max(1, sum(links.values())),
        "cpu_percent": report["end"].get("cpu_utilization_percent", {}),
        "wall_seconds": round(wall, 1),
        "raw": run.stdout,
    }


def test_round_robin_against_per_flow_hashing(request, bench_out, pairs):
    scale = request.config.getoption("--bench-scale")
    seconds = max(1.0, SECONDS * scale)
    if results.load(bench_out, "conditions") is None:  # this part alone (--bench-only bonding)
        results.save(bench_out, "conditions", {**benchlab.conditions(), "scale": scale})
    version = pairs[0].tx.cmd(["iperf3", "--version"]).stdout.splitlines()[0]
    data = {"modes": list(MODES), "delays_ms": [0, DELAY_MS], "rounds": ROUNDS, "seconds": seconds,
            "flows": FLOWS, "iperf3": version, "seed_claim": SEED_CLAIM, "runs": []}
    for round_number in range(ROUNDS):
        for delay in (0, DELAY_MS):
            for pair in pairs:
                pair.set_delay(delay)
            for pair in pairs:
                run = measure(pair, seconds)
                results.save_raw(bench_out, "bonding", {f"{pair.mode}-{delay}ms-iperf3": run.pop("raw")})
                data["runs"].append({"round": round_number, "mode": pair.mode, "delay_ms": delay, **run})
                results.save(bench_out, "bonding", data)
    data["summary"] = summarise(data["runs"])
    results.save(bench_out, "bonding", data)


def summarise(runs: list[dict]) -> dict:
    """Per mode and delay: median and spread of throughput and counters; per round: the ratios."""
    summary: dict = {"by_mode": {}, "ratios": {}}
    for mode in MODES:
        for delay in (0, DELAY_MS):
            mine = [r for r in runs if r["mode"] == mode and r["delay_ms"] == delay]
            summary["by_mode"][f"{mode} {delay} ms"] = {
                "mbit_per_s": spread([r["mbit_per_s"] for r in mine]),
                "slow_link_share": spread([r["slow_link_share"] for r in mine]),
                **{name: spread([r["sender"][name] for r in mine]) for name in SENDER_COUNTERS},
                **{name: spread([r["receiver"][name] for r in mine]) for name in RECEIVER_COUNTERS},
            }
    by_round: dict[int, dict[tuple[str, int], float]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[(r["mode"], r["delay_ms"])] = r["mbit_per_s"]
    wanted = {f"{mode}: {DELAY_MS} ms / 0 ms": ((mode, DELAY_MS), (mode, 0)) for mode in MODES}
    for delay in (0, DELAY_MS):
        for mode in sorted(HASHING):
            wanted[f"balance-rr / {mode} at {delay} ms"] = (("balance-rr", delay), (mode, delay))
    for name, (top, bottom) in wanted.items():
        summary["ratios"][name] = spread([
            values[top] / values[bottom] for values in by_round.values() if values.get(bottom) and top in values
        ])
    return summary
