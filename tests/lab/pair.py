"""Two Fulcrum appliances as an HA pair, backends behind them, a client in front.

    c1 10.77.0.10 ─┐ front 10.77.0.0/24        VIP groups: front   10.77.0.100, 10.77.0.101
    lb1 .2  eth0 ──┤ (VRRP, unicast)                       front2  10.77.0.102
    lb2 .3  eth0 ──┘                                       gateway 10.77.1.1/24 on eth1
    lb1 .2  eth1 ──┐ back 10.77.1.0/24
    lb2 .3  eth1 ──┤ b1 .21, b2 .22, b3 .23: HTTP on 80, TCP echo on 7, default via 10.77.1.1
    b1..b3 ────────┘
    lb1 .2  eth2 ─── sync 10.77.2.0/24 ─── lb2 .3 eth2: IPVS connection sync, peer API traffic

Each node is a real appliance (lab.appliance): uvicorn with the in-process apply engine, and
keepalived started by the engine, all inside the node's namespace. Its API listens there on
0.0.0.0:8080, so keepalived's node-health check reaches it at 127.0.0.1:8080, the peer at
10.77.2.x:8080, and the tests through a namespaced HTTP client.

    pair = HaPair.build(workdir)                 # lab up, both APIs answering (minutes here)
    pair.configure(advert_interval=1, sync=True) # through each node's API, committed on both
    master = pair.wait_single_master()           # the node holding every VIP
    probe = pair.start_probe()                   # the client's requests, each one logged
    pair.kill_keepalived(master); ...

Timers under emulation (qemu without KVM, a shared 2-core host) run late and unevenly: a Python
start costs 3-15 s, so the node-health check is given minutes' worth of slack here
(NODE_HEALTH_ENV) that an appliance does not need.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab import appliance, client, netns
from lab.cmd import Background, cmd, in_ns
from lab.child import fork_into
from lab.topo import Host, Lab
from lab.wait import wait_until

from fulcrum.apply.keepalived_control import keepalived_argv

FRONT, BACK, SYNC = "10.77.0.0/24", "10.77.1.0/24", "10.77.2.0/24"
GATEWAY = "10.77.1.1"
VIP_GROUPS = {  # name: (VRID, addresses, interface on the nodes)
    "front": (51, ["10.77.0.100/32", "10.77.0.101/32"], "eth0"),
    "front2": (53, ["10.77.0.102/32"], "eth0"),
    "gateway": (52, [f"{GATEWAY}/24"], "eth1"),
}
FRONT_VIPS = ["10.77.0.100", "10.77.0.101", "10.77.0.102"]
ALL_VIPS = [*FRONT_VIPS, GATEWAY]
API_PORT = 8080
# Pairing to in-sync: the standby validates, renders and applies the pushed revision (tens of
# seconds in the emulated VM).
PAIRING_DEADLINE = 300
# Two APIs starting side by side in the emulated VM on a busy host: measured up to 10 minutes.
API_START_TIMEOUT = 900
# Services through the VIPs: HTTP on each front VIP, an echo service for long-lived connections,
# and a one-arm (SNAT) echo service, whose NAT state lives in conntrack only.
ECHO_PORT, ONE_ARM_PORT = 7, 8007
# Every check is a thread in a backend's Python server: checks every 5 s, the VM has 2 emulated CPUs.
CHECK = {"type": "tcp", "interval": 5, "timeout": 3, "retries": 1, "retry_delay": 1}
# Every node-health run is a Python start: 2-3 s of CPU here and 5-80 s of wall time once a few
# run at once (measured: runs every 15 s piled up, load average 12 in the VM, and keepalived timed
# them out). Every 30 s each run finishes before the next; a node steps down ~1 min after its API
# stops instead of ~2 s on an appliance.
NODE_HEALTH_ENV = {
    "FULCRUM_NODE_HEALTH_URL": f"http://127.0.0.1:{API_PORT}/api/v1/health",
    "FULCRUM_NODE_HEALTH_INTERVAL": "30",
    "FULCRUM_NODE_HEALTH_TIMEOUT": "10",  # per probe; keepalived allows 2 x 10 + 10 s per run
    "FULCRUM_NODE_HEALTH_FALL": "2",
    "FULCRUM_NODE_HEALTH_RISE": "1",
    # Live statistics every 5 s rather than every second: CPU is what the emulated VM lacks.
    "FULCRUM_STATS_INTERVAL": "5",
}


@dataclass
class Node:
    """One appliance of the pair."""

    host: Host
    api: appliance.Appliance
    priority: int
    peer: str = ""  # the other node's front address (its VRRP unicast peer)

    @property
    def name(self) -> str:
        return self.host.role

    @property
    def front(self) -> str:
        return self.host.addresses["front"]

    @property
    def sync_address(self) -> str:
        return self.host.addresses["sync"]

    @property
    def state_dir(self) -> Path:
        return self.api.state_dir

    def mac(self, dev: str) -> str:
        out = cmd(["ip", "-o", "link", "show", "dev", dev], ns=self.host).stdout
        return re.search(r"link/ether ([0-9a-f:]{17})", out).group(1)

    def vips(self) -> set[str]:
        """The VIPs this node holds (usable as local addresses) now."""
        return netns.run_in(self.host, held_addresses, ALL_VIPS)

    def keepalived_pids(self) -> list[int]:
        """keepalived's processes (parent, VRRP and checker children) by their pid files."""
        pids = []
        for name in appliance.KEEPALIVED_PIDFILES:
            try:
                pid = int((self.state_dir / name).read_text().split()[0])
                if Path(f"/proc/{pid}/comm").read_text().strip() == "keepalived":
                    pids.append(pid)
            except (OSError, ValueError, IndexError):
                pass
        return pids

    def __repr__(self) -> str:
        return f"Node({self.name})"


