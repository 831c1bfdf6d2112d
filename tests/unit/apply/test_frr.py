"""The FRR daemon against real FRR (zebra, bgpd, bfdd) in throw-away namespaces on this host
(lab.frr): two balancer nodes announce the VIPs to a router over eBGP with BFD; the router's kernel
must hold each VIP as one ECMP route over both nodes. A node's withdrawal (maintenance, keepalived
not running; at an apply or, between applies, by the announcement watch) removes its next hop while
its session stays up; a file FRR's checker refuses is never installed; a rollback
reloads the previous file."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fulcrum.apply.announcement_watch import AnnouncementWatch
from fulcrum.apply.daemons import standard_daemons
from fulcrum.apply.daemons.frr import FrrDaemon, FrrPaths
from fulcrum.apply.fitness import Fitness
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.engine_settings import engine_config
from fulcrum.apply.files import new_path
from fulcrum.apply.keepalived_control import keepalived_argv, pid_of
from fulcrum.apply.tools import ToolError
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.ha.local import set_maintenance
from fulcrum.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab.frr import FrrHost, available, frr_hosts, link  # noqa: E402
from lab.wait import wait_until  # noqa: E402

VIPS = ("192.0.2.10", "192.0.2.20")
NODES = {"node1": ("10.0.1.1", "10.0.1.254"), "node2": ("10.0.2.1", "10.0.2.254")}
ROUTER_ASN, NODE_ASN = 65000, 65001
# What a service whose VIP BGP announces must be (fulcrum.config.cluster).
CLUSTERED = {"forwarding": "dr", "scheduler": "mh", "scheduler_fallback": True, "health_check": {"on_failure": "weight_zero"}}

# The upstream router: eBGP to both nodes with BFD, ECMP over up to 8 paths into the kernel.
ROUTER_CONF = f"""
router bgp {ROUTER_ASN}
 bgp router-id 10.0.0.254
 no bgp ebgp-requires-policy
 neighbor 10.0.1.1 remote-as {NODE_ASN}
 neighbor 10.0.1.1 bfd
 neighbor 10.0.1.1 timers 1 3
 neighbor 10.0.2.1 remote-as {NODE_ASN}
 neighbor 10.0.2.1 bfd
 neighbor 10.0.2.1 timers 1 3
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family
exit
"""


def snapshot(node: str, **bgp: Any) -> ConfigSnapshot:
    address, router = NODES[node]
    services = [
        {"name": f"svc{i}", "address": vip, "ports": [80], "backends": [{"address": "198.51.100.1"}], **CLUSTERED}
        for i, vip in enumerate(VIPS)
    ]
    settings = {
        "asn": NODE_ASN,
        "router_id": address,
        "neighbors": [{"address": router, "remote_asn": ROUTER_ASN, "timers": {"keepalive": 1, "hold": 3}}],
        **bgp,
    }
    return ConfigSnapshot.model_validate({"services": services, "bgp": settings})


class Node:
    """One balancer node: its FRR host and the managed daemon that configures it."""

    def __init__(self, host: FrrHost, config: Path) -> None:
        self.host = host
        self.fit = True  # what the maintenance file would say
        self.daemon = FrrDaemon(FrrPaths(config), self.fitness, host.prefix)

    def fitness(self) -> Fitness:
        return Fitness(self.fit, "fit" if self.fit else "the test withdrew it")

    def apply(self, snapshot: ConfigSnapshot) -> str:
        """The engine's steps for this one daemon: render, validate, install, load, verify."""
        self.daemon.render(snapshot)
        try:
            self.daemon.validate()
        except ToolError:
            self.daemon.reject()
            raise
        self.daemon.install()
        self.daemon.load(snapshot)
        return self.daemon.verify(snapshot).detail


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[FrrHost, dict[str, Node]]]:
    if not available():
        pytest.skip("needs root and FRR (zebra, bgpd, bfdd, vtysh: scripts/setup-host installs it)")
    with frr_hosts(tmp_path, "router", *NODES) as hosts:
        router = hosts["router"]
        for index, (name, (address, gateway)) in enumerate(NODES.items(), start=1):
            link(router, f"r-n{index}", f"{gateway}/24", hosts[name], "eth0", f"{address}/24")
        (tmp_path / "router.conf").write_text(ROUTER_CONF)
        router.run("vtysh", "-f", str(tmp_path / "router.conf"))
        yield router, {name: Node(hosts[name], tmp_path / f"{name}-frr.conf") for name in NODES}


def next_hops(router: FrrHost, vip: str) -> set[str]:
    """The gateways of the router's kernel route to `vip` (one, or an ECMP route's several)."""
    hops = set()
    for route in router.routes(vip):
        if route.get("protocol") != "bgp":
            continue
        hops |= {hop["gateway"] for hop in route.get("nexthops", [])}
        if "gateway" in route:
            hops.add(route["gateway"])
    return hops


