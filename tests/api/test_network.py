"""This node's own network through the API: validation naming the field, node-local storage (never in
the shared part the peer receives), the change plan, the commit-confirmed management move, and the
kernel's interfaces read from sysfs and netlink."""

from __future__ import annotations

import copy
import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import errors, login_as
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.clock import CLOCK_STATES
from fulcrum.dataplane.links import read_routes
from fulcrum.models._types import utcnow
from fulcrum.services import lineage, revisions
from fulcrum.services.candidate import candidate_snapshot

# A two-arm NAT node: management on its own NIC, the data NICs bonded with a VLAN per segment.
NETWORK: dict[str, Any] = {
    "hostname": "lb1",
    "management_interface": "mgmt",
    "nics": [
        {"name": "mgmt", "mac": "52:54:00:12:34:01", "addresses": ["192.0.2.5/24", "2001:db8::5/64"]},
        {"name": "data0", "mac": "52:54:00:12:34:02"},
        {"name": "data1", "mac": "52:54:00:12:34:03"},
        {"name": "sync", "mac": "52:54:00:12:34:04", "addresses": ["10.99.0.1/30"], "mtu": 9000},
    ],
    "bonds": [{"name": "bond0", "members": ["data0", "data1"], "mode": "802.3ad"}],
    "vlans": [
        {"name": "front", "parent": "bond0", "vlan_id": 100, "addresses": ["203.0.113.2/24"]},
        {"name": "back", "parent": "bond0", "vlan_id": 200, "addresses": ["10.20.0.2/24"]},
    ],
    "routes": [{"destination": "10.30.0.0/16", "gateway": "10.20.0.254", "table": 100}],
    "gateway4": "203.0.113.1",
    "dns_servers": ["192.0.2.53"],
    "search_domains": ["example.net"],
    "ntp_servers": ["ntp.example.net", "192.0.2.123"],
}


@pytest.fixture(autouse=True)
def node_on_the_management_nic(client: TestClient) -> None:
    """The node's VRRP interface must be one of the network's (the default, eth0, is not)."""
    assert client.put("/api/v1/node", json={"name": "lb1", "vrrp_interface": "mgmt"}).status_code == 200


def with_changes(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(NETWORK), **changes}


def put(client: TestClient, network: dict[str, Any]) -> Any:
    return client.put("/api/v1/network", json=network)


def test_a_network_is_saved_read_back_and_audited(client: TestClient) -> None:
    assert client.get("/api/v1/network").json() is None
    saved = put(client, NETWORK)
    assert saved.status_code == 200, saved.text
    body = client.get("/api/v1/network").json()
    assert body == saved.json()
    assert body["bonds"][0]["xmit_hash_policy"] == "layer3+4" and body["bonds"][0]["miimon"] == 100
    audit = client.get("/api/v1/audit").json()["data"][0]
    assert audit["action"] == "network.update" and audit["detail"]["before"] is None
    assert client.delete("/api/v1/network").status_code == 204
    assert client.get("/api/v1/network").json() is None


def test_round_robin_is_refused_with_the_reason_unless_overridden(client: TestClient) -> None:
    bond = {"name": "bond0", "members": ["data0", "data1"], "mode": "balance-rr"}
    [(loc, msg)] = errors(put(client, with_changes(bonds=[bond])))
    assert loc == ["body", "bonds", 0, "mode"]
    assert "out of order" in msg and "TCP collapses" in msg and "allow_round_robin" in msg
    assert put(client, with_changes(bonds=[{**bond, "allow_round_robin": True}])).status_code == 200