class HaPair:
    def __init__(self, net: Lab, nodes: list[Node], client_host: Host, backends: list[Host]):
        self.net = net
        self.nodes = nodes
        self.client = client_host
        self.backends = backends
        self.servers: list = []
        self.probe: Probe | None = None
        self.syslog: SyslogSink | None = None
        self.admin_password = ""

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, workdir: Path, *, backends: int = 3, env: dict[str, str] | None = None) -> HaPair:
        net = Lab(workdir)
        for name, subnet in (("front", FRONT), ("back", BACK), ("sync", SYNC)):
            net.add_segment(name, subnet)
        c1 = net.add_host("c1")
        net.connect(c1, "front", 10)
        hosts = []
        for number in (2, 3):
            lb = net.add_host(f"lb{number - 1}")
            for segment in ("front", "back", "sync"):
                net.connect(lb, segment, number)
            lb.setup(sysctls={"net.ipv4.ip_forward": 1})
            hosts.append(lb)
        servers = []
        for number in range(backends):
            backend = net.add_host(f"b{number + 1}")
            net.connect(backend, "back", 21 + number)
            backend.setup(f"route add default via {GATEWAY}")
            servers.append(backend)
        net.clients.append(c1)
        net.lbs.extend(hosts)
        net.backends.extend(servers)
        net.start()
        # keepalived logs to syslog: collected here where nothing else listens (the VM), else
        # it goes to the host's own syslog.
        syslog = None if os.path.exists(SyslogSink.PATH) else SyslogSink(workdir / "syslog.log").start()

        nodes = []
        for lb, priority in zip(hosts, (150, 100), strict=True):
            api = appliance.Appliance(
                lb, workdir / f"{lb.role}-appliance", listen=("0.0.0.0", API_PORT), listen_ns=lb,
                env={**NODE_HEALTH_ENV, **(env or {})},
            )
            nodes.append(Node(lb, api, priority))
        nodes[0].peer, nodes[1].peer = nodes[1].front, nodes[0].front
        pair = cls(net, nodes, c1, servers)
        pair.syslog = syslog
        for backend in servers:
            pair.servers.append(net.start_http(backend))
            pair.servers.append(net.start_tcp_echo(backend, ECHO_PORT))
        for node in nodes:  # side by side: each start costs minutes in the emulated VM
            node.api.launch()
        for node in nodes:
            node.api.wait_ready(API_START_TIMEOUT)
        return pair

    def setup_admin(self, password: str | None = None) -> str:
        """The first admin on both nodes, with one password (generated unless given)."""
        password = password or secrets.token_urlsafe(18)
        for node in self.nodes:
            node.api.setup("admin", password)
        self.admin_password = password
        return password

    def pair(self, active: Node, standby: Node) -> dict:
        """Pair through the active node's API with a code from the standby, over the sync link.
        The first push gives the standby the active node's users, whose new password hashes end
        the standby's sessions: once the active node sees the peer in sync, log in there again."""
        code = standby.api.post("/ha/pairing-code", expect=201)["code"]
        result = active.api.post("/ha/pair", {"peer_url": f"http://{standby.sync_address}:{API_PORT}", "code": code})
        wait_until(lambda: active.api.get("/ha/status")["sync"]["state"] == "in_sync", PAIRING_DEADLINE,
                   what=f"{active.name} to see {standby.name} in sync", interval=1)
        standby.api.login("admin", self.admin_password)
        return result

    def node_settings(self, node: Node, *, sync: bool = True) -> dict:
        return {
            "name": node.name,
            "vrrp_interface": "eth0",
            "priority": node.priority,
            "unicast_source": node.front,
            "peer_address": node.peer,
            "multicast": False,
            "sync_interface": "eth2" if sync else None,
            "vip_interfaces": {name: dev for name, (_, _, dev) in VIP_GROUPS.items() if dev != "eth0"},
            "track_interfaces": [],
        }

    def configure(self, node: Node, *, advert_interval: float = 1, sync: bool = True) -> None:
        """This node's settings, the VIP groups and the services, through its API (not committed)."""
        api = node.api
        api.put("/node", self.node_settings(node, sync=sync))
        for name, (vrid, addresses, _) in VIP_GROUPS.items():
            api.create_vip_group(name=name, virtual_router_id=vrid, addresses=addresses, advert_interval=advert_interval)
        backends = [{"address": b.address} for b in self.backends]
        for index, vip in enumerate(FRONT_VIPS):
            api.create_service(name=f"web{index}", address=vip, ports=[80], scheduler="rr", health_check=CHECK,
                               backends=backends)
        api.create_service(name="echo", address=FRONT_VIPS[0], ports=[ECHO_PORT], scheduler="rr",
                           health_check=CHECK, backends=backends)
        api.create_service(name="echo-one-arm", address=FRONT_VIPS[0], ports=[ONE_ARM_PORT], scheduler="rr",
                           one_arm=True, health_check=CHECK,
                           backends=[{"address": b.address, "port": ECHO_PORT} for b in self.backends])

    def set_advert_interval(self, node: Node, seconds: float) -> None:
        for group in node.api.get("/vip-groups")["data"]:
            node.api.patch(f"/vip-groups/{group['id']}", {"advert_interval": seconds})

    def set_sync(self, node: Node, on: bool) -> None:
        node.api.put("/node", {**node.api.get("/node"), "sync_interface": "eth2" if on else None})

    def commit_both(self, message: str) -> None:
        for node in self.nodes:
            node.api.commit(message)

    # --- who holds the VIPs -----------------------------------------------------------------

    def holders(self) -> dict[str, set[str]]:
        return {node.name: node.vips() for node in self.nodes}

    def single_master(self) -> Node | None:
        """The node holding every VIP while the other holds none, else None."""
        held = {node.name: node.vips() for node in self.nodes}
        for node in self.nodes:
            other = self.other(node)
            if held[node.name] == set(ALL_VIPS) and not held[other.name]:
                return node
        return None

    def wait_single_master(self, timeout: float = 120, *, node: Node | None = None) -> Node:
        def settled():
            master = self.single_master()
            return master if master is not None and (node is None or master is node) else None

        try:
            return wait_until(settled, timeout, what=f"{node.name if node else 'one node'} to hold every VIP alone",
                              interval=0.05)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.diagnosis()}") from None

    def diagnosis(self) -> str:
        """What the nodes say about themselves, for a failure message."""
        lines = [f"VIPs held: {self.holders()}"]
        for node in self.nodes:
            try:
                status = node.api.get("/ha/status", timeout=30)
                lines.append(f"{node.name} /ha/status node: {status['node']}; transitions: {status['transitions'][:6]}")
            except Exception as exc:  # the API may be the thing that is down
                lines.append(f"{node.name} /ha/status: {exc!r}")
            lines.append(f"{node.name} keepalived pids: {node.keepalived_pids()}")
        lines.append("syslog (keepalived):\n" + (self.syslog.tail() if self.syslog else "none"))
        return "\n".join(lines)

    def other(self, node: Node) -> Node:
        return self.nodes[1] if node is self.nodes[0] else self.nodes[0]

    # --- ARP: who the client and the backends send to --------------------------------------

    def neighbours(self, host: Host) -> dict[str, str]:
        """IPv4 neighbour entries of `host` that have an address: {ip: mac}."""
        out = cmd(["ip", "-4", "neigh", "show"], ns=host).stdout
        found = {}
        for line in out.splitlines():
            parts = line.split()
            if "lladdr" in parts:
                found[parts[0]] = parts[parts.index("lladdr") + 1]
        return found

    def arp_view(self) -> dict[str, set[str]]:
        """For every VIP, the MACs the hosts that use it resolve it to: the client's entries for
        the front VIPs, every backend's for the gateway."""
        view: dict[str, set[str]] = {vip: set() for vip in ALL_VIPS}
        client_entries = self.neighbours(self.client)
        for vip in FRONT_VIPS:
            view[vip].add(client_entries.get(vip, "none"))
        for backend in self.backends:
            view[GATEWAY].add(self.neighbours(backend).get(GATEWAY, "none"))
        return view

    def expected_arp(self, node: Node) -> dict[str, set[str]]:
        return {vip: {node.mac("eth1" if vip == GATEWAY else "eth0")} for vip in ALL_VIPS}

    # --- failures ---------------------------------------------------------------------------

    def kill_keepalived(self, node: Node) -> None:
        """SIGKILL every keepalived process of the node: no priority-0 advert, VIPs left behind."""
        pids = node.keepalived_pids()
        assert pids, f"{node.name}: keepalived is not running"
        for pid in pids:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        wait_until(lambda: not node.keepalived_pids(), 30, what=f"{node.name}'s keepalived to be gone")

    def start_keepalived(self, node: Node) -> None:
        """Start keepalived as the engine does (its default command line), in the node's namespace."""
        state = node.state_dir
        argv = keepalived_argv(state / "keepalived.conf", state / "keepalived.pid", state)
        # It daemonises: output to a file, as a pipe could stay open in the daemon.
        with open(node.api.workdir / "keepalived-start.log", "a") as log:
            subprocess.run(in_ns(list(argv), node.host), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                           check=True, timeout=60)
        wait_until(lambda: len(node.keepalived_pids()) >= 2, 60, what=f"{node.name}'s keepalived to start")

    def link(self, node: Node, dev: str, up: bool) -> None:
        node.host.ip("link", "set", dev, "up" if up else "down")

    def maintenance(self, node: Node, enabled: bool) -> dict:
        return node.api.post("/ha/maintenance", {"enabled": enabled})

    # --- traffic ----------------------------------------------------------------------------

    def start_probe(self, rate: float = 5, timeout: float = 1.0, name: str = "probe",
                    extra: list[tuple[str, int]] = ()) -> Probe:
        """The client's requests to every front VIP's port 80 (and `extra` targets), logged;
        stopped when the cleanup scope ends."""
        self.probe = Probe(self.client, [(vip, 80) for vip in FRONT_VIPS] + list(extra), rate=rate, timeout=timeout,
                           log_path=self.client.workdir / f"{name}.log")
        self.probe.start()
        return self.probe


