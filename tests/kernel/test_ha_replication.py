"""Configuration replication between the two appliances of tests/lab/pair.py, through their APIs:
pairing pushes the active node's configuration, a change on the active node reaches the
standby's IPVS table, the standby refuses edits, a peer that was off catches up, and a partition
with edits on both sides is raised as a conflict, never overwritten.

The shared configuration is created on lb1 only; lb2 gets its node settings (node-local) and
everything else by replication. Peer traffic runs over the sync link (http://10.77.2.x:8080).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

import lab
from lab import ipvs, pair as ha
from lab.pair import ALL_VIPS, HaPair, Node

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(3000)]

# How long a committed change may take to reach the standby's IPVS table: the watcher pushes at
# once after a commit (and every 2 s), the standby commits, renders, validates and applies like
# any commit, and keepalived adds a real server after its first passing check. Measured here
# (emulated VM, busy host) well under this; printed by the test.
REPLICATION_DEADLINE = 120


@pytest.fixture(scope="module")
def pair(tmp_path_factory, request):
    with lab.scope("ha replication pair"):
        p = HaPair.build(tmp_path_factory.mktemp("hasync"))
        try:
            p.setup_admin()
            lb1, lb2 = p.nodes
            p.configure(lb1, advert_interval=1, sync=True)
            lb1.api.commit("lb1's configuration")
            lb2.api.put("/node", p.node_settings(lb2))
            p.start_probe()
            yield p
        finally:
            ha.keep_logs(p, request)


def table(node: Node) -> list[tuple]:
    """The node's IPVS services and real servers, without counters."""
    return sorted(
        (s.key.protocol, s.key.address, s.key.port, s.scheduler,
         tuple(sorted((r.key, r.forwarding, r.weight) for r in s.real_servers)))
        for s in ipvs.read_ipvs(node.host).services
    )


def tables_match(pair: HaPair) -> bool:
    lb1, lb2 = pair.nodes
    return table(lb1) == table(lb2)


def sync_state(node: Node) -> str:
    return node.api.get("/ha/status")["sync"]["state"]


def test_pairing_pushes_the_active_configuration_to_the_standby(pair):
    lb1, lb2 = pair.nodes
    pair.wait_single_master(180, node=lb1)
    table(lb1)  # the first IPVS read imports Fulcrum's models: seconds here, outside any deadline
    started = time.monotonic()
    result = pair.pair(lb1, lb2)
    assert result["peer_name"] == "lb2", result
    lab.wait_until(lambda: sync_state(lb1) == "in_sync" and sync_state(lb2) == "in_sync", REPLICATION_DEADLINE,
                   what="both nodes in sync")
    replicated = lb2.api.revisions()[0]
    # Pairing is the one forced push: the node that pairs wins (the API's pairing contract).
    assert replicated["message"] == "forced by lb1 revision 1", replicated
    lab.wait_until(lambda: tables_match(pair), REPLICATION_DEADLINE, what="lb2's IPVS table to match lb1's")
    print(f"paired; lb2's IPVS matched lb1's {time.monotonic() - started:.1f} s after the pairing request")
    # lb2 now runs the same VRRP groups as BACKUP: lb1 keeps every VIP (nopreempt, and it is MASTER).
    lab.wait_until(lambda: {g["state"] for g in lb2.api.get("/ha/status")["node"]["groups"]} == {"BACKUP"}, 120,
                   what="lb2's groups BACKUP")
    assert pair.single_master() is lb1
    assert lb2.api.get("/node")["priority"] == 100  # node settings stay node-local


def test_a_change_on_the_active_reaches_the_standby_ipvs_table(pair):
    lb1, lb2 = pair.nodes
    web = next(s for s in lb1.api.services() if s["name"] == "web0")
    backend = web["backends"][0]
    lb1.api.update_backend(web["id"], backend["id"], weight=5)
    lb1.api.commit("weight 5")
    committed = time.monotonic()
    lab.wait_until(lambda: tables_match(pair) and any(
        r[2] == 5 for s in table(lb2) if s[2] == 80 and s[1] == ha.FRONT_VIPS[0] for r in s[4]),
        REPLICATION_DEADLINE, what="the new weight in lb2's IPVS table")
    print(f"the change reached lb2's IPVS table {time.monotonic() - committed:.1f} s after the commit answered")
    lb1.api.update_backend(web["id"], backend["id"], weight=1)
    lb1.api.commit("weight 1")
    lab.wait_until(lambda: tables_match(pair), REPLICATION_DEADLINE, what="the tables to match again")


def test_the_standby_refuses_edits_and_names_the_active_node(pair):
    lb1, lb2 = pair.nodes
    refused = lb2.api.post("/services", {"name": "x", "address": ha.FRONT_VIPS[1], "ports": [8080]}, expect=409)
    assert refused["code"] == "standby_read_only"
    assert "lb1" in refused["detail"] and refused["active_url"] == f"http://{lb1.sync_address}:{ha.API_PORT}"


def status(node: Node) -> dict:
    return node.api.get("/ha/status")


