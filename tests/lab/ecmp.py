"""A scale-out cluster behind a router's ECMP, in the kernel VM, and the runs measured on it
(tests/kernel/test_ecmp_cluster.py asserts them, tests/bench/test_8_ecmp.py repeats them).

    c1 10.77.0.10 ── r1 (FRR: eBGP + BFD to each node, ECMP with L4 hashing) 10.77.1.1
                         │ lan 10.77.1.0/24
          lb1 .2, lb2 .3, lb3 .4: FRR (the managed daemon) + keepalived (the renderer's config)
          b1 .21, b2 .22, b3 .23: TCP echo on port 7, the VIP on lo (DR), default via r1

Each node's keepalived.conf and frr.conf come from one snapshot through Fulcrum's renderers, and
FRR is driven by the managed daemon (render, vtysh -C, frr-reload.py, read-back), which also sets
sloppy TCP. The API is not started: three of them would take minutes to boot here. lb1 and lb2
announce the VIP; lb3 is provisioned with its session up and announces nothing until it joins.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fulcrum.apply.announcement_watch import AnnouncementWatch
from fulcrum.apply.daemons.frr import FrrDaemon, FrrPaths
from fulcrum.apply.daemons.nftables import NftablesDaemon
from fulcrum.apply.fitness import AnnounceFitness, Fitness
from fulcrum.config.snapshot import WRITTEN, ConfigSnapshot
from fulcrum.render import RuntimePaths, render_keepalived

from lab import client, frr, ipvs, keepalived
from lab.defer import innermost, within
from lab.cmd import bkg
from lab.netns import established_peer_ports
from lab.topo import Host, Lab
from lab.wait import WaitTimeout, wait_until

VIP, PORT = "192.0.2.10", 7
ROUTER_LAN = "10.77.1.1"
NODES = {"lb1": 2, "lb2": 3, "lb3": 4}
BACKENDS = {"b1": 21, "b2": 22, "b3": 23}
ROUTER_ASN, NODE_ASN = 65000, 65001
NEW_CONNECTIONS = 90  # opened while all three nodes are in: each node's share of new flows
RETRANSMITTED_ECHO_TIMEOUT = 120  # after the withdrawal: keepalived_dies
FIRST_CLIENT_PORT, PORT_WINDOW = 10000, 2500  # a run's client ports (Cluster.new_run)
PORT_WINDOWS = (65536 - FIRST_CLIENT_PORT) // PORT_WINDOW

# The router's BFD toward the nodes. Fast: FRR's defaults (300 ms, and the node's multiplier of 3:
# a dead node is detected after about 0.9 s), what `make bench` measures. Tolerant: 600 ms, so 1.8 s,
# still well under BGP's 3 s hold, for make test: in one full run (ci43), beside the other lanes,
# every route left the router at once mid-test, which is what the router's BFD timers all firing
# after a stall of the emulated VM would do (reasoned; its sessions' drops are in the failure
# message now).
TOLERANT_BFD = ("bfd", " profile tolerant", "  receive-interval 600", "  transmit-interval 600", " exit", "exit")


def router_conf(tolerant: bool) -> str:
    bfd = " bfd profile tolerant" if tolerant else " bfd"
    return "\n".join(
        [
            *(TOLERANT_BFD if tolerant else ()),
            f"router bgp {ROUTER_ASN}",
            " bgp router-id 10.77.0.1",
            " no bgp ebgp-requires-policy",
            *(
                line
                for number in NODES.values()
                for line in (
                    f" neighbor 10.77.1.{number} remote-as {NODE_ASN}",
                    f" neighbor 10.77.1.{number}{bfd}",
                    f" neighbor 10.77.1.{number} timers 1 3",
                )
            ),
            " address-family ipv4 unicast",
            "  maximum-paths 8",
            " exit-address-family",
            "exit",
            "",
        ]
    )


def backend_address(name: str) -> str:
    return f"10.77.1.{BACKENDS[name]}"


def snapshot(node: str, scheduler: str, backends: tuple[str, ...] = tuple(BACKENDS)) -> ConfigSnapshot:
    service: dict[str, Any] = {
        "name": "echo",
        "address": VIP,
        "ports": [PORT],
        "forwarding": "dr",
        "scheduler": scheduler,
        "health_check": {"type": "tcp", "on_failure": "weight_zero"},
        "backends": [{"address": backend_address(name)} for name in backends],
    }
    if scheduler == "mh":
        service |= {"scheduler_fallback": True, "scheduler_port": True}
        bgp = {
            "asn": NODE_ASN,
            "router_id": f"10.77.1.{NODES[node]}",
            "neighbors": [{"address": ROUTER_LAN, "remote_asn": ROUTER_ASN, "timers": {"keepalive": 1, "hold": 3}}],
        }
        return ConfigSnapshot.model_validate({"services": [service], "bgp": bgp}, context=WRITTEN)
    # Refused with BGP on (fulcrum.config.cluster): a control's keepalived.conf is rendered without
    # it, and its FRR from the mh snapshot (only the VIP's address matters there).
    return ConfigSnapshot.model_validate({"services": [service]})


class Node:
    """A balancer node: keepalived with the renderer's configuration, FRR through the managed daemon,
    which asks the product's fitness (keepalived must run) as well as the test's own say."""

    def __init__(self, host: Host, frr_host: frr.FrrHost) -> None:
        self.host = host
        # The lab's cleanup scope: a keepalived a test starts again belongs to the lab (the scope
        # open when the test runs would stop it at the test's end, under the next test's feet).
        self.scope = innermost()
        self.fit = True
        self.frr = FrrDaemon(FrrPaths(host.workdir / "frr.conf"), self.fitness, frr_host.prefix)
        self.keepalived_conf = host.workdir / "keepalived.conf"
        self.keepalived: keepalived.Keepalived | None = None
        # keepalived.start writes its pid file beside its configuration
        self.product_fitness = AnnounceFitness(None, host.workdir / "keepalived.pid")
        self.apply_lock = threading.Lock()  # the engine's: the test's applies and the watch's rounds
        self.nftables = NftablesDaemon(host.workdir / "fulcrum.nft", ("ip", "netns", "exec", host.name))

    def fitness(self) -> Fitness:
        return self.product_fitness() if self.fit else Fitness(False, "the test withdrew it")

    def watch(self) -> AnnouncementWatch:
        """What applyd runs after an apply: the announcements follow this node's fitness."""
        watch = AnnouncementWatch(self.frr, lambda: self.apply_lock)
        watch.watch(snapshot(self.host.role, "mh"))
        return watch

    def balance(self, scheduler: str, backends: tuple[str, ...] = tuple(BACKENDS)) -> None:
        config = snapshot(self.host.role, scheduler, backends)
        rendered = render_keepalived(config, RuntimePaths())
        if self.keepalived is None:
            self.keepalived_conf.write_text(rendered)
            with within(self.scope):
                self.keepalived = keepalived.start(self.host, self.keepalived_conf)
            for key, value in ipvs.appliance_settings().items():  # IPVS is loaded now
                self.host.sysctl(key, value)
        elif self.keepalived_conf.read_text() != rendered:  # the same: a reload would change nothing
            self.keepalived_conf.write_text(rendered)
            keepalived.check_config(self.host, self.keepalived_conf)
            self.keepalived.reload()
        # Every backend's checker has passed, even with the configuration unchanged (a node whose
        # link was down has them at weight 0 for seconds after it is back): until then the node's
        # mh table leaves the backend out (the fallback) and a flow moved between nodes meets
        # another backend. Reasoned from stop 41's run of make test, which lost 7 of 150 when
        # lb2's keepalived died: the test before had just put b3 back, and lb3's checker enabled it
        # seconds after that test ended (logged so in a run beside a CPU load).
        try:
            ipvs.wait_for_real_servers(self.host, VIP, PORT, [backend_address(name) for name in backends], timeout=60,
                                       enabled=True)
        except WaitTimeout as error:
            running = self.keepalived is not None and self.keepalived.running
            log = (self.host.workdir / "keepalived.log").read_text(errors="replace").splitlines()[-40:]
            raise AssertionError(f"{error}\n{self.host.role}'s keepalived running: {running}; its log's end:\n"
                                 + "\n".join(log)) from error

    def firewall(self, drop_unbalanced: bool = True) -> str:
        """The appliance's own nftables table through the nftables daemon's steps. Its
        announced_unbalanced chain drops what IPVS leaves of a flow to the announced VIP;
        `drop_unbalanced=False` flushes that chain afterwards (the control: this host's stack
        answers such a flow with a reset, as before the chain existed)."""
        config = snapshot(self.host.role, "mh")
        self.nftables.render(config)
        self.nftables.validate()
        self.nftables.install()
        self.nftables.load(config)
        if not drop_unbalanced:
            self.host.cmd(["nft", "flush", "chain", "inet", "fulcrum", "announced_unbalanced"])
        return self.nftables.verify(config).detail

    def announce(self, fit: bool = True) -> str:
        """The engine's steps for the FRR daemon: render, validate, install, load, verify."""
        config = snapshot(self.host.role, "mh")
        self.fit = fit
        if self.frr.announced is self.fitness().fit is fit:
            return "unchanged: already so"  # an apply would change nothing (each takes ~20 s here)
        with self.apply_lock:
            self.frr.render(config)
            self.frr.validate()
            self.frr.install()
            loaded = self.frr.load(config)
            return f"{loaded}; {self.frr.verify(config).detail}"


