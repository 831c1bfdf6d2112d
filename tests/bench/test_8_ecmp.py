"""Part 8: scale-out behind a router's ECMP, what a node joining, a node drained and a node dying
do to held connections (lab.ecmp: a router with FRR and L4 multipath hashing, three balancer nodes
with FRR and keepalived from Fulcrum's renderers, DR backends).

Each round: HELD connections through lb1 and lb2, then lb3 joins and is drained, once with mh
(what Fulcrum requires for an announced VIP) and once with wrr (the control: what it refuses);
then lb3 carries a share of new connections and its link goes down; then, over all three nodes,
a backend is removed from every node's configuration; then lb2's keepalived stops and the
announcement watch withdraws lb2. Rounds repeat, so each figure
has a spread. The published anchors: GitHub's GLB design notes (going from 2 to 3 nodes without
consistent hashing moves a third of the connections) and MetalLB's BGP mode documentation (a
node's change may break "all active connections" through it).
"""

from __future__ import annotations

import lab
import pytest
from lab import ecmp, frr

from bench import benchlab, results
from bench.results import spread

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("ecmp"), pytest.mark.timeout(3600)]

ROUNDS = 3
HELD = 300
KILLED_HELD = 120
REMOVAL_HELD = 150
SICK_HELD = 150
ANCHORS = {
    "GLB": "GitHub Load Balancer design notes: without consistent hashing, going from 2 to 3 nodes moves "
           "1/3 of all connections to a node that does not know them",
    "MetalLB": "MetalLB, BGP mode limitations: when a node goes, \"all active connections\" through the "
               "changed paths may break",
}


def test_connections_through_a_changing_cluster(request, bench_out, tmp_path_factory):
    if not frr.available():
        pytest.skip("needs FRR (scripts/setup-host installs it)")
    scale = request.config.getoption("--bench-scale")
    if results.load(bench_out, "conditions") is None:  # this part alone (--bench-only ecmp)
        results.save(bench_out, "conditions", {**benchlab.conditions(), "scale": scale})
    data: dict = {"rounds": ROUNDS, "held": HELD, "killed_held": KILLED_HELD, "removal_held": REMOVAL_HELD,
                  "sick_held": SICK_HELD,
                  "new_connections": ecmp.NEW_CONNECTIONS, "anchors": ANCHORS, "runs": []}
    with lab.scope("bench ecmp"), ecmp.cluster(tmp_path_factory.mktemp("ecmp")) as cluster:
        for round_number in range(ROUNDS):
            for scheduler in ("mh", "wrr"):
                run = ecmp.join_and_leave(cluster, scheduler, HELD)
                data["runs"].append({"round": round_number, "kind": "join", **run})
                results.save(bench_out, "ecmp", data)
            run = ecmp.kill_node(cluster, KILLED_HELD)
            data["runs"].append({"round": round_number, "kind": "kill", **run})
            results.save(bench_out, "ecmp", data)
            run = ecmp.remove_backend(cluster, REMOVAL_HELD)
            data["runs"].append({"round": round_number, "kind": "remove", **run})
            results.save(bench_out, "ecmp", data)
            for drop in (True, False):  # the announced_unbalanced chain, and the control without it
                run = ecmp.keepalived_dies(cluster, SICK_HELD, drop_unbalanced=drop)
                data["runs"].append({"round": round_number, "kind": "sick" if drop else "sick without the drop", **run})
                results.save(bench_out, "ecmp", data)
    data["summary"] = summarise(data["runs"])
    results.save(bench_out, "ecmp", data)


def summarise(runs: list[dict]) -> dict:
    summary: dict = {}
    for scheduler in ("mh", "wrr"):
        mine = [r for r in runs if r["kind"] == "join" and r["scheduler"] == scheduler]
        summary[scheduler] = {
            "moved share": spread([r["moved to lb3"] / r["held"] for r in mine]),
            "changed-node share": spread([r["changed node"] / r["held"] for r in mine if "changed node" in r]),
            "survived the join": spread([r["survived the join"] / r["held"] for r in mine]),
            "survived the drain": spread([r["survived the drain"] / r["drained"] for r in mine if r["drained"]]),
            "lb3's share of new connections": spread([r["new connections per node"]["lb3"] / ecmp.NEW_CONNECTIONS for r in mine]),
        }
    killed = [r for r in runs if r["kind"] == "kill"]
    summary["kill"] = {
        "withdrawal seconds": spread([r["seconds from lb3's link down to the router's route change"] for r in killed]),
        "carried share": spread([r["carried by lb3"] / r["held"] for r in killed]),
        "survived": spread([r["survived"] / r["held"] for r in killed]),
    }
    removals = [r for r in runs if r["kind"] == "remove"]
    summary["remove"] = {
        "share on the removed backend": spread([r["on the removed backend"] / r["held"] for r in removals]),
        "survived on the others": spread([r["survived on the others"] / r["on the others"] for r in removals]),
        "survived on the removed backend": spread([r["survived on the removed backend"] for r in removals]),
        "new connections to the removed backend": spread([r["new connections to the removed backend"] for r in removals]),
    }
    for kind in ("sick", "sick without the drop"):
        sick = [r for r in runs if r["kind"] == kind]
        summary[kind] = {
            "withdrawal seconds": spread([r["seconds from keepalived's exit to the router's route change"] for r in sick]),
            "announce seconds": spread([r["seconds from keepalived's start to the node's next hop back"] for r in sick]),
            "carried share": spread([r["carried by the node"] / r["held"] for r in sick]),
            "survived": spread([r["survived"] / r["held"] for r in sick]),
            "survived of the node's": spread([1 - r["lost that the node had carried"] / r["carried by the node"]
                                              for r in sick if r.get("carried by the node")]),
        }
    return summary