def held_addresses(candidates: list[str]) -> set[str]:
    """Which of the IPv4 `candidates` are local addresses of the calling thread's namespace: a
    bind succeeds only for those (a cheap probe: no process, unlike `ip addr`)."""
    held = set()
    for address in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.bind((address, 0))
            except OSError:
                continue
            held.add(address)
    return held


class HolderLog:
    """Who holds which VIPs, sampled every few milliseconds in each node's namespace by a thread
    that joined it: every change with its time (monotonic), for takeover times and for VIPs that
    moved when nothing was done to them (false failovers)."""

    def __init__(self, nodes: list[Node], period: float = 0.005):
        self.changes: dict[str, list[tuple[float, frozenset[str]]]] = {node.name: [] for node in nodes}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._watch, args=(node, period), daemon=True) for node in nodes]
        for thread in self._threads:
            thread.start()

    def _watch(self, node: Node, period: float) -> None:
        netns.enter(node.host)
        log = self.changes[node.name]
        while not self._stop.is_set():
            held = frozenset(held_addresses(ALL_VIPS))
            if not log or log[-1][1] != held:
                log.append((time.monotonic(), held))
            time.sleep(period)

    def first(self, node: Node, after: float, held: frozenset[str] | set[str]) -> float | None:
        """When, after `after`, the node first held exactly `held`."""
        return next((at for at, now in self.changes[node.name] if at >= after and now == held), None)

    def moves(self, start: float, end: float) -> list[tuple[float, str, frozenset[str]]]:
        """Every change in [start, end], by time."""
        found = [(at, name, held) for name, log in self.changes.items() for at, held in log if start <= at <= end]
        return sorted(found, key=lambda change: change[0])

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