@dataclass
class Cluster:
    net: Lab
    router: frr.FrrHost
    nodes: dict[str, Node]
    runs: int = 0

    def next_hops(self) -> set[str]:
        hops = set()
        for route in self.router.routes(VIP):
            hops |= {hop["gateway"] for hop in route.get("nexthops", [])}
            if "gateway" in route:
                hops.add(route["gateway"])
        return hops

    def wait_for_next_hops(self, *names: str) -> None:
        wanted = {f"10.77.1.{NODES[name]}" for name in names}
        wait_until(lambda: self.next_hops() == wanted, 60, what=f"{VIP} via {', '.join(names) or 'nobody'}")

    def established(self, name: str) -> bool:
        peer = f"10.77.1.{NODES[name]}"
        return self.router.vtysh_json(f"show bgp neighbors {peer} json").get(peer, {}).get("bgpState") == "Established"

    def balance(self, scheduler: str, backends: tuple[str, ...] = tuple(BACKENDS)) -> None:
        """Every node, side by side (a keepalived start or reload and its checkers take seconds)."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.balance(scheduler, backends), self.nodes.values()))

    def new_run(self) -> None:
        """Client ports no recent run used: a node keeps a closed connection's entry for minutes,
        and a moved flow whose 5-tuple matches an old entry of another run's scheduler would go
        to that entry's backend. A backend keeps a connection IPVS dropped (it never hears of
        it), so a port reused while that lasts would be counted as a new flow to it. The windows
        go round: one comes back after PORT_WINDOWS runs, many minutes later."""
        self.runs += 1
        low = FIRST_CLIENT_PORT + PORT_WINDOW * (self.runs % PORT_WINDOWS)
        self.net.client.sysctl("net.ipv4.ip_local_port_range", f"{low} {low + PORT_WINDOW - 1}")

    def hold(self, count: int) -> list:
        try:
            socks = [client.hold_tcp(self.net.client, VIP, PORT, timeout=10) for _ in range(count)]
        except OSError as error:  # e.g. unreachable: the router had no path to the VIP just then
            raise AssertionError(f"a new connection failed ({error}); the router now: {self.sessions()}") from error
        assert all(client.still_answer(socks)), f"every new connection answers; the router now: {self.sessions()}"
        return socks

    def sessions(self) -> dict[str, Any]:
        """The router's view of each node's BGP and BFD sessions: what a failure message needs."""
        view: dict[str, Any] = {}
        for name, number in NODES.items():
            peer = f"10.77.1.{number}"
            info = self.router.vtysh_json(f"show bgp neighbors {peer} json").get(peer, {})
            view[name] = {key: info.get(key) for key in
                          ("bgpState", "connectionsEstablished", "connectionsDropped", "lastResetDueTo", "bgpTimerUpMsec")}
        bfd = {p["peer"]: {k: p.get(k) for k in ("status", "uptime", "downtime")}
               for p in self.router.vtysh_json("show bfd peers json")}
        for name, number in NODES.items():
            view[name]["bfd"] = bfd.get(f"10.77.1.{number}")
        return view

    def carried(self, socks: list) -> dict[str, int]:
        """How many of these connections each node's IPVS has carried."""
        ports = {sock.getsockname()[1] for sock in socks}
        return {name: len(ipvs.connection_ports(node.host) & ports) for name, node in self.nodes.items()}

    def holders(self, socks: list) -> dict[int, frozenset[str]]:
        """For each of these connections (by client port), the nodes whose IPVS has an entry for
        it: a node keeps the entry of a flow the router moved away, so a flow seen by a node it
        was not seen by before has changed node, wherever it went."""
        tables = {name: ipvs.connection_ports(node.host) for name, node in self.nodes.items()}
        return {port: frozenset(name for name, table in tables.items() if port in table)
                for port in (sock.getsockname()[1] for sock in socks)}


