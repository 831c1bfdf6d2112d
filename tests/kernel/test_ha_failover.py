"""An HA pair of real appliances (tests/lab/pair.py): every failure a node can suffer moves every
VIP of every group to the peer while a client keeps making requests; the client's and the
backends' ARP entries follow; an established connection survives with connection sync and
breaks without it; maintenance hands over with a priority-0 advert.

Both nodes are configured through their own APIs (not paired: each is its own writer) with
1 s adverts, the interval that stayed free of false failovers in this emulated VM under load
(ha/README.md has the measurements). Tests run in file order on one pair; each leaves one node
holding every VIP and both nodes running.

Timings are printed, never asserted: under emulation timers are late and uneven
(tests/bench/ha_failover.py measures them).
"""

from __future__ import annotations

import socket
import time

import pytest

import lab
from lab import client, ipvs, netns, pair as ha
from lab.pair import ALL_VIPS, ECHO_PORT, FRONT_VIPS, ONE_ARM_PORT, AdvertSniffer, HaPair, Node, outage

# Two API start-ups (minutes each in the emulated VM) count against the first test.
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(3000)]

ADVERT = 1.0
# A node-health round here: its interval (lab.pair.NODE_HEALTH_ENV) and a Python start.
HEALTH_ROUND = int(ha.NODE_HEALTH_ENV["FULCRUM_NODE_HEALTH_INTERVAL"]) + 15


@pytest.fixture(scope="module")
def pair(tmp_path_factory, request):
    with lab.scope("ha pair"):
        started = time.monotonic()
        p = HaPair.build(tmp_path_factory.mktemp("hapair"))
        print(f"both APIs answered {time.monotonic() - started:.0f} s after launch")
        try:
            p.setup_admin()
            for node in p.nodes:
                p.configure(node, advert_interval=ADVERT, sync=True)
            p.commit_both("pair lab")
            p.start_probe()
            yield p
        finally:
            ha.keep_logs(p, request)


def takeover(pair: HaPair, old: Node, action, *, restore=None, what: str) -> Node:
    """Inject a failure on the node holding the VIPs; wait until the peer holds every VIP and the
    client's requests succeed again; check the ARP view; return the new master."""
    new = pair.other(old)
    injected = time.monotonic()
    action()
    lab.wait_until(lambda: new.vips() == set(ALL_VIPS), 180, what=f"{new.name} to take every VIP after {what}",
                   interval=0.02)
    moved = time.monotonic() - injected
    pair.probe.wait_for_requests(time.monotonic(), count=6)
    seen = outage(pair.probe, injected, time.monotonic())
    print(f"{what}: VIPs on {new.name} after {moved:.2f} s; client: {len(seen.failed)} failed requests of "
          f"{len(seen.requests)}, service back after {seen.recovered_after:.2f} s")
    # Every VIP of every group, not just the first: the client's entries for the front VIPs and
    # every backend's for the gateway now name the new master's MAC.
    lab.wait_until(lambda: pair.arp_view() == pair.expected_arp(new), 20,
                   what=f"every VIP's ARP entry to name {new.name} (now {pair.arp_view()})")
    if restore is not None:
        restore()
    return new


def verdict(node: Node) -> str:
    """The node-health check's last verdict (fulcrum.ha.node_health), "" before its first."""
    try:
        return (node.state_dir / "node-health.verdict").read_text().strip()
    except FileNotFoundError:
        return ""


def group_states(node: Node) -> set[str]:
    return {group["state"] for group in node.api.get("/ha/status")["node"]["groups"]}


def stays_backup(pair: HaPair, node: Node) -> None:
    """The returning node rejoins as BACKUP (nopreempt): it reports BACKUP and takes no VIP."""
    lab.wait_until(lambda: group_states(node) == {"BACKUP"}, 120, what=f"{node.name} to report BACKUP")
    assert node.vips() == set(), f"{node.name} took VIPs back: {pair.holders()}"