@pytest.mark.parametrize(
    ("changes", "loc", "says"),
    [
        ({"vlans": [{"name": "v", "parent": "bond0", "vlan_id": 4095}]}, ["body", "vlans", 0, "vlan_id"], "4094"),
        ({"vlans": [{"name": "v", "parent": "bond0", "vlan_id": 0}]}, ["body", "vlans", 0, "vlan_id"], "1"),
        (
            {"vlans": [{"name": "v", "parent": "data0", "vlan_id": 5}]},
            ["body", "vlans", 0, "parent"],
            "member of bond bond0",
        ),
        (
            {"vlans": [{"name": "v", "parent": "eth7", "vlan_id": 5}]},
            ["body", "vlans", 0, "parent"],
            "eth7 is not a NIC or bond",
        ),
        (
            {"bonds": [{"name": "bond0", "members": ["data0", "mgmt"]}]},
            ["body", "bonds", 0, "members", 1],
            "mgmt has addresses of its own",
        ),
        (
            {
                "bonds": [
                    {"name": "bond0", "members": ["data0", "data1"]},
                    {"name": "bond1", "members": ["data1"]},
                ],
                "vlans": [],
                "routes": [],
                "gateway4": None,
            },
            ["body", "bonds", 1, "members", 0],
            "already a member of bond bond0",
        ),
        (
            {"routes": [{"destination": "10.30.0.0/16", "gateway": "10.40.0.1"}]},
            ["body", "routes", 0, "gateway"],
            "10.40.0.1 is on no connected network",
        ),
        ({"gateway4": "198.51.100.1"}, ["body", "gateway4"], "on no connected network"),
        ({"gateway6": "2001:db8:1::1"}, ["body", "gateway6"], "on no connected network"),
        ({"management_interface": "bond0"}, ["body", "management_interface"], "must be enabled and have an address"),
        ({"management_interface": "eth9"}, ["body", "management_interface"], "not an interface listed here"),
    ],
)
def test_bad_networks_get_a_422_naming_the_field(client: TestClient, changes: dict[str, Any], loc: list[Any], says: str) -> None:
    [(where, msg)] = errors(put(client, with_changes(**changes)))
    assert where == loc and says in msg
    assert client.get("/api/v1/network").json() is None  # nothing saved


def test_an_address_in_two_places_names_the_second(client: TestClient) -> None:
    vlans = copy.deepcopy(NETWORK["vlans"])
    vlans[1]["addresses"] = ["192.0.2.5/25"]  # the management address again, another prefix
    [(loc, msg)] = errors(put(client, with_changes(vlans=vlans)))
    assert loc == ["body", "vlans", 1, "addresses", 0] and msg == "192.0.2.5 is already an address of mgmt"


# Every free-text field, each given strings that would end a line, open a section or add a key.
HOSTILE = ["a\nb", "x]\n[Network]", "a=b", "a b", "a;b", "a#b", "", "a\rb", "a\tb"]
TEXT_FIELDS = [
    lambda v: {"hostname": v},
    lambda v: {"management_interface": v},
    lambda v: {"nics": [{**NETWORK["nics"][0], "name": v}]},
    lambda v: {"nics": [{**NETWORK["nics"][0], "mac": v}]},
    lambda v: {"bonds": [{"name": v, "members": ["data0"]}]},
    lambda v: {"bonds": [{"name": "bond0", "members": [v]}]},
    lambda v: {"bonds": [{"name": "bond0", "members": ["data0"], "xmit_hash_policy": v}]},
    lambda v: {"vlans": [{"name": v, "parent": "bond0", "vlan_id": 3}]},
    lambda v: {"vlans": [{"name": "v3", "parent": v, "vlan_id": 3}]},
    lambda v: {"routes": [{"destination": v, "gateway": "10.20.0.254"}]},
    lambda v: {"routes": [{"destination": "10.30.0.0/16", "gateway": v}]},
    lambda v: {"dns_servers": [v]},
    lambda v: {"search_domains": [v]},
    lambda v: {"ntp_servers": [v]},
    lambda v: {"nics": [{**NETWORK["nics"][0], "addresses": [v]}]},
]