@contextmanager
def cluster(workdir: Path, tolerant_bfd: bool = False) -> Iterator[Cluster]:
    """The lab, started, inside the caller's cleanup scope (which removes the namespaces);
    `tolerant_bfd`: see TOLERANT_BFD."""
    with ExitStack() as stack:
        net = Lab(workdir=workdir)
        net.add_segment("up", "10.77.0.0/24")
        net.add_segment("lan", "10.77.1.0/24")
        router = net.add_host("r1")
        net.connect(router, "up", 1)
        net.connect(router, "lan", 1)
        # L4 hashing: the flows of one client spread over the paths by their ports.
        router.setup(sysctls={"net.ipv4.ip_forward": 1, "net.ipv4.fib_multipath_hash_policy": 1})
        c1 = net.add_host("c1")
        net.connect(c1, "up", 10)
        c1.setup("route add default via 10.77.0.1")
        net.clients.append(c1)
        for name, number in NODES.items():
            net.lbs.append(net.add_host(name))
            net.connect(net.lbs[-1], "lan", number)
            # As an appliance has: DR replies leave from the backends, but whatever a node's own
            # stack answers a client (a reset) must reach it (without a route the lab hid them).
            net.lbs[-1].setup(f"route add default via {ROUTER_LAN}")
        for name, number in BACKENDS.items():
            backend = net.add_host(name)
            net.connect(backend, "lan", number)
            backend.setup(f"addr add {VIP}/32 dev lo", f"route add default via {ROUTER_LAN}",
                          sysctls={"net.ipv4.conf.all.arp_ignore": 1, "net.ipv4.conf.all.arp_announce": 2})
            net.backends.append(backend)
        net.start()
        for backend in net.backends:
            net.start_tcp_echo(backend, port=PORT)
        # FRR's own directories beside the lab hosts' (frr-lb1 beside lb1, which keeps frr.conf)
        started = stack.enter_context(
            frr.frr_hosts(workdir, *(f"frr-{name}" for name in ("r1", *NODES)),
                          netns={f"frr-{name}": net.hosts[name].name for name in ("r1", *NODES)})
        )
        hosts = {name.removeprefix("frr-"): host for name, host in started.items()}
        (workdir / "router.conf").write_text(router_conf(tolerant_bfd))
        hosts["r1"].run("vtysh", "-f", str(workdir / "router.conf"))
        made = Cluster(net, hosts["r1"], {name: Node(net.hosts[name], hosts[name]) for name in NODES})
        made.balance("mh")
        for node in made.nodes.values():
            node.firewall()
        with ThreadPoolExecutor(len(made.nodes)) as pool:  # each apply takes ~20 s here, mostly frr-reload.py
            applied = dict(zip(made.nodes, pool.map(lambda name: made.nodes[name].announce(fit=name != "lb3"), made.nodes), strict=True))
        for name, detail in applied.items():
            assert "sloppy TCP/SCTP on" in detail, name
        made.wait_for_next_hops("lb1", "lb2")
        wait_until(lambda: all(made.established(name) for name in NODES), 60, what="BGP up with every node")
        yield made