def test_the_pair_comes_up_with_one_node_holding_every_vip(pair):
    master = pair.wait_single_master(180)
    standby = pair.other(master)
    lab.wait_until(lambda: group_states(master) == {"MASTER"} and group_states(standby) == {"BACKUP"}, 60,
                   what="/ha/status to report MASTER and BACKUP")
    for node in pair.nodes:
        conf = (node.state_dir / "keepalived.conf").read_text()
        # The engine wired the settings in: node health against this node's API, the maintenance
        # file the API writes, the sync daemon on the sync link, the gateway VIP on eth1.
        assert f"--url http://127.0.0.1:{ha.API_PORT}/api/v1/health" in conf and f"--peer {node.peer}" in conf
        assert f'file "{node.state_dir / "maintenance"}"' in conf
        assert "lvs_sync_daemon eth2 inst VG_front" in conf
        assert f"{ha.GATEWAY}/24 dev eth1" in conf
        # Both nodes run the same virtual services; only the master holds the VIPs.
        services = {(s.key.address, s.key.port) for s in ipvs.read_ipvs(node.host).services}
        assert services == {(vip, 80) for vip in FRONT_VIPS} | {(FRONT_VIPS[0], ECHO_PORT), (FRONT_VIPS[0], ONE_ARM_PORT)}
    requests = pair.probe.wait_for_requests(time.monotonic(), count=9)
    assert {r.target for r in requests} == {f"{vip}:80" for vip in FRONT_VIPS}
    lab.wait_until(lambda: pair.arp_view() == pair.expected_arp(master), 30, what="ARP entries naming the master")


def test_killing_the_active_keepalived_moves_every_vip(pair):
    old = pair.wait_single_master()
    new = takeover(pair, old, lambda: pair.kill_keepalived(old), what="keepalived SIGKILLed")
    # Killed, it could not remove its VIPs. Started again it removes them and rejoins as BACKUP.
    pair.start_keepalived(old)
    lab.wait_until(lambda: old.vips() == set(), 60, what=f"{old.name}'s restarted keepalived to drop stale VIPs")
    stays_backup(pair, old)
    assert pair.single_master() is new


@pytest.mark.parametrize("dev", ["eth0", "eth1"], ids=["front-vrrp-interface", "back-tracked-interface"])
def test_a_data_interface_going_down_moves_every_vip(pair, dev):
    old = pair.wait_single_master()
    takeover(pair, old, lambda: pair.link(old, dev, up=False), what=f"{dev} down")
    lab.wait_until(lambda: old.vips() == set(), 30, what=f"{old.name} in FAULT to drop its VIPs")
    pair.link(old, dev, up=True)
    stays_backup(pair, old)


def test_maintenance_hands_over_with_a_priority_zero_advert(pair):
    old = pair.wait_single_master()
    new = pair.other(old)
    sniffer = AdvertSniffer(new.host)
    try:
        takeover(pair, old, lambda: pair.maintenance(old, True), what="maintenance on")
    finally:
        adverts = sniffer.stop()
    assert old.api.get("/ha/status")["node"]["role"] == "maintenance"
    # Entering FAULT, each of the old master's instances told the peer it is leaving: priority 0.
    zero = {vrid for _, source, vrid, priority in adverts if source == old.front and priority == 0}
    assert zero == {vrid for vrid, _, _ in ha.VIP_GROUPS.values()}, adverts
    pair.maintenance(old, False)
    stays_backup(pair, old)


def _conn_entries(node: Node, client_port: int) -> list[str]:
    """Lines of the node's IPVS connection table for an open session from the client's port
    (synced ones included). Only ESTABLISHED entries count: an earlier, closed session that the
    client happened to open from the same port leaves a TIME_WAIT entry for two minutes."""
    table = netns.proc_net(node.host, "ip_vs_conn")
    return [line for line in table.splitlines()[1:]
            if (fields := line.split())[2] == f"{client_port:04X}" and fields[7] == "ESTABLISHED"]


def _assert_reset(sock: socket.socket) -> None:
    """The session did not survive the failover: the next exchange is reset or closed. Closes it."""
    with pytest.raises(OSError):
        if not client.exchange(sock, b"after the failover\n"):
            raise ConnectionResetError("closed by the peer")
    sock.close()


def _session(pair: HaPair, port: int) -> tuple[socket.socket, int]:
    sock = client.hold_tcp(pair.client, FRONT_VIPS[0], port, timeout=5)
    for n in range(5):  # IPVS syncs a connection from its 3rd packet on (sync_threshold 3 50)
        assert client.exchange(sock, f"before {n}\n".encode()) == f"before {n}\n".encode()
    return sock, sock.getsockname()[1]


def test_an_echo_session_survives_failover_with_connection_sync(pair):
    old = pair.wait_single_master()
    new = pair.other(old)
    sock, port = _session(pair, ECHO_PORT)
    lab.wait_until(lambda: _conn_entries(new, port), 30, what=f"the standby {new.name} to hold the synced connection")
    takeover(pair, old, lambda: pair.link(old, "eth0", up=False), what="eth0 down, echo session open")
    assert client.exchange(sock, b"after the failover\n") == b"after the failover\n"
    pair.link(old, "eth0", up=True)
    stays_backup(pair, old)
    assert client.exchange(sock, b"still there\n") == b"still there\n"
    sock.close()