def established(router: FrrHost, peer: str) -> dict[str, Any]:
    info: dict[str, Any] = router.vtysh_json(f"show bgp neighbors {peer} json")[peer]
    return info


def test_the_router_learns_every_vip_from_both_nodes_as_one_ecmp_route(lab: tuple[FrrHost, dict[str, Node]], tmp_path: Path) -> None:
    router, nodes = lab
    for name, node in nodes.items():
        detail = node.apply(snapshot(name))
        assert "announcing 2 VIP prefixes" in detail, detail
    both = {address for address, _ in NODES.values()}
    for vip in VIPS:
        wait_until(lambda vip=vip: next_hops(router, vip) == both, 60, what=f"{vip} via both nodes in the router's kernel")
    [route] = router.routes(VIPS[0])
    assert route["dst"] == VIPS[0] and len(route["nexthops"]) == 2  # one multipath route, not two
    # BFD runs between the router and each node (bgpd registered the sessions, bfdd brought them up).
    wait_until(
        lambda: sorted(p["peer"] for p in router.vtysh_json("show bfd peers json") if p["status"] == "up") == sorted(both),
        60,
        what="BFD up between the router and both nodes",
    )

    # What the API's GET /bgp/status shows, through the engine as applyd runs it.
    engine = ApplyEngine(engine_config(Settings(data_dir=tmp_path)), daemons=[nodes["node1"].daemon])
    view = engine.bgp_view()
    assert (view.managed, view.announcing, view.error) == (True, None, None)  # no apply watched yet
    assert view.originated == [f"{vip}/32" for vip in VIPS]
    [session] = view.neighbors
    assert (session.address, session.remote_asn, session.state, session.bfd) == ("10.0.1.254", ROUTER_ASN, "Established", "up")
    assert session.prefixes_sent == 2 and session.up_seconds is not None and session.up_seconds >= 0

    # node1 goes into maintenance: a reload without its network statements.
    first = established(router, "10.0.1.1")
    nodes["node1"].fit = False
    started = time.monotonic()
    assert "VIPs withdrawn" in nodes["node1"].apply(snapshot("node1"))
    for vip in VIPS:
        wait_until(lambda vip=vip: next_hops(router, vip) == {"10.0.2.1"}, 30, what=f"{vip} via node2 alone")
    print(f"withdrawal: node1's next hop left the router's kernel {time.monotonic() - started:.2f} s after the apply began")
    after = established(router, "10.0.1.1")
    # The session was not reset: still Established, not re-established, no notification since.
    assert after["bgpState"] == "Established"
    resets = {k: after.get(k) for k in ("connectionsEstablished", "lastResetDueTo", "lastResetTimerMsecs", "lastErrorCodeSubcode")}
    assert after["connectionsEstablished"] == first["connectionsEstablished"], (first.get("lastResetDueTo"), resets)
    assert after["messageStats"]["notificationsRecv"] == first["messageStats"]["notificationsRecv"]

    # Back in service: node1's next hop returns.
    nodes["node1"].fit = True
    nodes["node1"].apply(snapshot("node1"))
    wait_until(lambda: next_hops(router, VIPS[0]) == both, 30, what="node1 back in the ECMP route")


def test_only_the_chosen_vips_are_announced_with_the_communities(lab: tuple[FrrHost, dict[str, Node]]) -> None:
    router, nodes = lab
    nodes["node1"].apply(snapshot("node1", announce=[VIPS[1]], communities=["65001:42"], large_communities=["65001:1:2"]))
    wait_until(lambda: next_hops(router, VIPS[1]) == {"10.0.1.1"}, 60, what=f"{VIPS[1]} via node1")
    assert next_hops(router, VIPS[0]) == set()
    learned = router.vtysh_json(f"show bgp ipv4 unicast {VIPS[1]}/32 json")
    [path] = learned["paths"]
    assert path["community"]["string"] == "65001:42" and path["largeCommunity"]["string"] == "65001:1:2"