def join_and_leave(cluster: Cluster, scheduler: str, held: int) -> dict[str, Any]:
    """`held` connections through lb1 and lb2; lb3 joins; every one is asked for an echo; lb3 is
    drained (withdrawn, its session kept) and the survivors are asked again. The figures; lb3 is
    left withdrawn."""
    cluster.balance(scheduler)
    cluster.nodes["lb3"].announce(fit=False)  # out, if an earlier run left it in
    cluster.wait_for_next_hops("lb1", "lb2")
    cluster.new_run()
    socks = cluster.hold(held)
    before = cluster.carried(socks)
    held_by = cluster.holders(socks)

    started = time.monotonic()
    cluster.nodes["lb3"].announce()
    applied = time.monotonic() - started
    cluster.wait_for_next_hops(*NODES)
    routed = time.monotonic() - started
    survived_join = client.still_answer(socks)
    moved = cluster.carried(socks)["lb3"]
    # Hash-threshold multipath: the router's hash range is cut into equal parts, one per next hop,
    # so a third next hop also moves flows between the first two (a sixth of them, reasoned).
    joined = {port: nodes - held_by[port] for port, nodes in cluster.holders(socks).items()}
    changed = sum(1 for new_nodes in joined.values() if new_nodes)
    between_old = sum(1 for new_nodes in joined.values() if new_nodes and "lb3" not in new_nodes)

    fresh = cluster.hold(NEW_CONNECTIONS)
    spread = cluster.carried(fresh)

    assert "VIPs withdrawn" in cluster.nodes["lb3"].announce(fit=False)
    cluster.wait_for_next_hops("lb1", "lb2")
    kept = [sock for sock, alive in zip(socks, survived_join, strict=True) if alive]
    survived_leave = client.still_answer(kept)
    for sock in [*socks, *fresh]:
        sock.close()
    return {
        "scheduler": scheduler,
        "held": held,
        "carried before the join": before,
        "moved to lb3": moved,
        "moved between lb1 and lb2": between_old,
        "changed node": changed,
        "survived the join": sum(survived_join),
        "drained": len(kept),
        "survived the drain": sum(survived_leave),
        "new connections per node": spread,
        "seconds: lb3's apply": round(applied, 2),
        "seconds: lb3's apply to the router's third next hop": round(routed, 2),
    }