# The data plane is read at every status request; the watcher records a state keepalived never
# reported after 3 s and polls every 2 s. "A few seconds", with slack for the emulated VM.
READBACK_DEADLINE = 15
# Recording it waits for a watcher round past those 3 s; a round also polls the peer and may push
# to it, each seconds long in the emulated VM beside other suites (ci36: nothing within 15 s).
RECORD_DEADLINE = 45


def test_roles_come_from_the_data_plane_when_notifications_are_lost(pair):
    """lb2's notify FIFO is taken away (keepalived keeps writing into the old one, which nobody
    reads); maintenance on lb1 moves the VIPs to lb2, and both nodes still name lb2 active within
    seconds, lb1 in maintenance: read from the addresses each node holds."""
    lb1, lb2 = pair.nodes
    pair.wait_single_master(120, node=lb1)
    fifo = lb2.api.data_dir / "vrrp.fifo"
    fifo.unlink()
    fifo.write_text("not a FIFO: lb2's VRRP notifications are lost on purpose\n")

    def restore_fifo() -> None:  # the API's reader creates it anew; keepalived opens it on a reload
        fifo.unlink(missing_ok=True)
        lab.wait_until(fifo.exists, 30, what="lb2's notify FIFO to be created again")
        os.kill(lb2.api.keepalived_pid(), signal.SIGHUP)

    lab.defer(restore_fifo)
    told = {e["id"] for e in lb2.api.events(kind="vrrp_state")}
    handed_back = False

    def hand_back_to_lb1() -> None:  # lb1 out of maintenance takes the VIPs again (the next tests start there)
        nonlocal handed_back
        if handed_back:
            return
        handed_back = True
        pair.maintenance(lb1, False)
        lab.wait_until(lambda: status(lb1)["node"]["role"] == "standby", 120, what="lb1 back as standby")
        lb1.api.post("/ha/make-active")
        pair.wait_single_master(120, node=lb1)

    pair.maintenance(lb1, True)
    lab.defer(hand_back_to_lb1)
    lab.wait_until(lambda: lb2.vips() == set(ALL_VIPS), 120, what="lb2 to hold every VIP")
    held = time.monotonic()
    lab.wait_until(lambda: status(lb2)["node"]["role"] == "active", READBACK_DEADLINE, what="lb2 to report itself active")
    print(f"lb2 reported itself active {time.monotonic() - held:.1f} s after it held every VIP (no notification read)")
    here = status(lb2)
    assert {(g["state"], bool(g["vips_held"])) for g in here["node"]["groups"]} == {("MASTER", True)}, here["node"]
    assert here["active"] == {"name": "lb2", "local": True, "url": None, "split_brain": False}
    assert here["node"]["writer"] is True  # the active node writes
    lab.wait_until(lambda: (s := status(lb1))["node"]["role"] == "maintenance" and s["active"]["name"] == "lb2",
                   READBACK_DEADLINE, what="lb1 to report maintenance and name lb2 active")
    # keepalived's own word never arrived: what the data plane showed was recorded instead, one
    # event per group as each group's disagreement lasts long enough (not all in the same poll).
    def recorded_masters() -> list[str]:
        return sorted(e["detail"]["name"] for e in lb2.api.events(kind="vrrp_state") if e["id"] not in told
                      and e["detail"].get("source") == "dataplane" and e["detail"]["state"] == "MASTER")

    reported = time.monotonic()
    lab.wait_until(recorded_masters, RECORD_DEADLINE, expect=["VG_front", "VG_front2", "VG_gateway"],
                   what="the data plane's MASTER recorded on lb2 for every group, once")
    print(f"recorded {time.monotonic() - reported:.1f} s after both nodes reported the roles")
    assert not [e for e in lb2.api.events(kind="vrrp_state") if e["id"] not in told and "source" not in e["detail"]]
    hand_back_to_lb1()
    lab.wait_until(lambda: status(lb2)["node"]["role"] == "standby" and status(lb1)["active"]["name"] == "lb1",
                   READBACK_DEADLINE, what="lb2 standby, lb1 active again")


def test_split_brain_with_the_peer_link_up_is_raised_and_healed(pair):
    """Only VRRP is dropped (on lb2): both nodes become MASTER while the peer link still works;
    both raise ha.split_brain within seconds, lb2 (lower priority) steps down, and once VRRP
    passes again every VIP of every group resolves to the single master, lb1."""
    lb1, lb2 = pair.nodes
    pair.wait_single_master(120, node=lb1)
    seen = {node.name: {e["id"] for e in node.api.events(kind="ha.split_brain")} for node in pair.nodes}
    lb2.host.cmd(["nft", "-f", "-"], input=(
        "table inet lab_no_vrrp {\n"
        "  chain input { type filter hook input priority -300; ip protocol vrrp drop; }\n"
        "}\n"))
    healed = False

    def heal() -> None:
        nonlocal healed
        if not healed:
            lb2.host.cmd(["nft", "delete", "table", "inet", "lab_no_vrrp"])
            healed = True

    lab.defer(heal)
    lab.wait_until(lambda: all(vips == set(ALL_VIPS) for vips in pair.holders().values()), 120,
                   what="both nodes to hold every VIP", interval=0.05)
    both = time.monotonic()
    raised = lab.wait_until(lambda: all(
        [e for e in node.api.events(kind="ha.split_brain") if e["id"] not in seen[node.name]] for node in pair.nodes),
        30, what="ha.split_brain on both nodes", interval=0.5)
    print(f"ha.split_brain raised on both nodes {time.monotonic() - both:.1f} s after both held every VIP")
    assert raised
    for node in pair.nodes:
        assert status(node)["peer"]["reachable"] is True  # the peer link stayed up
    heal()
    pair.wait_single_master(120, node=lb1)
    lab.wait_until(lambda: pair.arp_view() == pair.expected_arp(lb1), 60,
                   what=f"every VIP's ARP entry to name lb1 (now {pair.arp_view()})")
    # lb2 stepped down to end it; its hold ends once lb1 is MASTER of every group.
    lab.wait_until(lambda: (s := status(lb2))["node"]["role"] == "standby" and not s["split_brain"]["holding"], 180,
                   what="lb2 back as standby after its split-brain hold")