def sync_daemons(node: Node) -> str:
    """The IPVS sync daemons running in the node's kernel, as ipvsadm lists them."""
    return node.host.cmd(["ipvsadm", "--list", "--daemon"]).stdout.strip()


def test_without_connection_sync_the_echo_session_breaks(pair):
    print("sync daemons with sync on:", {node.name: sync_daemons(node) for node in pair.nodes})
    for node in pair.nodes:
        pair.set_sync(node, False)
    pair.commit_both("connection sync off")
    try:
        lab.wait_until(lambda: not any(sync_daemons(node) for node in pair.nodes), 30,
                       what=f"no sync daemon left running (now {({n.name: sync_daemons(n) for n in pair.nodes})})")
        old = pair.wait_single_master()
        new = pair.other(old)
        sock, port = _session(pair, ECHO_PORT)
        assert _conn_entries(old, port), "the master has no entry for the session"
        # A master daemon flushes its buffer at least every 2 s: watch longer than that.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            client.exchange(sock, b"more\n")
            assert not _conn_entries(new, port), f"sync is off, yet {new.name} holds the connection"
            time.sleep(0.2)
        takeover(pair, old, lambda: pair.link(old, "eth0", up=False), what="eth0 down, sync off")
        # The new master has no entry: its stack answers the mid-stream segment with a reset.
        _assert_reset(sock)
        pair.link(old, "eth0", up=True)
        stays_backup(pair, old)
    finally:
        for node in pair.nodes:
            pair.set_sync(node, True)
        pair.commit_both("connection sync on")
    # Back on: the master runs the master daemon, the standby the backup daemon.
    master = pair.wait_single_master()
    lab.wait_until(lambda: sync_daemons(master).startswith("master") and sync_daemons(pair.other(master)).startswith("backup"),
                   60, what=f"the sync daemons to run again (now {({n.name: sync_daemons(n) for n in pair.nodes})})")


def test_a_one_arm_session_is_lost_on_failover_but_new_ones_work(pair):
    """The stated limitation (ha/README.md): a one-arm service's replies come back through the
    SNAT mapping in the master's conntrack table, which is not synchronised (no conntrackd). The
    IPVS entry is synced, yet the new master SNATs from its own address and the backend, which
    knows the connection from the old master's, resets it. New sessions work at once."""
    old = pair.wait_single_master()
    new = pair.other(old)
    sock, port = _session(pair, ONE_ARM_PORT)
    lab.wait_until(lambda: _conn_entries(new, port), 30, what=f"the standby {new.name} to hold the IPVS entry")
    takeover(pair, old, lambda: pair.link(old, "eth0", up=False), what="eth0 down, one-arm session open")
    _assert_reset(sock)
    assert client.tcp_echo(pair.client, FRONT_VIPS[0], ONE_ARM_PORT, b"new session\n") == b"new session\n"
    pair.link(old, "eth0", up=True)
    stays_backup(pair, old)


def test_stopping_the_active_api_moves_every_vip_but_not_when_both_are_down(pair):
    """The node-health check fails once the API is gone; the node steps down because the peer's
    API answers. With both APIs down nobody can do better, so the VIPs stay where they are."""
    old = pair.wait_single_master()
    new = takeover(pair, old, old.api.stop, what="API stopped")
    # What keepalived's script found, kept in its verdict file (keepalived drops what it prints).
    assert verdict(old).startswith(f"sick, stepping down: API {ha.NODE_HEALTH_ENV['FULCRUM_NODE_HEALTH_URL']}: ")
    new.api.stop()
    # The check runs every 30 s here (a Python start of seconds each): the round that finds both
    # APIs down says it stays, and the VIPs stay through that round and the next one.
    stays = "sick, but staying: the peer cannot take over"
    first_staying = None
    deadline = time.monotonic() + 3 * HEALTH_ROUND
    while time.monotonic() < deadline:
        assert pair.single_master() is new, f"with both APIs down the VIPs moved: {pair.holders()}"
        if first_staying is None and verdict(new).startswith(stays):
            first_staying = time.monotonic()
            deadline = first_staying + HEALTH_ROUND + 5
        time.sleep(0.5)
    assert first_staying is not None, f"{new.name}'s node-health check never found both APIs down: {verdict(new)!r}"
    assert verdict(new).startswith(stays), verdict(new)  # a later round did not change its mind
    assert pair.probe.wait_for_requests(time.monotonic(), count=6)