_STAMP = re.compile(r"^\[(?P<when>[^\]]+)\]\s*(?P<event>.*)$")


def _events(log: Path) -> list[tuple[float, str]]:
    """`ip -ts -o monitor` lines as (UNIX time, event)."""
    found = []
    for line in log.read_text().splitlines():
        match = _STAMP.match(line)
        if match:
            found.append((datetime.fromisoformat(match["when"]).timestamp(), match["event"]))
    return found


def _listening(log: Path, marker: str, poke: Callable[[], None], what: str) -> None:
    """Wait until a monitor started in the background prints the change `poke` makes (made again
    on every try: one made before the monitor had its socket is never printed)."""

    def seen() -> bool:
        poke()
        return marker in log.read_text()

    wait_until(seen, 30, what=f"{what} listening")


def kill_node(cluster: Cluster, held: int) -> dict[str, Any]:
    """lb3 joins; `held` connections are opened over all three nodes; lb3's link goes down (no BGP
    notification, no TCP close: what a dead box looks like). The time from its link going down to
    the router's kernel changing the VIP's route, from the kernels' own event stamps (`ip -ts
    monitor`); how many connections carried by lb3 continue. lb3 comes back, withdrawn."""
    cluster.balance("mh")
    cluster.new_run()
    lb3 = cluster.nodes["lb3"]
    lb3.announce()
    cluster.wait_for_next_hops(*NODES)
    peer = f"10.77.1.{NODES['lb3']}"
    wait_until(
        lambda: any(p["peer"] == peer and p["status"] == "up" for p in cluster.router.vtysh_json("show bfd peers json")),
        60,
        what="BFD up between r1 and lb3",
    )
    socks = cluster.hold(held)
    carried = cluster.carried(socks)["lb3"]

    workdir = cluster.net.workdir
    routes_log, link_log = workdir / f"routes-{cluster.runs}.log", workdir / f"link-{cluster.runs}.log"
    router = cluster.net.hosts["r1"]
    routes = bkg(["ip", "-ts", "-o", "monitor", "route"], router, log_path=routes_log)
    link = bkg(["ip", "-ts", "-o", "monitor", "link"], lb3.host, log_path=link_log)
    _listening(routes_log, "203.0.113.99", lambda: router.ip_batch(
        ["route add blackhole 203.0.113.99/32", "route del blackhole 203.0.113.99/32"]), "r1's route monitor")
    mtu = iter(range(65000, 64000, -1))
    _listening(link_log, " lo:", lambda: lb3.host.ip("link", "set", "dev", "lo", "mtu", str(next(mtu))),
               "lb3's link monitor")
    try:
        lb3.host.ip("link", "set", "eth0", "down")
        cluster.wait_for_next_hops("lb1", "lb2")
        session = cluster.router.vtysh_json(f"show bgp neighbors {peer} json")[peer]
        bfd = {p["peer"]: p["status"] for p in cluster.router.vtysh_json("show bfd peers json")}
        survived = client.still_answer(socks)
    finally:
        routes.stop()
        link.stop()
        lb3.host.ip("link", "set", "eth0", "up")
    down = next(when for when, event in _events(link_log) if re.search(r"\beth0[@:]", event) and "state DOWN" in event)
    changed = next(when for when, event in _events(routes_log) if VIP in event and when >= down)
    for sock in socks:
        sock.close()
    lb3.announce(fit=False)
    wait_until(lambda: cluster.established("lb3"), 60, what="lb3's session back")
    return {
        "held": held,
        "carried by lb3": carried,
        "survived": sum(survived),
        "session ended by": f"{session.get('lastResetDueTo')}: {session.get('lastNotificationReason')}",
        "router's BFD session with lb3": bfd.get(peer),
        "seconds from lb3's link down to the router's route change": round(changed - down, 3),
    }


