"""A cluster's configuration through its writer, in the kernel VM (tests/lab/api_cluster.py): the
writer adds two members with their pairing codes, its revision reaches every node's IPVS with the
same real servers in the same order, a later change on the writer reaches both members, and a
member refuses edits. The traffic through a router's ECMP is tests/kernel/test_ecmp_cluster.py's."""

from __future__ import annotations

import time

import pytest

import lab
from lab.api_cluster import BACKENDS, ApiCluster, echo_service

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(2400)]

# From the writer's commit to the last member's IPVS: the watcher pushes at once, each member
# commits, renders, validates, applies and reads back, and keepalived enables a real server after
# its first passing check. Printed by the test.
REPLICATION_DEADLINE = 180


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with lab.scope("api cluster"):
        yield ApiCluster.build(tmp_path_factory.mktemp("apicluster"))


def test_the_writers_revisions_reach_every_members_ipvs_in_the_same_order(cluster: ApiCluster) -> None:
    writer, lb2, lb3 = cluster.nodes.values()
    writer.api.post("/services", echo_service(), expect=201)
    writer.api.commit("echo")
    started = time.monotonic()
    for member in (lb2, lb3):
        joined = cluster.add_member(member)
        assert joined["sync"]["result"] == "forced" and joined["member"] == member.name, joined
    tables = cluster.wait_for_tables(tuple(BACKENDS), REPLICATION_DEADLINE)
    print(f"both members joined; every IPVS table matched {time.monotonic() - started:.1f} s after the first "
          f"join request: {tables}")

    # One backend out, on the writer only: both members follow, in the same order.
    service = writer.api.get("/services")["data"][0]
    b2 = next(b for b in service["backends"] if b["address"] == "10.77.1.22")
    writer.api.delete(f"/services/{service['id']}/backends/{b2['id']}", expect=204)
    started = time.monotonic()
    writer.api.commit("b2 out")
    tables = cluster.wait_for_tables(("b1", "b3"), REPLICATION_DEADLINE)
    print(f"b2 out: every member's IPVS matched {time.monotonic() - started:.1f} s after the writer's commit")

    picture = writer.api.get("/cluster")
    assert [(n["name"], n["sync"]) for n in picture["nodes"]] == [("lb1", None), ("lb2", "in_sync"), ("lb3", "in_sync")]
    refused = lb3.api.post("/services", {**echo_service(), "name": "other", "address": "192.0.2.11"}, expect=409)
    assert refused["code"] == "cluster_member_read_only", refused
