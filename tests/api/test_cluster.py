"""A cluster of three real API processes: the writer adds two members with their pairing codes,
every commit reaches both, members refuse edits and may only read the writer, the Cluster page's
picture on the writer and on a member, and a member drained, removed, unreachable or leaving by
itself. On this host applies end "validated" (no IPVS); revisions and shared hashes are compared.
The same nodes behind BGP ECMP, with IPVS, are the kernel lab's (tests/kernel/test_ecmp_cluster.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apitest import WEB
from fulcrum.ha.peer_client import PeerAuthFailed, PeerClient
from hanode import WAIT_DEADLINE, Node, add_member, in_sync, started_nodes
from lab.wait import wait_until


def picture(node: Node) -> dict[str, Any]:
    return node.get("/cluster")


def by_name(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in status["nodes"]}


def all_in_sync(status: dict[str, Any]) -> bool:
    return all(n["writer"] or n["sync"] == "in_sync" for n in status["nodes"]) and len(status["nodes"]) > 1


def drained(node: Node) -> bool:
    """In maintenance, as the node itself says (keepalived's track file, which FRR's fitness reads)."""
    maintenance: bool = node.ha_status()["node"]["maintenance"]
    return maintenance


def member_key(member: Node) -> bytes:
    """The key the member signs with (its pairing with the writer), read from its database."""
    rows = member.sql("SELECT key FROM ha_pairing")
    assert len(rows) == 1
    return bytes.fromhex(rows[0][0])


def test_a_writer_adds_members_whose_every_commit_reaches_them_and_who_only_read(tmp_path: Path) -> None:
    with started_nodes(tmp_path, "lb1", "lb2", "lb3") as (writer, lb2, lb3):
        assert picture(writer) == {"role": "none", "writer": None, "writer_url": None, "nodes": [], "message": ""}
        writer.post("/services", WEB, expect=201)
        first = writer.commit("web")

        joined = add_member(writer, lb2)
        assert joined["member"] == "lb2" and joined["url"] == lb2.url
        assert joined["sync"]["result"] == "forced", joined  # the writer's configuration wins at joining
        add_member(writer, lb3)
        for member in (lb2, lb3):
            member.login("admin")  # the writer's accounts replaced the member's
            assert in_sync(writer, member)
            head = member.head()
            assert head is not None and head["author"] == "peer:lb1"
            assert f"lb1 revision {first['number']}" in head["message"]

        # A commit on the writer reaches both members (pushed side by side by its watcher).
        writer.post("/services", {**WEB, "name": "mail", "address": "192.0.2.11"}, expect=201)
        writer.commit("mail")
        wait_until(lambda: in_sync(writer, lb2) and in_sync(writer, lb3), WAIT_DEADLINE, what="both members")
        assert [s["name"] for s in lb3.get("/services")["data"]] == ["mail", "web"]

        # The writer's picture: three nodes, the members in sync, revisions as each numbers them.
        status = wait_until(lambda: s if all_in_sync(s := picture(writer)) else None, WAIT_DEADLINE,
                            what="the writer to see both members in sync")  # fmt: skip
        assert status["role"] == "writer" and status["writer"] == "lb1"
        nodes = by_name(status)
        assert set(nodes) == {"lb1", "lb2", "lb3"}
        assert nodes["lb1"]["writer"] and nodes["lb1"]["local"] and not nodes["lb2"]["writer"]
        assert nodes["lb2"]["url"] == lb2.url and nodes["lb2"]["reachable"] is True
        assert nodes["lb2"]["shared_hash"] == nodes["lb1"]["shared_hash"] == writer.head()["shared_hash"]  # type: ignore[index]
        assert nodes["lb3"]["revision"] == lb3.head()["number"]  # type: ignore[index]
        assert nodes["lb2"]["maintenance"] is False

        # A member shows the same picture, read from the writer, itself marked local.
        seen = picture(lb2)
        assert seen["role"] == "member" and seen["writer"] == "lb1" and seen["writer_url"] == writer.url
        mine = by_name(seen)
        assert set(mine) == {"lb1", "lb2", "lb3"} and mine["lb2"]["local"] and not mine["lb1"]["local"]
        assert mine["lb1"]["url"] == writer.url

        # Every node's BGP, asked now: each as its own apply helper reads FRR (here, where FRR is not
        # one of the engine's daemons, that it is not managed), a member's through the writer.
        own = {node.name: node.get("/bgp/status") for node in (writer, lb2, lb3)}
        for asker in (writer, lb3):
            bgp = asker.get("/cluster/bgp")
            assert bgp["message"] == "", bgp
            assert [(n["name"], n["local"], n["error"]) for n in bgp["nodes"]] == [
                (name, name == asker.name, "") for name in ("lb1", "lb2", "lb3")], bgp  # fmt: skip
            assert {n["name"]: n["bgp"] for n in bgp["nodes"]} == own, bgp

        # Members refuse shared edits and name the writer; node-local settings stay theirs.
        refused = lb2.post("/services", {**WEB, "name": "dns", "address": "192.0.2.12"}, expect=409)
        assert refused["code"] == "cluster_member_read_only" and writer.url in refused["detail"], refused
        assert lb2.post("/cluster/members", {"peer_url": lb3.url, "code": "AAAA-BBBB-CCCC"}, expect=409)[
            "code"] == "cluster_member_read_only"  # fmt: skip
        assert lb2.get("/node")["name"] == "lb2" and lb2.ha_status()["node"]["writer"] is False
        # ... but not its name, by which the writer finds its key (its requests would be refused).
        for call in (lambda: lb2.patch("/node", {"name": "lb9"}, expect=422),
                     lambda: lb2.put("/node", {"name": "lb9"}, expect=422)):  # fmt: skip
            error = call()
            assert error["detail"][0]["loc"] == ["body", "name"] and "leave the cluster" in error["detail"][0]["msg"]
        lb2.patch("/node", {"priority": 50}, expect=200)  # its other settings stay its own
        assert lb2.get("/node")["name"] == "lb2"
        # Every node of a cluster balances: none is a standby, nor "unknown" for want of VRRP.
        assert lb2.ha_status()["node"]["role"] == writer.ha_status()["node"]["role"] == "active"

        # A member may read the writer's status and picture, nothing else; its key is its own.
        key = member_key(lb2)
        as_lb2 = PeerClient(writer.url, "lb2", key, None)
        assert as_lb2.get("/status").data["name"] == "lb1"
        assert as_lb2.get("/cluster").ok and as_lb2.get("/cluster/bgp", timeout=30).ok
        for method, path in (("POST", "/config"), ("POST", "/maintenance"), ("GET", "/config"), ("GET", "/bgp")):
            answer = as_lb2.request(method, path, {"enabled": True} if method == "POST" else None, 3.0)
            assert answer.status == 403 and "only read" in answer.detail, (method, path, answer)
        with pytest.raises(PeerAuthFailed, match="signature does not match"):
            PeerClient(writer.url, "lb3", key, None).get("/status")  # lb2's key, lb3's name
        with pytest.raises(PeerAuthFailed, match="not paired"):
            PeerClient(writer.url, "nobody", key, None).get("/status")

        # The writer leads a cluster: it can neither pair nor join another one.
        assert "leads a cluster" in writer.post("/ha/pairing-code", expect=409)["detail"]
        assert "leads a cluster" in writer.post("/ha/pair", {"peer_url": lb3.url, "code": "AAAA-BBBB-CCCC"},
                                                expect=409)["detail"]  # fmt: skip


def test_members_are_drained_removed_or_leave_and_an_unreachable_one_is_kept_unless_forced(
    tmp_path: Path,
) -> None:
    with started_nodes(tmp_path, "lb1", "lb2", "lb3") as (writer, lb2, lb3):
        writer.post("/services", WEB, expect=201)
        writer.commit("web")
        add_member(writer, lb2)
        add_member(writer, lb3)
        lb2.login("admin")
        lb3.login("admin")

        # Drain: the member withdraws (maintenance), and says so in the writer's picture.
        writer.post("/cluster/members/lb2/drain", {"enabled": True}, expect=200)
        assert drained(lb2)
        wait_until(lambda: by_name(picture(writer))["lb2"]["maintenance"] is True, WAIT_DEADLINE,
                   what="the writer to see lb2 drained")  # fmt: skip
        writer.post("/cluster/members/lb2/drain", {"enabled": False}, expect=200)
        assert not drained(lb2)

        # Remove: drained and forgotten on both sides; it takes no more configuration, writes its own.
        removed = writer.delete("/cluster/members/lb2", expect=200)
        assert removed["member"] == "lb2" and "left the cluster" in removed["told"], removed
        assert drained(lb2)  # a removed node announces nothing
        assert lb2.ha_status()["peer"] is None and picture(lb2)["role"] == "none"
        assert set(by_name(picture(writer))) == {"lb1", "lb3"}
        writer.post("/services", {**WEB, "name": "mail", "address": "192.0.2.11"}, expect=201)
        writer.commit("mail")
        wait_until(lambda: in_sync(writer, lb3), WAIT_DEADLINE, what="lb3 to take the commit")
        assert not in_sync(writer, lb2)
        lb2.post("/services", {**WEB, "name": "dns", "address": "192.0.2.12"}, expect=201)

        # An unreachable member is kept unless the removal is forced (it would go on announcing).
        lb3.stop()
        wait_until(lambda: by_name(picture(writer))["lb3"]["reachable"] is False, WAIT_DEADLINE,
                   what="the writer to see lb3 unreachable")  # fmt: skip
        assert by_name(picture(writer))["lb3"]["sync"] == "unreachable"
        bgp = {n["name"]: n for n in writer.get("/cluster/bgp")["nodes"]}
        assert bgp["lb3"]["bgp"] is None and bgp["lb3"]["error"].startswith("could not be asked"), bgp
        assert bgp["lb1"]["bgp"] is not None and bgp["lb1"]["error"] == "", bgp  # the others still answer
        kept = writer.delete("/cluster/members/lb3", expect=409)
        assert "force" in kept["detail"], kept
        assert "ha.member_unreachable" in {e["kind"] for e in writer.get("/events")["data"]}
        lb3.start()
        wait_until(lambda: by_name(picture(writer))["lb3"]["reachable"] is True, WAIT_DEADLINE,
                   what="lb3 to answer again")  # fmt: skip

        # A member that leaves by itself (unpairs on its own dashboard) is forgotten by the writer.
        lb3.delete("/ha/pair", expect=200)
        assert picture(writer)["role"] == "none"  # lb2 removed, lb3 gone: no members left
        assert "left the cluster" in " ".join(e["message"] for e in writer.get("/events")["data"])


def test_adding_a_member_rejects_bad_input_and_names_the_field(tmp_path: Path) -> None:
    with started_nodes(tmp_path, "lb1") as (writer,):
        for body, field in (
            ({"peer_url": "http://192.0.2.1/;reboot", "code": "AAAA-BBBB-CCCC"}, "peer_url"),
            ({"peer_url": "http://192.0.2.1", "code": "short"}, "code"),
            ({"peer_url": "http://192.0.2.1", "code": "AAAA-BBBB-CCCC", "local_url": "ftp://x"}, "local_url"),
            ({"peer_url": "http://192.0.2.1", "code": "AAAA-BBBB-CCCC", "role": "writer"}, "role"),
        ):
            error = writer.post("/cluster/members", body, expect=422)
            assert field in {str(part) for item in error["detail"] for part in item["loc"]}, (body, error)
        assert writer.delete("/cluster/members/ghost", expect=404)["detail"].startswith("ghost is not a member")
        error = writer.post("/cluster/members/bad%20name/drain", {"enabled": True}, expect=422)
        assert error["detail"][0]["loc"] == ["path", "name"], error
        error = writer.post("/cluster/members/lb2/sync", {"force": "yes"}, expect=422)
        assert error["detail"][0]["loc"] == ["body", "force"], error
        assert writer.get("/cluster")["role"] == "none"  # nothing was added on the way