def remove_backend(cluster: Cluster, held: int, removed: str = "b3") -> dict[str, Any]:
    """All three nodes announce; `held` connections are opened; `removed` leaves every node's
    configuration (each keepalived reloads without it, as after a commit deleting it; IPVS deletes
    the real server). Which held connections still answer, by whether their backend was the
    removed one, and where new connections go. The backend comes back afterwards (last, where it
    was, so the nodes' order stays the creation order)."""
    cluster.balance("mh")
    cluster.new_run()
    cluster.nodes["lb3"].announce()
    cluster.wait_for_next_hops(*NODES)
    socks = cluster.hold(held)
    backend = cluster.net.hosts[removed]
    served = established_peer_ports(backend, PORT)
    on_removed = [sock.getsockname()[1] in served for sock in socks]

    cluster.balance("mh", tuple(name for name in BACKENDS if name != removed))
    alive = client.still_answer(socks)
    # The removed backend still holds its dropped connections' ports: new flows take other ports.
    cluster.new_run()
    fresh = cluster.hold(NEW_CONNECTIONS)
    fresh_on_removed = len({sock.getsockname()[1] for sock in fresh} & established_peer_ports(backend, PORT))
    for sock in [*socks, *fresh]:
        sock.close()
    cluster.balance("mh")
    return {
        "held": held,
        "on the removed backend": sum(on_removed),
        "on the others": held - sum(on_removed),
        "survived on the removed backend": sum(a for a, gone in zip(alive, on_removed, strict=True) if gone),
        "survived on the others": sum(a for a, gone in zip(alive, on_removed, strict=True) if not gone),
        "new connections": len(fresh),
        "new connections to the removed backend": fresh_on_removed,
    }