# --- keepalived's log ------------------------------------------------------------------------------


class SyslogSink(Background):
    """keepalived logs to syslog, which the VM does not run: a forked process binds /dev/log (a
    file-system socket, shared by every namespace) and appends each message to a file. Both
    nodes' keepalived write here; their pids (the nodes' pid files) tell them apart."""

    PATH = "/dev/log"

    def __init__(self, log_path: Path):
        super().__init__("syslog sink on /dev/log", log_path)

    def _launch(self) -> int:
        if os.path.exists(self.PATH):
            raise RuntimeError(f"{self.PATH} exists: another syslog is running in this VM")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(self.PATH)
        pid = os.fork()
        if pid:
            sock.close()
            return pid
        try:
            os.setsid()
            # Keep no copy of the test's descriptors (a client socket would outlive its close()).
            os.closerange(3, sock.fileno())
            os.closerange(sock.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
            with open(self.log_path, "ab", buffering=0) as out:
                while True:
                    message = sock.recv(8192)
                    out.write(f"{time.monotonic():.3f} ".encode() + message.rstrip(b"\n\x00") + b"\n")
        finally:
            os._exit(0)

    def stop(self, timeout: float = 10) -> int | None:
        code = super().stop(timeout)
        if os.path.exists(self.PATH):
            os.unlink(self.PATH)
        return code

    def tail(self, lines: int = 80) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


# --- the client's continuous requests ----------------------------------------------------------


@dataclass(frozen=True)
class Request:
    started: float  # time.monotonic(), the same clock in every process of the VM
    ended: float
    ok: bool
    target: str
    detail: str


class Probe(Background):
    """A forked process in the client making one HTTP request at a time, round robin over the
    targets, at most `rate` per second, each on a new connection with `timeout`; every request
    is one line in its log (monotonic start and end, outcome), for the tests to analyse."""

    def __init__(self, host: Host, targets: list[tuple[str, int]], *, rate: float, timeout: float, log_path: Path):
        self.host, self.targets, self.rate, self.timeout = host, targets, rate, timeout
        super().__init__(f"probe from {host.role} to {targets} at {rate:g}/s", log_path)

    def _launch(self) -> int:
        return fork_into(self.host, self.log_path, self._loop)

    def _loop(self) -> None:
        period = 1.0 / self.rate
        next_at = time.monotonic()
        index = 0
        while True:
            address, port = self.targets[index % len(self.targets)]
            index += 1
            started = time.monotonic()
            try:
                answer = client.http_get(self.host, address, port, timeout=self.timeout)
                ok, detail = 200 <= answer.status < 300, f"{answer.status} {answer.backend}"
            except Exception as exc:  # refused, reset, timed out: that is what is measured
                ok, detail = False, type(exc).__name__
            print(f"{started:.4f} {time.monotonic():.4f} {'ok' if ok else 'fail'} {address}:{port} {detail}", flush=True)
            next_at = max(next_at + period, time.monotonic())
            time.sleep(max(0.0, next_at - time.monotonic()))

    def requests(self) -> list[Request]:
        found = []
        for line in self.log().splitlines():
            parts = line.split(" ", 4)
            if len(parts) == 5 and parts[2] in ("ok", "fail"):
                found.append(Request(float(parts[0]), float(parts[1]), parts[2] == "ok", parts[3], parts[4]))
        return found

    def wait_for_requests(self, after: float, count: int, timeout: float = 60) -> list[Request]:
        """At least `count` successful requests that started after `after` (monotonic)."""
        return wait_until(
            lambda: (ok := [r for r in self.requests() if r.started >= after and r.ok]) and len(ok) >= count and ok,
            timeout, what=f"{count} successful requests after t={after:.1f}", interval=0.2,
        )


@dataclass
class Outage:
    """What the client saw around a failure injected at `injected` (monotonic)."""

    injected: float
    requests: list[Request] = field(default_factory=list)

    @property
    def failed(self) -> list[Request]:
        return [r for r in self.requests if not r.ok]

    @property
    def recovered_after(self) -> float:
        """Seconds from the injection until the end of the first successful request that started
        after the last failure (0: no request failed)."""
        if not self.failed:
            return 0.0
        last_failure = max(r.started for r in self.failed)
        after = [r for r in self.requests if r.ok and r.started > last_failure]
        return (min(r.ended for r in after) if after else float("inf")) - self.injected


def outage(probe: Probe, injected: float, until: float) -> Outage:
    return Outage(injected, [r for r in probe.requests() if injected - 1 <= r.started <= until])


# --- VRRP adverts as the peer receives them --------------------------------------------------------


class AdvertSniffer:
    """Records VRRP adverts (IP protocol 112) arriving in a namespace: (time, source, VRID, priority).

    A raw socket gets a copy of every packet of its protocol, beside keepalived's own.
    """

    def __init__(self, host: Host):
        self.sock = netns.run_in(host, socket.socket, socket.AF_INET, socket.SOCK_RAW, 112)
        self.sock.settimeout(0.2)
        self.adverts: list[tuple[float, str, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                packet, (source, _) = self.sock.recvfrom(2048)
            except (TimeoutError, OSError):
                continue
            header = (packet[0] & 0x0F) * 4
            vrrp = packet[header:header + 3]
            if len(vrrp) == 3:
                self.adverts.append((time.monotonic(), source, vrrp[1], vrrp[2]))

    def stop(self) -> list[tuple[float, str, int, int]]:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        return self.adverts


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.2f} s, worst {max(values):.2f} s"


def keep_logs(pair: HaPair, request) -> None:
    """Copy the lab's logs (keepalived's syslog, the APIs', the client's requests) next to the
    junit report, which run-in-vm's results folder holds (the VM's /tmp goes with the VM), in a
    folder per test module: ha-lab/test_ha_failover/, ..."""
    xml = getattr(request.config.option, "xmlpath", None)
    if not xml:
        return
    target = Path(xml).parent / "ha-lab" / request.module.__name__.rpartition(".")[2]
    target.mkdir(parents=True, exist_ok=True)
    sources = [pair.syslog.log_path if pair.syslog else None, pair.probe.log_path if pair.probe else None]
    sources += [node.api.log_path for node in pair.nodes]
    sources += [node.state_dir / "keepalived.conf" for node in pair.nodes]
    for source in filter(None, sources):
        if source.exists():
            name = source.name if source.parent.name != "state" else f"{source.parent.parent.parent.name}-{source.name}"
            if source.name == "api.log":
                name = f"{source.parent.name}-api.log"
            (target / name).write_bytes(source.read_bytes())