@pytest.mark.parametrize("field", range(len(TEXT_FIELDS)))
def test_hostile_strings_are_refused_in_every_free_text_field(client: TestClient, field: int) -> None:
    for value in HOSTILE:
        response = put(client, with_changes(**TEXT_FIELDS[field](value)))
        assert response.status_code == 422, (field, value, response.text)
    assert client.get("/api/v1/network").json() is None


def test_node_interfaces_must_exist_in_the_network_and_sync_needs_an_address(client: TestClient) -> None:
    assert client.put("/api/v1/node", json={"name": "lb1", "vrrp_interface": "front"}).status_code == 200
    without_front = with_changes(vlans=[NETWORK["vlans"][1]], gateway4=None)
    # No VIP group, so no VRRP: the VRRP interface is not used, and a fresh appliance (eth0 by
    # default, which its NICs are not called) takes over its network as it is.
    assert put(client, without_front).status_code == 200
    assert client.delete("/api/v1/network").status_code == 204
    group = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"]}
    assert client.post("/api/v1/vip-groups", json=group).status_code == 201
    # With VRRP, the node names an interface the network lacks: the network is refused, naming the node field.
    [(loc, msg)] = errors(put(client, without_front))
    assert loc == ["body", "node", "vrrp_interface"] and "front is not an interface" in msg
    assert put(client, NETWORK).status_code == 200
    gone = client.patch("/api/v1/node", json={"vip_interfaces": {"gateway": "eth3"}})
    assert errors(gone) == [(["body", "node", "vip_interfaces"], "eth3 is not an interface of this node's network")]
    member = client.patch("/api/v1/node", json={"track_interfaces": ["data1"]})
    assert errors(member) == [(["body", "node", "track_interfaces", 0], "data1 is a member of bond bond0; use the bond")]
    bare = [*NETWORK["nics"][:3], {"name": "sync", "mac": "52:54:00:12:34:04"}]
    assert put(client, with_changes(nics=bare)).status_code == 200
    [(loc, msg)] = errors(client.patch("/api/v1/node", json={"sync_interface": "sync"}))
    assert loc == ["body", "node", "sync_interface"] and "sync has no address" in msg


def test_the_network_is_node_local(client: TestClient, session: Session) -> None:
    client.post("/api/v1/revisions", json={})  # an empty first revision
    before = lineage.shared_hash(candidate_snapshot(session))
    assert put(client, NETWORK).status_code == 200
    snapshot = candidate_snapshot(session)
    assert snapshot.network is not None and lineage.shared_hash(snapshot) == before
    assert "network" not in lineage.shared_part(snapshot)


def test_a_snapshot_without_a_network_keeps_its_digest() -> None:
    """Revisions stored before the network was modelled have no "network" key: same text, same digest."""
    assert ConfigSnapshot().canonical_json() == '{"firewall":{"management_allow":[],"management_ports":[22,80,443]},"format":1,"node":{"multicast":false,"name":"fulcrum","peer_address":null,"priority":100,"sync_interface":null,"track_interfaces":[],"unicast_source":null,"vip_interfaces":{},"vrrp_interface":"eth0"},"services":[],"vip_groups":[]}'


def _plan(client: TestClient) -> list[dict[str, Any]]:
    return [i for i in client.get("/api/v1/changes").json()["plan"]["items"] if i["kind"] == "network"]


def test_the_plan_says_what_the_network_change_does(client: TestClient) -> None:
    put(client, NETWORK)
    items = {i["target"]: i for i in _plan(client)}
    assert items["network"]["action"] == "add" and items["network"]["disruptive"]
    assert "management address moves: unmanaged → mgmt 192.0.2.5, 2001:db8::5" in items["management"]["detail"]
    assert items["interface bond0"]["action"] == "add"
    client.post("/api/v1/revisions", json={"confirm_within": 60})
    client.post("/api/v1/revisions/1/confirm")
    vlans = copy.deepcopy(NETWORK["vlans"])
    vlans[0]["addresses"] = ["203.0.113.3/24"]
    put(client, with_changes(vlans=vlans, routes=[], dns_servers=["192.0.2.54"]))
    items = {i["target"]: i for i in _plan(client)}
    assert "management" not in items
    front = items["interface front"]
    assert front["disruptive"] and "Addresses that disappear: 203.0.113.2/24" in front["detail"]
    assert items["route 10.30.0.0/16 via 10.20.0.254 (table 100)"]["action"] == "remove"
    assert items["DNS servers"]["detail"] == "192.0.2.53 → 192.0.2.54"