def keepalived_dies(cluster: Cluster, held: int, node: str = "lb2", drop_unbalanced: bool = True) -> dict[str, Any]:
    """All three nodes announce, `node` under the product's announcement watch (what applyd runs
    between applies); `held` connections are opened; `node`'s keepalived stops (SIGTERM: it takes
    its IPVS services with it) and no apply follows. Every connection sends at once, while the
    router still sends `node` its share: IPVS there no longer takes them, and the node's
    announced_unbalanced chain drops them (`drop_unbalanced=False`: the control, without it, where
    the node's own stack resets them). The watch withdraws the node's VIP; the connections it
    carried re-hash to the other nodes, which pick the same backends, and their retransmissions
    get the echo there. keepalived comes back and the watch announces again."""
    cluster.balance("mh")
    cluster.new_run()
    cluster.nodes["lb3"].announce()
    cluster.wait_for_next_hops(*NODES)
    sick = cluster.nodes[node]
    sick.firewall(drop_unbalanced)
    others = [name for name in NODES if name != node]
    watch = sick.watch()
    try:
        socks = cluster.hold(held)
        before = cluster.holders(socks)
        assert sick.keepalived is not None
        sick.keepalived.stop()
        sick.keepalived = None
        stopped = time.monotonic()
        sent = client.send_on_each(socks)
        cluster.wait_for_next_hops(*others)
        withdrawn = time.monotonic() - stopped
        session_up = cluster.established(node)
        # A segment the node dropped comes again after TCP's backed-off retransmission timeout
        # (0.2 s doubling: one falls 25 s after the send, the next at 51 s), now to another node.
        outcomes = client.answers(socks, sent=sent, timeout=RETRANSMITTED_ECHO_TIMEOUT)
        answered = time.monotonic() - stopped
        after = cluster.holders(socks)
        for sock in socks:
            sock.close()
        sick.balance("mh")  # keepalived again
        started = time.monotonic()
        cluster.wait_for_next_hops(*NODES)
        announced = time.monotonic() - started
    finally:
        watch.close()
        if not drop_unbalanced:
            sick.firewall()
    lost = Counter(
        f"{'+'.join(sorted(before[port]))} then {'+'.join(sorted(after[port] - before[port])) or 'no other'}: {outcome}"
        for port, outcome in zip(before, outcomes, strict=True)
        if outcome != client.ANSWERED
    )
    return {
        "held": held,
        "node": node,
        "dropped what IPVS left": drop_unbalanced,
        "carried by the node": sum(node in nodes for nodes in before.values()),
        "survived": outcomes.count(client.ANSWERED),
        "lost (carried by, then also seen by: outcome)": dict(lost),
        "lost that the node had carried": sum(
            node in before[port] for port, outcome in zip(before, outcomes, strict=True) if outcome != client.ANSWERED
        ),
        "its session stayed up": session_up,
        "seconds from keepalived's exit to the router's route change": round(withdrawn, 2),
        "seconds from keepalived's exit to the last answer": round(answered, 2),
        "seconds from keepalived's start to the node's next hop back": round(announced, 2),
    }