def test_a_file_the_checker_refuses_is_never_installed_and_a_rollback_reloads_the_previous(
    lab: tuple[FrrHost, dict[str, Node]],
) -> None:
    router, nodes = lab
    node = nodes["node1"]
    node.apply(snapshot("node1"))
    wait_until(lambda: next_hops(router, VIPS[1]) == {"10.0.1.1"}, 60, what=f"{VIPS[1]} via node1")
    live = node.daemon.paths.config.read_text()

    # A staged file with a line FRR does not know (what an injection would make): vtysh -C refuses it.
    node.daemon.render(snapshot("node1"))
    staged = new_path(node.daemon.paths.config)
    staged.write_text(staged.read_text().replace(" no bgp network import-check\n", " no bgp network import-check\n neighbor 10.0.1.254 sneaky\n"))
    with pytest.raises(ToolError, match="vtysh -C rejected .*sneaky"):
        node.daemon.validate()
    node.daemon.reject()
    assert node.daemon.paths.config.read_text() == live and not staged.exists()

    # A change loaded, then a later daemon fails: undo puts the previous file back and reloads it.
    node.apply(snapshot("node1", announce=[VIPS[0]]))
    wait_until(lambda: next_hops(router, VIPS[1]) == set(), 30, what=f"{VIPS[1]} withdrawn by the change")
    done = node.daemon.undo(loaded=True)
    assert "restored" in done and "frr-reload.py applied" in done
    assert node.daemon.paths.config.read_text() == live
    wait_until(lambda: next_hops(router, VIPS[1]) == {"10.0.1.1"}, 30, what=f"{VIPS[1]} announced again after the undo")
    assert node.daemon.verify(snapshot("node1")).detail.startswith("bgpd announcing 2 VIP prefixes")


def test_an_unchanged_configuration_is_not_reloaded_but_still_read_back(lab: tuple[FrrHost, dict[str, Node]]) -> None:
    """Every apply passes through FRR; frr-reload.py runs only when the file differs from what the
    daemons last took in (or after an undo, when that is unknown). bgpd is read back every time."""
    router, nodes = lab
    node = nodes["node1"]
    node.apply(snapshot("node1"))
    wait_until(lambda: next_hops(router, VIPS[1]) == {"10.0.1.1"}, 60, what=f"{VIPS[1]} via node1")

    def load(config: ConfigSnapshot) -> str:
        node.daemon.render(config)
        node.daemon.validate()
        node.daemon.install()
        return node.daemon.load(config)

    assert "not reloaded" in load(snapshot("node1"))
    assert node.daemon.verify(snapshot("node1")).detail.startswith("bgpd announcing 2 VIP prefixes")
    assert "frr-reload.py applied" in load(snapshot("node1", announce=[VIPS[0]]))
    wait_until(lambda: next_hops(router, VIPS[1]) == set(), 30, what=f"{VIPS[1]} withdrawn by the change")
    node.daemon.undo(loaded=True)
    assert "frr-reload.py applied" in load(snapshot("node1")), "after an undo what FRR runs is not known"


@pytest.fixture
def frr_stopped() -> Iterator[tuple[str, ...]]:
    """The command prefix of a network and mount namespace where FRR does not run (its socket
    directory empty): what applyd meets at boot while frr.service is still starting."""
    if not available():
        pytest.skip("needs root and FRR (zebra, bgpd, bfdd, vtysh: scripts/setup-host installs it)")
    setup = "mkdir -p /var/run/frr && mount -t tmpfs tmpfs /var/run/frr && exec sleep infinity"
    process = subprocess.Popen(["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", setup])
    try:
        prefix = ("nsenter", "--target", str(process.pid), "--net", "--mount")
        wait_until(lambda: subprocess.run([*prefix, "findmnt", "/var/run/frr"], capture_output=True, check=False).returncode == 0,
                   10, what="the empty FRR socket directory mounted")
        yield prefix
    finally:
        process.kill()
        process.wait()


def test_without_bgp_a_stopped_frr_is_left_to_read_the_file_and_with_bgp_the_apply_waits_for_it(
    frr_stopped: tuple[str, ...], tmp_path: Path
) -> None:
    """applyd does not wait for frr.service at boot: an apply with no BGP in it leaves a stopped FRR
    to read the file when it starts; one with BGP waits for FRR's daemons, and says so if they never answer."""
    daemon = FrrDaemon(FrrPaths(tmp_path / "frr.conf"), lambda: Fitness(True, "fit"), frr_stopped, start_timeout=2)

    def load(config: ConfigSnapshot) -> str:
        daemon.render(config)
        daemon.validate()
        daemon.install()
        return daemon.load(config)

    assert "FRR is not running: it reads" in load(ConfigSnapshot())
    assert daemon.verify(ConfigSnapshot()).detail == "no BGP configured: FRR announces nothing"
    started = time.monotonic()
    with pytest.raises(ToolError, match="zebra, bgpd, bfdd did not answer vtysh within 2 s"):
        load(snapshot("node1"))
    assert time.monotonic() - started >= 2