def test_a_peer_that_was_off_catches_up(pair):
    lb1, lb2 = pair.nodes
    # Power lb2 off: its API and keepalived stop (lb1 keeps the VIPs: it is MASTER).
    lb2.api.stop()
    pair.kill_keepalived(lb2)
    lab.wait_until(lambda: lb1.api.get("/ha/status")["peer"]["reachable"] is False, 60, what="lb1 to see lb2 gone")
    lb1.api.create_service(name="late", address=ha.FRONT_VIPS[1], ports=[8080], scheduler="rr", health_check=ha.CHECK,
                           backends=[{"address": b.address, "port": 80} for b in pair.backends])
    lb1.api.commit("while lb2 was off")
    assert sync_state(lb1) in ("unreachable", "peer_behind")
    # Power on: the API re-applies its newest revision (starting keepalived), the watcher catches up.
    lb2.api.start(ha.API_START_TIMEOUT)
    started = time.monotonic()
    lab.wait_until(lambda: sync_state(lb1) == "in_sync", REPLICATION_DEADLINE, what="lb1 to see lb2 in sync")
    lab.wait_until(lambda: tables_match(pair), REPLICATION_DEADLINE, what="lb2's IPVS table to match lb1's")
    assert any(s[2] == 8080 for s in table(lb2))
    print(f"lb2 caught up {time.monotonic() - started:.1f} s after its API answered")
    assert pair.single_master() is lb1


def _partition(node: Node, peer: Node, on: bool) -> None:
    """Drop everything between the two nodes (VRRP on the front, peer API on the sync link)."""
    if on:
        peers = f"{{ {peer.front}, {peer.sync_address} }}"
        node.host.cmd(["nft", "-f", "-"], input=(
            "table inet lab_partition {\n"
            f"  chain input {{ type filter hook input priority -300; ip saddr {peers} drop; }}\n"
            f"  chain output {{ type filter hook output priority -300; ip daddr {peers} drop; }}\n"
            "}\n"))
    else:
        node.host.cmd(["nft", "delete", "table", "inet", "lab_partition"])


def test_a_partition_with_edits_on_both_sides_raises_the_conflict(pair):
    lb1, lb2 = pair.nodes
    _partition(lb2, lb1, True)
    try:
        # Split brain: lb2 no longer hears lb1's adverts and takes the VIPs too; both are writers.
        lab.wait_until(lambda: lb2.vips() == set(ALL_VIPS), 120, what="lb2 to become MASTER in the partition")
        lb1.api.update_service(next(s["id"] for s in lb1.api.services() if s["name"] == "late"), scheduler="wrr")
        lb1.api.commit("lb1's edit in the partition")
        lb2.api.update_service(next(s["id"] for s in lb2.api.services() if s["name"] == "late"), scheduler="lc")
        lb2.api.commit("lb2's edit in the partition")
    finally:
        _partition(lb2, lb1, False)
    lab.wait_until(lambda: sync_state(lb1) == "conflict" and sync_state(lb2) == "conflict", REPLICATION_DEADLINE,
                   what="both nodes to report the conflict")
    assert lb1.api.events(kind="ha.conflict") and lb2.api.events(kind="ha.conflict")
    # Nothing was overwritten: each node still runs its own edit.
    schedulers = {node.name: next(s[3] for s in table(node) if s[2] == 8080) for node in pair.nodes}
    assert schedulers == {"lb1": "wrr", "lb2": "lc"}
    # The operator picks lb1's side; both end in sync on it.
    lab.wait_until(lambda: pair.single_master() is not None, 120, what="the split brain to end")
    lb1.api.post("/ha/resolve", {"winner": "local"})
    lab.wait_until(lambda: sync_state(lb1) == "in_sync" and sync_state(lb2) == "in_sync", REPLICATION_DEADLINE,
                   what="in sync after the resolution")
    lab.wait_until(lambda: tables_match(pair), REPLICATION_DEADLINE, what="lb2 to run lb1's configuration")
    assert next(s[3] for s in table(lb2) if s[2] == 8080) == "wrr"
