"""This node's own settings: PATCH changes only what is sent (the HA page's form shows some of
them), PUT replaces the record, and the change plan names every setting that moves a VIP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from fulcrum.config.snapshot import ConfigSnapshot, Node, VipGroup
from fulcrum.services.plan import plan

GATEWAY = {"name": "gateway", "virtual_router_id": 52, "addresses": ["10.1.0.1/24"]}
PLACED = {"name": "lb1", "vrrp_interface": "eth0", "vip_interfaces": {"gateway": "eth1"}, "track_interfaces": ["eth2"]}
# What "This node's settings" on the HA page sends (webui/src/pages/HaPage.tsx).
FORM = {"name": "lb1", "vrrp_interface": "eth0", "priority": 120, "unicast_source": None, "peer_address": "192.0.2.2", "multicast": False, "sync_interface": "eth0"}


def commit(client: TestClient) -> None:
    answer = client.post("/api/v1/revisions", json={})
    assert answer.status_code == 201, answer.text


def test_saving_the_forms_fields_keeps_the_vip_and_tracked_interfaces(client: TestClient) -> None:
    assert client.put("/api/v1/node", json=PLACED).status_code == 200
    saved = client.patch("/api/v1/node", json=FORM)
    assert saved.status_code == 200, saved.text
    expected = {**FORM, "vip_interfaces": {"gateway": "eth1"}, "track_interfaces": ["eth2"]}
    assert saved.json() == expected
    assert client.get("/api/v1/node").json() == expected
    audit = client.get("/api/v1/audit").json()["data"][0]
    assert audit["action"] == "node.update" and audit["detail"]["before"]["priority"] == 100


def test_a_partial_update_is_validated_as_a_whole_and_names_the_field(client: TestClient) -> None:
    client.put("/api/v1/node", json=PLACED)
    loopback = client.patch("/api/v1/node", json={"track_interfaces": ["lo"]})
    assert loopback.status_code == 422
    assert [(e["loc"], e["msg"]) for e in loopback.json()["detail"]] == [
        (["body", "track_interfaces"], "the loopback interface is always up; track a network interface")
    ]
    # The merged record breaks a cross-field rule: multicast with the unicast peer already saved.
    client.patch("/api/v1/node", json={"peer_address": "192.0.2.2"})
    both = client.patch("/api/v1/node", json={"multicast": True})
    assert both.status_code == 422 and both.json()["detail"][0]["loc"] == ["body", "multicast"]
    assert client.patch("/api/v1/node", json={"priority": None}).json()["detail"][0]["loc"] == ["body", "priority"]
    assert client.patch("/api/v1/node", json={"colour": "red"}).status_code == 422
    assert client.get("/api/v1/node").json()["track_interfaces"] == ["eth2"]


def test_put_replaces_the_whole_record(client: TestClient) -> None:
    client.put("/api/v1/node", json=PLACED)
    replaced = client.put("/api/v1/node", json={"name": "lb1"}).json()
    assert replaced["vip_interfaces"] == {} and replaced["track_interfaces"] == []


def test_the_plan_lists_vip_and_tracked_interface_changes(client: TestClient) -> None:
    assert client.post("/api/v1/vip-groups", json=GATEWAY).status_code == 201
    client.put("/api/v1/node", json={"name": "lb1", "vrrp_interface": "eth0"})
    commit(client)
    client.patch("/api/v1/node", json={"vip_interfaces": {"gateway": "eth1", "gone": "eth3"}, "track_interfaces": ["eth2"]})
    plan = client.get("/api/v1/changes").json()["plan"]
    details = {i["detail"].split(":")[0]: i for i in plan["items"] if i["kind"] == "node"}
    moved = details["VIP interfaces change"]
    assert moved["target"] == "lb1" and moved["disruptive"] is True
    assert "gateway eth0 (the VRRP interface) → eth1" in moved["detail"]
    assert "gone eth0 (the VRRP interface) → eth3 (no such VIP group: ignored)" in moved["detail"]
    tracked = details["tracked interfaces change"]
    assert "tracks eth2" in tracked["detail"] and tracked["disruptive"] is False


def test_the_plan_says_where_addresses_go_back_to() -> None:
    group = VipGroup.model_validate(GATEWAY)
    before = ConfigSnapshot(vip_groups=[group], node=Node.model_validate(PLACED))
    after = ConfigSnapshot(vip_groups=[group], node=Node(name="lb1", vrrp_interface="eth0"))
    result = plan(before, after)
    assert [(i.detail, i.disruptive) for i in result.items] == [
        ("VIP interfaces change: gateway eth1 → eth0 (the VRRP interface). A group's addresses move to its new interface, which is tracked", True),
        ("tracked interfaces change: stops tracking eth2. While a tracked interface is down this node is FAULT and the peer holds the VIPs", False),
    ]
    assert plan(after, after).items == []


def test_only_moving_an_unknown_groups_interface_is_not_disruptive(client: TestClient) -> None:
    client.put("/api/v1/node", json={"name": "lb1"})
    commit(client)
    client.patch("/api/v1/node", json={"vip_interfaces": {"later": "eth1"}})
    items = client.get("/api/v1/changes").json()["plan"]["items"]
    assert [(i["detail"], i["disruptive"]) for i in items] == [
        ("VIP interfaces change: later eth0 (the VRRP interface) → eth1 (no such VIP group: ignored). A group's addresses move to its new interface, which is tracked", False)
    ]