def test_a_running_vlans_id_or_parent_cannot_change_in_place(client: TestClient) -> None:
    """networkd keeps an existing VLAN's id and parent (the kernel fixes both at creation), so the
    commit would fail at read-back: refused at the field, with the way that works."""
    put(client, NETWORK)
    assert client.post("/api/v1/revisions", json={"confirm_within": 60}).status_code == 201
    assert client.post("/api/v1/revisions/1/confirm").status_code == 200
    vlans = copy.deepcopy(NETWORK["vlans"])
    vlans[0]["vlan_id"] = 300
    vlans[1]["parent"] = "data0"
    refused = put(client, with_changes(vlans=vlans, bonds=[{"name": "bond0", "members": ["data1"], "mode": "802.3ad"}]))
    assert errors(refused) == [
        (["body", "vlans", 0, "vlan_id"], "VLAN front runs with id 100, and a VLAN's id cannot change in place: "
         "add the new VLAN under another name and remove this one"),
        (["body", "vlans", 1, "parent"], "VLAN back runs with parent bond0, and a VLAN's parent cannot change in place: "
         "add the new VLAN under another name and remove this one"),
    ]
    kept = client.get("/api/v1/network").json()["vlans"]  # nothing changed
    assert [(v["name"], v["parent"], v["vlan_id"]) for v in kept] == [("front", "bond0", 100), ("back", "bond0", 200)]
    vlans[0].update(name="front300")  # under another name it is a new VLAN, and the old one goes
    del vlans[1]
    assert put(client, with_changes(vlans=vlans, routes=[])).status_code == 200


def test_a_running_bonds_mode_monitoring_or_hash_policy_cannot_change_in_place(client: TestClient) -> None:
    """networkd never changes a running bond's netdev settings either (tests/kernel/test_network.py
    shows the commit failing at read-back): refused at each field, members may change; the same bond
    under a new name, with its VLANs under new names, replaces it in one commit."""
    put(client, NETWORK)
    assert client.post("/api/v1/revisions", json={"confirm_within": 60}).status_code == 201
    assert client.post("/api/v1/revisions/1/confirm").status_code == 200
    bond = {"name": "bond0", "members": ["data0", "data1"], "mode": "802.3ad"}
    for change, field, label, running, wanted in (
        ({"mode": "active-backup"}, "mode", "mode", "802.3ad", "active-backup"),
        ({"miimon": 250}, "miimon", "link monitoring interval (miimon, ms)", 100, 250),
        ({"xmit_hash_policy": "layer2"}, "xmit_hash_policy", "hash policy", "layer3+4", "layer2"),
    ):
        assert errors(put(client, with_changes(bonds=[{**bond, **change}]))) == [
            (["body", "bonds", 0, field],
             f"bond bond0 runs with {label} {running}, and a running bond's {label} cannot change in place: add a "
             f"bond under another name with {label} {wanted} (its members, and its VLANs under new names) and "
             "remove this one in the same commit"),
        ]
    assert client.get("/api/v1/network").json()["bonds"][0]["mode"] == "802.3ad"  # nothing changed
    assert put(client, with_changes(bonds=[{**bond, "members": ["data0"]}])).status_code == 200
    # An active-backup bond ignores the hash policy (it is not rendered): not a change to refuse.
    swapped = with_changes(
        bonds=[{"name": "bond1", "members": ["data0", "data1"], "mode": "active-backup"}],
        vlans=[{**vlan, "name": f"{vlan['name']}1", "parent": "bond1"} for vlan in NETWORK["vlans"]],
        routes=[],
    )
    assert put(client, swapped).status_code == 200


