"""This node's BGP through the API: validation naming the field, hostile text refused in every
field that reaches frr.conf, write-only passwords, node-local storage (never in the shared part the
peer receives), and the announced VIPs taken from the services."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import errors
from fulcrum.apply.client import SocketApplier
from fulcrum.errors import ConfigInvalid, Unavailable
from fulcrum.ha import replication
from fulcrum.ha.wire import ConfigPush
from fulcrum.services import bgp as bgp_service
from fulcrum.services import lineage
from fulcrum.services.candidate import candidate_snapshot


BGP: dict[str, Any] = {
    "asn": 65001,
    "router_id": "192.0.2.5",
    "neighbors": [
        {
            "address": "192.0.2.1",
            "remote_asn": 65000,
            "password": "s3cret-Key",
            "timers": {"keepalive": 1, "hold": 3},
            "description": "upstream router A",
        },
        {"address": "2001:db8::1", "remote_asn": 4200000000, "bfd": False},
    ],
    "communities": ["65000:100"],
    "large_communities": ["4200000000:1:2"],
}


# What a service whose VIP BGP announces must be (fulcrum.config.cluster).
CLUSTERED: dict[str, Any] = {
    "forwarding": "dr",
    "scheduler": "mh",
    "scheduler_fallback": True,
    "health_check": {"on_failure": "weight_zero"},
}


# A service as it is created by default: NAT, which BGP may not announce (CLUSTERED makes it fit).
NAT_WEB: dict[str, Any] = {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "198.51.100.1"}]}


def with_changes(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(BGP), **changes}


def neighbor(**changes: Any) -> dict[str, Any]:
    return with_changes(neighbors=[{**BGP["neighbors"][0], **changes}])


def put(client: TestClient, bgp: dict[str, Any]) -> Any:
    return client.put("/api/v1/bgp", json=bgp)


def test_bgp_is_saved_read_back_without_passwords_and_audited(
    client: TestClient,
) -> None:
    assert client.get("/api/v1/bgp").json() is None
    saved = put(client, BGP)
    assert saved.status_code == 200, saved.text
    body = client.get("/api/v1/bgp").json()
    assert body == saved.json()
    first, second = body["neighbors"]
    assert first["password"] is None and first["has_password"] is True
    assert (
        second["has_password"] is False
        and first["bfd"] is True
        and body["announce"] is None
    )
    entry = client.get("/api/v1/audit").json()["data"][0]
    assert entry["action"] == "bgp.update" and "s3cret-Key" not in str(entry)
    assert client.delete("/api/v1/bgp").status_code == 204
    assert client.get("/api/v1/bgp").json() is None
    assert client.delete("/api/v1/bgp").status_code == 404


def test_a_password_left_out_is_kept_and_an_empty_one_removes_it(
    client: TestClient, session: Session
) -> None:
    assert put(client, BGP).status_code == 200
    read = client.get("/api/v1/bgp").json()
    read["neighbors"] = [
        {k: v for k, v in n.items() if k not in ("has_password", "password")}
        for n in read["neighbors"]
    ]
    assert put(client, read).status_code == 200  # what a GET gave, sent back
    snapshot = candidate_snapshot(session)
    assert (
        snapshot.bgp is not None and snapshot.bgp.neighbors[0].password == "s3cret-Key"
    )
    read["neighbors"][0]["password"] = ""
    assert put(client, read).json()["neighbors"][0]["has_password"] is False
    session.expire_all()
    bgp = candidate_snapshot(session).bgp
    assert bgp is not None and bgp.neighbors[0].password is None


@pytest.mark.parametrize(
    ("body", "loc", "says"),
    [
        (with_changes(asn=0), ["body", "asn"], "greater than or equal to 1"),
        (
            with_changes(asn=4294967296),
            ["body", "asn"],
            "less than or equal to 4294967295",
        ),
        (with_changes(router_id="2001:db8::5"), ["body", "router_id"], "IPv4"),
        (
            with_changes(router_id="0.0.0.0"),
            ["body", "router_id"],
            "cannot identify a router",
        ),
        (with_changes(router_id="router1"), ["body", "router_id"], "IPv4"),
        (
            with_changes(
                neighbors=[
                    BGP["neighbors"][0],
                    {**BGP["neighbors"][0], "password": None},
                ]
            ),
            ["body", "neighbors", 1, "address"],
            "192.0.2.1 is listed twice",
        ),
        (
            neighbor(address="fe80::1"),
            ["body", "neighbors", 0, "address"],
            "link-local",
        ),
        (
            neighbor(remote_asn=0),
            ["body", "neighbors", 0, "remote_asn"],
            "greater than or equal to 1",
        ),
        (
            neighbor(timers={"keepalive": 3, "hold": 2}),
            ["body", "neighbors", 0, "timers", "hold"],
            "greater than or equal to 3",
        ),
        (
            neighbor(timers={"keepalive": 0, "hold": 9}),
            ["body", "neighbors", 0, "timers", "keepalive"],
            "greater than or equal to 1",
        ),
        (
            neighbor(timers={"keepalive": 9, "hold": 9}),
            ["body", "neighbors", 0, "timers", "keepalive"],
            "shorter than the hold time",
        ),
        (
            neighbor(timers={"keepalive": 1, "hold": 65536}),
            ["body", "neighbors", 0, "timers", "hold"],
            "65535",
        ),
        (neighbor(password="x" * 81), ["body", "neighbors", 0, "password"], "pattern"),
        (
            neighbor(description="y" * 81),
            ["body", "neighbors", 0, "description"],
            "at most 80",
        ),
        (with_changes(communities=["65536:1"]), ["body", "communities", 0], "0-65535"),
        (with_changes(communities=["65000"]), ["body", "communities", 0], "pattern"),
        (with_changes(communities=["1:1", "1:1"]), ["body", "communities"], "twice"),
        (
            with_changes(large_communities=["1:2"]),
            ["body", "large_communities", 0],
            "pattern",
        ),
        (
            with_changes(large_communities=["4294967296:1:1"]),
            ["body", "large_communities", 0],
            "0-4294967295",
        ),
        (
            with_changes(announce=["198.51.100.7"]),
            ["body", "announce", 0],
            "not the address of any service",
        ),
    ],
)
def test_bad_bgp_gets_a_422_naming_the_field(
    client: TestClient, body: dict[str, Any], loc: list[Any], says: str
) -> None:
    found = errors(put(client, body))
    assert any(where == loc and says in msg for where, msg in found), found
    assert client.get("/api/v1/bgp").json() is None  # nothing saved


# Text that would end a line, start a comment, quote, or ask vtysh for help.
HOSTILE = [
    "a\nb",
    "a\rb",
    "a!b",
    "a#b",
    'a"b',
    "a'b",
    "a\\b",
    "a?b",
    "a\tb",
    "a\x00b",
    "a\x7fb",
    "",
    " a",
    "a  b",
]
TEXT_FIELDS = [
    lambda v: neighbor(password=v),
    lambda v: neighbor(description=v),
    lambda v: neighbor(address=v),
    lambda v: with_changes(router_id=v),
    lambda v: with_changes(communities=[v]),
    lambda v: with_changes(large_communities=[v]),
    lambda v: with_changes(announce=[v]),
    lambda v: with_changes(asn=v),
]


@pytest.mark.parametrize("field", range(len(TEXT_FIELDS)))
def test_hostile_strings_are_refused_in_every_field(
    client: TestClient, field: int
) -> None:
    for value in HOSTILE:
        if field == 0 and value == "":
            continue  # an empty password is how a write removes one
        response = put(client, TEXT_FIELDS[field](value))
        assert response.status_code == 422, (field, value, response.text)
    assert client.get("/api/v1/bgp").json() is None


def test_bgp_is_node_local(client: TestClient, session: Session) -> None:
    client.post("/api/v1/revisions", json={})
    before = lineage.shared_hash(candidate_snapshot(session))
    assert put(client, BGP).status_code == 200
    snapshot = candidate_snapshot(session)
    assert snapshot.bgp is not None and lineage.shared_hash(snapshot) == before
    assert "bgp" not in lineage.shared_part(snapshot)


def test_every_enabled_service_is_announced_unless_a_list_is_given(
    client: TestClient, session: Session
) -> None:
    services = (
        ("web", "192.0.2.10", True, "198.51.100.1"),
        ("v6", "2001:db8::10", True, "2001:db8:1::1"),
        ("off", "192.0.2.11", False, "198.51.100.1"),
    )
    for name, address, enabled, backend in services:
        service = {
            "name": name,
            "address": address,
            "ports": [80],
            "enabled": enabled,
            "backends": [{"address": backend}],
            **CLUSTERED,
        }
        assert client.post("/api/v1/services", json=service).status_code == 201
    assert put(client, BGP).status_code == 200
    assert [str(a) for a in candidate_snapshot(session).announced_vips()] == [
        "192.0.2.10",
        "2001:db8::10",
    ]
    assert put(client, with_changes(announce=["192.0.2.11"])).status_code == 200
    assert [str(a) for a in candidate_snapshot(session).announced_vips()] == [
        "192.0.2.11"
    ]
    assert put(client, with_changes(enabled=False)).status_code == 200
    assert candidate_snapshot(session).announced_vips() == []


def test_a_service_whose_address_bgp_lists_cannot_be_deleted_or_moved_away(
    client: TestClient, session: Session
) -> None:
    """Removing the only service of a listed VIP would make every commit fail on bgp.announce (and
    announce an address nothing serves): the delete or the move is refused, naming the list, and
    nothing changes. A second service on the address, or the address out of the list, lets it go."""
    web = {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "198.51.100.1"}], **CLUSTERED}
    web_id = client.post("/api/v1/services", json=web).json()["id"]
    assert put(client, with_changes(announce=["192.0.2.10"])).status_code == 200

    deleted = client.delete(f"/api/v1/services/{web_id}")
    assert deleted.status_code == 409, deleted.text
    assert "bgp.announce" in deleted.json()["detail"] and "192.0.2.10" in deleted.json()["detail"]
    moved = client.patch(f"/api/v1/services/{web_id}", json={"address": "192.0.2.20"})
    assert moved.status_code == 422, moved.text
    assert errors(moved)[0][0] == ["body", "address"] and "bgp.announce" in errors(moved)[0][1]
    session.expire_all()
    assert [(s.name, str(s.address)) for s in candidate_snapshot(session).services] == [("web", "192.0.2.10")]

    # Another service on the same VIP (another port) keeps the address served.
    other = {**web, "name": "web-tls", "ports": [443]}
    assert client.post("/api/v1/services", json=other).status_code == 201
    assert client.patch(f"/api/v1/services/{web_id}", json={"address": "192.0.2.20"}).status_code == 200
    assert put(client, with_changes(announce=None)).status_code == 200
    assert client.delete(f"/api/v1/services/{web_id}").status_code == 204


def test_revisions_and_diffs_never_show_a_password(client: TestClient, session: Session) -> None:
    assert put(client, BGP).status_code == 200
    assert "s3cret-Key" not in client.get("/api/v1/changes").text
    assert client.post("/api/v1/revisions", json={}).status_code == 201
    shown = client.get("/api/v1/revisions/1").json()["snapshot"]["bgp"]["neighbors"]
    assert [n["password"] for n in shown] == ["[redacted]", None]
    assert "s3cret-Key" not in client.get("/api/v1/revisions/diff?from=1").text
    # The revision itself keeps it: the applier renders frr.conf from the stored snapshot.
    stored = candidate_snapshot(session).bgp
    assert stored is not None and stored.neighbors[0].password == "s3cret-Key"


def _bgp_plan(client: TestClient) -> dict[str, dict[str, Any]]:
    return {i["target"]: i for i in client.get("/api/v1/changes").json()["plan"]["items"] if i["kind"] == "bgp"}


def test_the_plan_says_what_a_bgp_change_does_and_never_names_a_password(client: TestClient) -> None:
    web = {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "198.51.100.1"}], **CLUSTERED}
    assert client.post("/api/v1/services", json=web).status_code == 201
    assert put(client, BGP).status_code == 200
    [(target, added)] = _bgp_plan(client).items()
    assert target == "BGP (AS 65001, router ID 192.0.2.5)" and added["action"] == "add" and not added["disruptive"]
    assert "192.0.2.1 (AS 65000), 2001:db8::1 (AS 4200000000)" in added["detail"]
    assert added["detail"].endswith("announces 192.0.2.10/32")
    # FRR brings the announced VIP up on the loopback: no "in no VIP group" warning for it.
    assert client.get("/api/v1/changes").json()["plan"]["warnings"] == []
    assert client.post("/api/v1/revisions", json={}).status_code == 201

    changed = with_changes(
        neighbors=[{**BGP["neighbors"][0], "password": "an0ther-Key"}, {"address": "192.0.2.2", "remote_asn": 65000}],
        announce=[],
        communities=["65000:200"],
    )
    assert put(client, changed).status_code == 200
    items = _bgp_plan(client)
    assert "an0ther-Key" not in str(items) and "s3cret-Key" not in str(items)
    assert set(items) == {
        "announce 192.0.2.10/32",
        "neighbor 192.0.2.2 (AS 65000)",
        "neighbor 2001:db8::1 (AS 4200000000)",
        "neighbor 192.0.2.1 (AS 65000)",
        "communities",
    }
    withdrawn = items["announce 192.0.2.10/32"]
    assert withdrawn["action"] == "remove" and withdrawn["disruptive"] and "other nodes" in withdrawn["detail"]
    assert items["neighbor 2001:db8::1 (AS 4200000000)"]["action"] == "remove"
    assert items["neighbor 2001:db8::1 (AS 4200000000)"]["disruptive"]
    assert items["neighbor 192.0.2.2 (AS 65000)"]["action"] == "add"
    reset = items["neighbor 192.0.2.1 (AS 65000)"]
    assert reset["disruptive"] and reset["detail"].startswith("password changed: the session restarts")
    assert items["communities"]["detail"] == "the routes are announced again tagged 65000:200, 4200000000:1:2"

    # Turned off is the same as removed: every VIP withdrawn, every session closed.
    assert put(client, with_changes(enabled=False)).status_code == 200
    [(target, off)] = _bgp_plan(client).items()
    assert target == "BGP (AS 65001)" and off["action"] == "remove" and off["disruptive"]
    assert off["detail"].startswith("FRR withdraws 192.0.2.10/32 and closes its sessions")


def test_an_announced_service_must_let_every_node_pick_the_same_backend(client: TestClient, session: Session) -> None:
    """fulcrum.config.cluster's rules, as a client meets them: turning BGP on over a NAT service is
    refused naming the service's field; a service or backend written against them while BGP
    announces its VIP is refused naming the field in the body; nothing is stored either time."""
    nat = NAT_WEB
    web_id = client.post("/api/v1/services", json=nat).json()["id"]
    refused = put(client, BGP)
    assert refused.status_code == 422, refused.text
    [(loc, message)] = errors(refused)
    assert loc[-1] == "forwarding" and "services" in loc and "use dr or tun" in message, (loc, message)
    assert client.get("/api/v1/bgp").json() is None

    # The service made fit, BGP goes on; then each rule is kept as the service is edited.
    assert client.patch(f"/api/v1/services/{web_id}", json=CLUSTERED).status_code == 200
    assert put(client, BGP).status_code == 200
    for change, field in (
        ({"scheduler": "wrr", "scheduler_fallback": False}, ["body", "scheduler"]),
        ({"scheduler_fallback": False}, ["body", "scheduler_fallback"]),
        ({"forwarding": "nat"}, ["body", "forwarding"]),
        ({"health_check": {"on_failure": "remove"}}, ["body", "health_check", "on_failure"]),
    ):
        edited = client.patch(f"/api/v1/services/{web_id}", json=change)
        assert edited.status_code == 422, (change, edited.text)
        assert errors(edited)[0][0] == field, errors(edited)
    created = client.post("/api/v1/services", json={**nat, "name": "other", "ports": [443]})
    assert created.status_code == 422 and errors(created)[0][0] == ["body", "forwarding"], created.text
    backend = {"address": "198.51.100.2", "health_check": {"type": "http", "on_failure": "remove"}}
    added = client.post(f"/api/v1/services/{web_id}/backends", json=backend)
    assert added.status_code == 422 and errors(added)[0][0] == ["body", "health_check", "on_failure"], added.text
    session.expire_all()
    [service] = candidate_snapshot(session).services
    assert service.scheduler == "mh" and service.forwarding == "dr" and len(service.backends) == 1

    # Out of BGP's list of VIPs, the service is free again.
    assert put(client, with_changes(announce=[])).status_code == 200
    assert client.patch(f"/api/v1/services/{web_id}", json={"forwarding": "nat", "scheduler": "wlc",
                                                          "scheduler_fallback": False}).status_code == 200


def test_an_import_that_bgp_would_announce_against_the_rules_is_refused_and_stores_nothing(client: TestClient) -> None:
    """BGP announces every enabled service's VIP by default, so an imported NAT service (what
    ipvsadm's -m makes) would be announced against fulcrum.config.cluster's rules: the import is a
    422 naming the imported service's field, in a preview as in an apply, and the candidate keeps
    what it had."""
    assert client.post("/api/v1/services", json={**NAT_WEB, **CLUSTERED}).status_code == 201
    assert put(client, BGP).status_code == 200
    rules = "-A -t 192.0.2.20:80 -s rr\n-a -t 192.0.2.20:80 -r 198.51.100.5:80 -m -w 1\n"
    for mode in ("preview", "apply"):
        refused = client.post("/api/v1/imports", json={"text": rules, "mode": mode})
        assert refused.status_code == 422, refused.text
        loc, message = errors(refused)[0]
        assert "services" in loc and loc[-1] in ("scheduler", "forwarding"), (loc, message)
    assert [s["name"] for s in client.get("/api/v1/services").json()["data"]] == ["web"]


def test_a_peer_s_revision_that_this_node_s_bgp_would_announce_against_the_rules_is_refused(
    client: TestClient, session: Session
) -> None:
    """The peer's shared part meets this node's own BGP settings on arrival (replication.accept):
    a NAT service there, whose VIP this node would announce, is refused with the field under
    body.shared, before anything is stored or applied."""
    assert client.post("/api/v1/services", json={**NAT_WEB, **CLUSTERED}).status_code == 201
    assert put(client, BGP).status_code == 200
    shared = candidate_snapshot(session).model_dump(mode="json", include={"services", "vip_groups"})
    shared["services"][0] |= {"forwarding": "nat"}
    push = ConfigPush(shared=shared, users=[], shared_hash="0" * 64, lineage="1" * 64, history=[],
                      origin_revision=7, origin_node="peer")
    app = cast(Any, client.app)
    with pytest.raises(ConfigInvalid) as refused:
        replication.accept(session, app.state.ha, app.state.applier, push, "test")
    [error] = refused.value.errors[:1]
    assert error["loc"][:2] == ["body", "shared"] and error["loc"][-1] == "forwarding", error
    session.expire_all()
    assert [s.forwarding for s in candidate_snapshot(session).services] == ["dr"]


def test_the_live_view_says_frr_is_not_managed_here_and_a_silent_helper_is_a_503(client: TestClient, tmp_path: Path) -> None:
    """GET /bgp/status asks the apply helper, which asks bgpd and bfdd (with FRR managed:
    tests/unit/apply/test_frr.py). Without FRR in the engine it says so; a helper that cannot be
    reached is this node's state, a 503 naming the socket, not the client's error."""
    answer = client.get("/api/v1/bgp/status")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"managed": False, "announcing": None, "fitness": None, "originated": [],
                             "neighbors": [], "error": None}
    with pytest.raises(Unavailable, match="apply helper not reachable at .*gone.sock"):
        bgp_service.live_view(SocketApplier(tmp_path / "gone.sock"))
