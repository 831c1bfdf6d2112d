"""Replication between two real API processes: fast-forward, catching up, conflicts and their
resolution, users, the one-writer rule and split brain. On this host applies end "validated"
(no IPVS); the revisions and shared hashes are what is compared."""

from __future__ import annotations

from pathlib import Path

import httpx

from apitest import PASSWORD, WEB
from fulcrum import __version__
from fulcrum.ha import wire
from hanode import WAIT_DEADLINE, Gate, Node, in_sync, pair, two_nodes
from lab.wait import wait_until

FRONT = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"]}


def service(name: str, last_octet: int) -> dict[str, object]:
    return {**WEB, "name": name, "address": f"192.0.2.{last_octet}"}


def names(node: Node) -> list[str]:
    return [s["name"] for s in node.get("/services")["data"]]


def test_commits_on_the_writer_reach_the_standby_which_refuses_shared_changes(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        pair(alpha, beta)
        beta.login("admin")  # alpha's accounts replaced beta's at pairing
        alpha.post("/services", WEB, expect=201)
        revision = alpha.commit("add web")

        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take alpha's revision")
        head = beta.head()
        assert head is not None
        assert head["message"] == f"replicated from alpha revision {revision['number']}" and head["author"] == "peer:alpha"
        assert head["lineage"] == alpha.head()["lineage"]  # type: ignore[index]
        assert names(beta) == ["web"]
        assert beta.get("/node")["name"] == "beta"  # node-local settings stay
        assert beta.get("/changes")["has_changes"] is False
        status = wait_until(
            lambda: (s := alpha.ha_status())["sync"]["state"] == "in_sync" and s,
            WAIT_DEADLINE,
            what="alpha to report in sync",
        )
        assert status["sync"]["peer_revision"] == head["number"] and status["node"]["writer"] is True
        assert "ha.sync" in {e["kind"] for e in alpha.get("/events?kind=ha.sync")["data"]}

        # Users follow, password hash included: the new operator can log in on beta.
        alpha.post("/users", {"username": "olivia", "password": PASSWORD, "role": "operator"}, expect=201)
        wait_until(
            lambda: beta.sql("SELECT role FROM users WHERE username = 'olivia'") == [("operator",)],
            WAIT_DEADLINE,
            what="olivia on beta",
        )
        with httpx.Client(base_url=beta.url, timeout=30) as olivia:
            login = olivia.post("/api/v1/auth/login", json={"username": "olivia", "password": PASSWORD})
            assert login.status_code == 200, login.text
            assert login.json()["user"]["role"] == "operator"

        # A second commit fast-forwards again.
        alpha.post("/services", service("mail", 11), expect=201)
        alpha.commit("add mail")
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take the second revision")
        assert names(beta) == ["mail", "web"]
        sync = alpha.post("/ha/sync", expect=200)
        assert sync["result"] == "in_sync", sync

        # beta is the standby (no VRRP yet: alpha wins the priority rule by name).
        wait_until(
            lambda: beta.ha_status()["peer"]["reachable"], WAIT_DEADLINE, what="beta to know alpha's priority",
        )
        assert beta.ha_status()["node"]["writer"] is False and alpha.ha_status()["node"]["writer"] is True

        for method, path, body in (
            ("POST", "/services", service("dns", 12)),
            ("PATCH", "/services/1", {"description": "x"}),
            ("POST", "/services/1/backends", {"address": "198.51.100.9"}),
            ("POST", "/vip-groups", FRONT),
            ("PUT", "/firewall", {"management_ports": [443]}),
            ("POST", "/users", {"username": "nope", "password": PASSWORD, "role": "viewer"}),
            ("POST", "/revisions/1/rollback", {"discard_changes": True}),
            ("POST", "/auth/password", {"current_password": PASSWORD, "new_password": PASSWORD + "!"}),
        ):
            response = beta.http.request(method, f"/api/v1{path}", json=body)
            assert response.status_code == 409, (path, response.text)
            answer = response.json()
            assert answer["code"] == "standby_read_only" and answer["active_url"] == alpha.url, answer
            assert answer["detail"].startswith("this node is standby; make changes on the active node alpha at")
        assert names(beta) == ["mail", "web"]

        # Node-local settings stay editable, and committing them alone is allowed.
        assert beta.http.put("/api/v1/node", json={"name": "beta", "priority": 90}).status_code == 200
        before = beta.head()
        committed = beta.commit("lower beta's priority")
        assert committed["number"] == before["number"] + 1  # type: ignore[index]
        assert beta.head()["shared_hash"] == before["shared_hash"]  # type: ignore[index]
        assert beta.post("/revisions", {}, expect=409)["detail"].startswith("nothing to commit")
        wait_until(
            lambda: alpha.ha_status()["sync"]["state"] == "in_sync", WAIT_DEADLINE, what="alpha still in sync",
        )
        assert beta.get("/services")["count"] == 2  # reads work


def test_a_peer_that_was_down_catches_up(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        pair(alpha, beta)
        beta.stop()
        alpha.post("/services", WEB, expect=201)
        alpha.commit("while beta is down")
        alpha.post("/services", service("mail", 11), expect=201)
        alpha.commit("still down")
        status = wait_until(
            lambda: (s := alpha.ha_status())["sync"]["state"] == "unreachable" and s,
            WAIT_DEADLINE,
            what="alpha to see beta unreachable",
        )
        assert status["peer"]["reachable"] is False and status["peer"]["unreachable_since"] is not None
        assert alpha.get("/events?kind=ha.peer_unreachable")["count"] == 1

        beta.start()
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to catch up")
        beta.login("admin")
        assert names(beta) == ["mail", "web"]
        wait_until(
            lambda: alpha.get("/events?kind=ha.peer_reachable")["count"] == 1,
            WAIT_DEADLINE,
            what="alpha to see beta again",
        )
        assert wait_until(lambda: alpha.ha_status()["sync"]["state"] == "in_sync", WAIT_DEADLINE, what="in sync")


def test_a_newer_node_sends_no_configuration_its_older_peer_cannot_read(tmp_path: Path) -> None:
    """The middle of a pair upgrade: alpha runs a version whose configuration format (schema 2)
    beta's older one cannot read. alpha says so, sends nothing, and resumes once beta is upgraded."""
    with two_nodes(tmp_path, alpha_config_schema=2) as (alpha, beta, _, _):
        pair(alpha, beta)
        beta.login("admin")
        status = wait_until(
            lambda: (s := alpha.ha_status())["peer"]["config_schema"] is not None and s,
            WAIT_DEADLINE,
            what="alpha to hear beta's versions",
        )
        assert status["peer"]["protocol"] == wire.PROTOCOL and status["peer"]["config_schema"] == 1, status["peer"]
        assert status["node"]["config_schema"] == 2
        # No RAUC on this host: both report the API's own version.
        assert status["node"]["software_version"] == status["peer"]["software_version"] == __version__

        alpha.post("/services", WEB, expect=201)
        alpha.commit("add web")
        sync = wait_until(
            lambda: (s := alpha.ha_status()["sync"])["state"] == "incompatible" and s,
            WAIT_DEADLINE,
            what="alpha to refuse to send its configuration",
        )
        expected = (
            f"beta runs Fulcrum {__version__}, which reads configuration schema 1; this node writes schema 2, "
            "so nothing is sent to beta until it is upgraded too"
        )
        assert sync["message"] == expected, sync
        assert alpha.post("/ha/sync", expect=200) == {
            "result": "incompatible", "local_revision": alpha.head()["number"], "peer_revision": None,  # type: ignore[index]
            "message": expected,
        }
        assert beta.head() is None, "beta took a configuration it cannot read"
        warnings = [e for e in alpha.get("/events?kind=ha.sync")["data"] if e["severity"] == "warning"]
        assert [e["message"] for e in warnings] == [expected], "the refusal is an event once, not at every poll"

        beta.stop()
        beta.config_schema = 2  # beta upgraded too
        beta.start()
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take alpha's configuration")
        wait_until(lambda: alpha.ha_status()["sync"]["state"] == "in_sync", WAIT_DEADLINE, what="alpha in sync")


def _split(alpha: Node, beta: Node, gate_a: Gate, gate_b: Gate) -> None:
    """A partition in which both nodes become MASTER and both change the configuration."""
    pair(alpha, beta, alpha_url=gate_a.url, beta_url=gate_b.url)
    beta.login("admin")
    alpha.post("/vip-groups", FRONT, expect=201)
    alpha.post("/services", WEB, expect=201)
    alpha.commit("front and web")
    wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta in sync")
    alpha.vrrp("front", "MASTER")
    beta.vrrp("front", "BACKUP")
    wait_until(
        lambda: beta.ha_status()["node"]["writer"] is False, WAIT_DEADLINE, what="beta to see alpha active",
    )
    refused = beta.post("/services", service("early", 12), expect=409)
    assert refused["detail"].startswith("this node is standby; make changes on the active node alpha at " + gate_a.url)

    gate_a.cut()
    gate_b.cut()
    wait_until(
        lambda: alpha.ha_status()["sync"]["state"] == "unreachable" and beta.ha_status()["sync"]["state"] == "unreachable",
        WAIT_DEADLINE,
        what="the partition",
    )
    beta.vrrp("front", "MASTER")  # beta hears no adverts either: both are MASTER now
    assert beta.ha_status()["node"]["writer"] is True
    alpha.post("/services", service("a-only", 20), expect=201)
    alpha.commit("alpha during the partition")
    beta.post("/services", service("b-only", 21), expect=201)
    beta.commit("beta during the partition")
    gate_a.open()
    gate_b.open()


def test_divergent_edits_in_a_split_brain_conflict_until_the_operator_picks_a_side(tmp_path: Path) -> None:
    with two_nodes(tmp_path, gated=True) as (alpha, beta, gate_a, gate_b):
        assert gate_a is not None and gate_b is not None
        _split(alpha, beta, gate_a, gate_b)

        for node in (alpha, beta):
            wait_until(
                lambda n=node: n.ha_status()["sync"]["state"] == "conflict",
                WAIT_DEADLINE,
                what=f"{node.name} to see the conflict",
            )
            assert node.get("/events?kind=ha.conflict")["count"] >= 1
        assert names(alpha) == ["a-only", "web"] and names(beta) == ["b-only", "web"]  # nothing overwritten
        diff = alpha.get("/ha/diff")
        assert diff["in_sync"] is False and '"a-only"' in diff["text"] and '"b-only"' in diff["text"]

        # Split brain: seen over the peer link for 2 s; beta yields (same priority, later name).
        wait_until(
            lambda: alpha.get("/events?kind=ha.split_brain")["count"] >= 1,
            WAIT_DEADLINE,
            what="the split-brain alarm",
        )
        wait_until(
            lambda: beta.maintenance_file.exists() and beta.maintenance_file.read_text().strip() == "1",
            WAIT_DEADLINE,
            what="beta to step down",
        )
        assert beta.ha_status()["split_brain"]["holding"] is True
        assert not (alpha.maintenance_file.exists() and alpha.maintenance_file.read_text().strip() == "1")

        result = alpha.post("/ha/resolve", {"winner": "local"}, expect=200)
        assert result["result"] == "forced", result
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take alpha's configuration")
        beta.login("admin")
        assert names(beta) == ["a-only", "web"]
        assert beta.head()["message"].startswith("forced by alpha")  # type: ignore[index]
        wait_until(
            lambda: alpha.ha_status()["sync"]["state"] == "in_sync" == beta.ha_status()["sync"]["state"],
            WAIT_DEADLINE,
            what="both in sync",
        )
        assert alpha.get("/audit?action=ha.resolve")["count"] == 1

        # A second partition: beta's operator ends the step-down, both are MASTER again, both edit.
        gate_a.cut()
        gate_b.cut()
        wait_until(
            lambda: beta.ha_status()["sync"]["state"] == "unreachable", WAIT_DEADLINE, what="the partition",
        )
        beta.post("/ha/maintenance", {"enabled": False}, expect=200)
        beta.vrrp("front", "MASTER")
        alpha.post("/services", service("a-two", 22), expect=201)
        alpha.commit("alpha, second partition")
        beta.post("/services", service("b-two", 23), expect=201)
        beta.commit("beta, second partition")
        gate_a.open()
        gate_b.open()
        wait_until(
            lambda: alpha.ha_status()["sync"]["state"] == "conflict",
            WAIT_DEADLINE,
            what="alpha to see the second conflict",
        )

        # This time beta's side wins: alpha takes beta's configuration.
        result = alpha.post("/ha/resolve", {"winner": "peer"}, expect=200)
        assert result["result"] == "pulled", result
        assert in_sync(alpha, beta)
        assert names(alpha) == ["a-only", "b-two", "web"]
        head = alpha.head()
        assert head is not None and head["message"].startswith("forced by beta") and head["lineage"] == beta.head()["lineage"]  # type: ignore[index]
        wait_until(
            lambda: alpha.ha_status()["sync"]["state"] == "in_sync" == beta.ha_status()["sync"]["state"],
            WAIT_DEADLINE,
            what="both in sync again",
        )
        assert alpha.get("/audit?action=ha.resolve")["count"] == 2