def test_moving_the_management_address_is_commit_confirmed_by_default(client: TestClient, session: Session, applier) -> None:  # type: ignore[no-untyped-def]
    put(client, NETWORK)
    first = client.post("/api/v1/revisions", json={}).json()
    assert first["state"] == "awaiting_confirm"  # taking the network over moves management too
    deadline = first["confirm_deadline"]
    assert client.post(f"/api/v1/revisions/{first['number']}/confirm").status_code == 200
    # A change elsewhere commits as usual.
    put(client, with_changes(dns_servers=["192.0.2.54"]))
    plain = client.post("/api/v1/revisions", json={}).json()
    assert plain["state"] == "validated" and plain["confirm_deadline"] is None
    nics = copy.deepcopy(NETWORK["nics"])
    nics[0]["addresses"] = ["192.0.2.6/24"]
    put(client, with_changes(nics=nics, dns_servers=["192.0.2.54"]))
    moved = client.post("/api/v1/revisions", json={}).json()
    assert moved["state"] == "awaiting_confirm" and deadline is not None
    assert 110 <= (revisions.get_revision(session, moved["number"]).confirm_deadline - utcnow()).total_seconds() <= 120
    assert revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=60)) is None
    reverted = revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=121))
    assert reverted is not None and reverted.rollback_of == plain["number"]
    assert reverted.state == "validated"  # the automatic rollback itself asks for no confirmation
    assert client.get("/api/v1/network").json()["nics"][0]["addresses"] == ["192.0.2.5/24", "2001:db8::5/64"]


def test_the_kernels_interfaces_are_listed(client: TestClient) -> None:
    listed = client.get("/api/v1/network/interfaces")
    assert listed.status_code == 200, listed.text
    loopback = next(i for i in listed.json() if i["name"] == "lo")
    assert loopback["kind"] == "loopback" and "127.0.0.1" in loopback["addresses"]
    assert "127.0.0.1/8" in loopback["prefixed_addresses"] and loopback["dynamic_addresses"] == []
    assert loopback["mtu"] > 0 and "rx_bytes" in loopback["counters"] and loopback["configured"] is False
    # One interface as listed, but for its counters: other tests' loopback traffic moves them between
    # any two reads (two GETs of it differed under the host suite's second worker).
    alone = client.get("/api/v1/network/interfaces/lo").json()
    assert {**alone, "counters": None} == {**loopback, "counters": None}
    assert alone["counters"]["rx_bytes"] >= loopback["counters"]["rx_bytes"]
    assert client.get("/api/v1/network/interfaces/nosuch0").status_code == 404
    assert client.get("/api/v1/network/interfaces/a%0Ab").status_code == 422


def test_the_clock_is_read_from_the_kernel_with_the_configured_ntp_servers(client: TestClient) -> None:
    viewer = login_as(client, "vera", "viewer")
    clock = viewer.get("/api/v1/network/clock")
    assert clock.status_code == 200, clock.text
    body = clock.json()
    assert body["synchronised"] is (body["max_error_us"] < 16_000_000)
    assert body["state"] in CLOCK_STATES.values() and body["ntp_servers"] == []
    assert put(client, NETWORK).status_code == 200
    assert viewer.get("/api/v1/network/clock").json()["ntp_servers"] == ["ntp.example.net", "192.0.2.123"]


def test_the_kernels_routes_are_listed_to_a_viewer(client: TestClient) -> None:
    viewer = login_as(client, "rita", "viewer")
    listed = viewer.get("/api/v1/network/routes")
    assert listed.status_code == 200, listed.text
    assert listed.json() == [dataclasses.asdict(route) for route in read_routes()]
    assert all(route["table"] != 255 for route in listed.json())
