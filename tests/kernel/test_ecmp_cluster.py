"""Scale-out behind a router's ECMP (lab.ecmp: a router with FRR, three balancer nodes, DR
backends): every node sends a flow to the same backend (mh, sloppy TCP, DR), so held connections
survive a node joining and a node being drained; a dead node's routes go by BFD and its
connections continue on the others; a backend removed takes only its own connections. The control is what Fulcrum refuses for an announced
VIP: wrr, where the node a re-hashed flow lands on picks a backend of its own."""

from __future__ import annotations

import pytest

import lab
from lab import ecmp, frr

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

HELD = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not frr.available():
        pytest.skip("needs FRR (zebra, bgpd, bfdd, vtysh: scripts/setup-host installs it)")
    with lab.scope("ecmp cluster"), ecmp.cluster(tmp_path_factory.mktemp("ecmp"), tolerant_bfd=True) as made:
        yield made


def test_held_connections_survive_a_node_joining_and_leaving_with_mh(cluster):
    figures = ecmp.join_and_leave(cluster, "mh", HELD)
    print(figures)
    # The router did re-hash: some of the held flows went to lb3, which never saw them begin.
    assert figures["moved to lb3"] >= HELD // 10, figures
    # Hash-threshold multipath moves flows between the old next hops too; they survive as well.
    assert figures["moved between lb1 and lb2"] > 0, figures
    assert figures["survived the join"] >= 0.99 * HELD, figures
    assert figures["survived the drain"] >= 0.99 * figures["drained"], figures
    assert all(figures["carried before the join"][name] > 0 for name in ("lb1", "lb2")), figures
    assert all(count > 0 for count in figures["new connections per node"].values()), figures


def test_the_control_with_wrr_loses_the_moved_connections(cluster):
    """The same run with wrr: a moved flow meets a backend of lb3's own choosing, which resets it."""
    figures = ecmp.join_and_leave(cluster, "wrr", HELD)
    print(figures)
    assert figures["moved to lb3"] >= HELD // 10, figures
    lost = HELD - figures["survived the join"]
    assert lost >= figures["moved to lb3"] // 3, figures
    # Only a flow that changed node can meet another backend: the ones that stayed all survive.
    assert lost <= figures["changed node"], figures


def test_a_dead_nodes_routes_go_by_bfd_and_its_connections_continue(cluster):
    """lb3's link goes down: BFD, not BGP's hold timer, ends its session and takes its next hop out
    (the time is printed here and measured with its spread by `make bench`, part 8)."""
    figures = ecmp.kill_node(cluster, 120)
    print(figures)
    # Ended by BFD's detection (the router's Cease says so, RFC 9384), not by BGP's own hold timer,
    # which ends a session to a silent peer without BFD ("Hold Timer Expired").
    assert figures["router's BFD session with lb3"] == "down", figures
    assert "Cease/BFD Down" in figures["session ended by"], figures
    assert figures["carried by lb3"] > 0, figures
    assert figures["survived"] >= 0.99 * figures["held"], figures


def test_a_removed_backend_takes_only_its_own_connections(cluster):
    """b3 leaves every node's configuration while connections are held over all three nodes: the
    connections to b1 and b2 go on; b3's end at their next packet (expire_nodest_conn, as the
    appliance sets it); new connections go to b1 and b2 only."""
    figures = ecmp.remove_backend(cluster, 150)
    print(figures)
    assert figures["on the removed backend"] > 0 and figures["on the others"] > 0, figures
    assert figures["survived on the others"] == figures["on the others"], figures
    assert figures["survived on the removed backend"] == 0, figures
    assert figures["new connections to the removed backend"] == 0, figures


def test_a_node_whose_keepalived_dies_withdraws_between_applies_and_its_connections_continue(cluster):
    """No apply follows keepalived's exit: the announcement watch (applyd's, here on lb2) sees the
    node unfit and withdraws its VIP with the session kept; the flows it carried re-hash to lb1 and
    lb3, which send them to the same backends. Every connection sends just after keepalived's exit:
    what reaches lb2 before the withdrawal is dropped by its announced_unbalanced chain and comes
    again, to another node. keepalived back, the watch announces again."""
    figures = ecmp.keepalived_dies(cluster, 150)
    print(figures)
    assert figures["carried by the node"] > 0, figures
    assert figures["its session stayed up"], figures
    assert figures["survived"] >= 0.99 * figures["held"], figures


def test_the_control_without_the_drop_loses_what_the_node_carried(cluster):
    """The same run with lb2's announced_unbalanced chain flushed: its own stack answers each flow
    it carried with a reset while its withdrawal travels; the flows of the other nodes go on."""
    figures = ecmp.keepalived_dies(cluster, 150, drop_unbalanced=False)
    print(figures)
    lost = figures["held"] - figures["survived"]
    assert figures["lost that the node had carried"] == lost, figures
    assert lost >= 0.9 * figures["carried by the node"] > 0, figures