def test_frr_is_managed_only_where_configured_and_withdraws_without_keepalived_or_in_maintenance(
    tmp_path: Path,
) -> None:
    assert "frr" not in [d.name for d in standard_daemons(engine_config(Settings(data_dir=tmp_path)))]
    settings = Settings(data_dir=tmp_path, frr_config=tmp_path / "frr.conf")
    daemons = standard_daemons(engine_config(settings))
    frr = daemons[-1]
    assert isinstance(frr, FrrDaemon) and frr.paths.config == tmp_path / "frr.conf"
    assert settings.maintenance_file is not None and settings.keepalived_pidfile is not None
    assert "VIPs withdrawn: keepalived is not running here" in frr.render(snapshot("node1"))

    # A real keepalived (with nothing to run: this host has no IPVS) at the pid file the engine reads.
    (tmp_path / "empty.conf").write_text("global_defs {\n}\n")
    settings.keepalived_pidfile.parent.mkdir(parents=True, exist_ok=True)
    argv = [*keepalived_argv(tmp_path / "empty.conf", settings.keepalived_pidfile, tmp_path), "--dont-fork", "--no-syslog"]
    keepalived = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: pid_of(settings.keepalived_pidfile) == keepalived.pid, 30, what="keepalived's pid file")
        assert "withdrawn" not in frr.render(snapshot("node1"))
        assert "  network " in new_path(frr.paths.config).read_text()
        set_maintenance(settings.maintenance_file, True)  # what the HA page's maintenance switch does
        assert "VIPs withdrawn: this node is in maintenance" in frr.render(snapshot("node1"))
        assert "  network " not in new_path(frr.paths.config).read_text()
    finally:
        keepalived.terminate()
        keepalived.wait(30)
    frr.discard()


def test_between_applies_the_watch_withdraws_and_announces_as_the_node_s_fitness_changes(
    lab: tuple[FrrHost, dict[str, Node]],
) -> None:
    router, nodes = lab
    node = nodes["node1"]
    live = snapshot("node1")
    node.apply(live)
    wait_until(lambda: next_hops(router, VIPS[0]) == {"10.0.1.1"}, 60, what=f"{VIPS[0]} via node1")
    apply_lock = threading.Lock()  # the engine's: the watch must hold it to change anything
    watch = AnnouncementWatch(node.daemon, lambda: apply_lock, interval=0.2)
    try:
        assert watch.check_once() is None and watch.view() == (None, None)  # nothing watched yet
        watch.watch(live)
        assert watch.view() == (True, "fit")
        node.fit = False  # e.g. keepalived died: no apply comes, the watch acts
        wait_until(lambda: next_hops(router, VIPS[0]) == set(), 30, what=f"{VIPS[0]} withdrawn by the watch")
        wait_until(lambda: node.daemon.announced is False, 30, what="the watch's round to end")
        assert watch.view() == (False, "the test withdrew it")  # what GET /status shows
        assert "  network " not in node.daemon.paths.config.read_text()
        assert established(router, "10.0.1.1")["bgpState"] == "Established"  # the session stays

        with apply_lock:  # an apply under way: the watch waits for it
            node.fit = True
            time.sleep(1)
            assert next_hops(router, VIPS[0]) == set()
        wait_until(lambda: next_hops(router, VIPS[0]) == {"10.0.1.1"}, 30, what=f"{VIPS[0]} announced again")
        wait_until(lambda: node.daemon.announced is True, 30, what="the watch's round to end")
    finally:
        watch.close()
    assert watch.check_once() is None  # fit, and announcing: nothing due


def test_a_restarted_watch_resumes_from_the_kept_configuration_and_brings_frr_in_line(
    lab: tuple[FrrHost, dict[str, Node]], tmp_path: Path
) -> None:
    """applyd restarted (or the node rebooted): FRR still announces from its own file, and no
    apply has come. The watch of the new process takes the live configuration from where the last
    one kept it, if it is the applied one, and its first round withdraws an unfit node."""
    router, nodes = lab
    node = nodes["node1"]
    live = snapshot("node1")
    node.apply(live)
    wait_until(lambda: next_hops(router, VIPS[0]) == {"10.0.1.1"}, 60, what=f"{VIPS[0]} via node1")
    keep = tmp_path / "announced-snapshot.json"
    before = AnnouncementWatch(node.daemon, threading.Lock, keep=keep, interval=3600)
    before.watch(live)
    assert keep.stat().st_mode & 0o777 == 0o600  # it holds the neighbors' passwords
    before.close()

    restarted = FrrDaemon(node.daemon.paths, node.fitness, node.host.prefix)
    after = AnnouncementWatch(restarted, threading.Lock, keep=keep, interval=3600)
    try:
        assert not after.resume("0" * 64)  # not the applied revision's: nothing to watch
        assert after.check_once() is None
        assert after.resume(live.digest())
        node.fit = False
        assert "VIPs withdrawn: the test withdrew it" in (after.check_once() or "")
        wait_until(lambda: next_hops(router, VIPS[0]) == set(), 30, what=f"{VIPS[0]} withdrawn after the restart")
    finally:
        after.close()
