"""Over the API: special addresses are a 422 naming the field and the reason; a backend that is
the appliance shows as a warning in the pending changes; an allow-list without ports is a 422."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from apitest import WEB


@pytest.mark.parametrize(
    ("address", "reason"),
    [("0.0.0.0", "unspecified"), ("127.0.0.1", "loopback"), ("::1", "loopback"), ("::", "unspecified"),
     ("224.0.0.1", "multicast"), ("255.255.255.255", "broadcast"), ("::ffff:1.2.3.4", "IPv4-mapped")],
)
def test_a_special_vip_or_backend_is_a_422_naming_the_field(client: TestClient, address: str, reason: str) -> None:
    vip = client.post("/api/v1/services", json={**WEB, "address": address, "backends": []})
    assert vip.status_code == 422
    [error] = vip.json()["detail"]
    assert error["loc"] == ["body", "address"] and reason in error["msg"]
    family = "2001:db8::10" if ":" in address else "192.0.2.10"
    created = client.post("/api/v1/services", json={**WEB, "address": family, "backends": []})
    assert created.status_code == 201
    backend = client.post(f"/api/v1/services/{created.json()['id']}/backends", json={"address": address})
    assert backend.status_code == 422
    [error] = backend.json()["detail"]
    assert error["loc"] == ["body", "address"] and reason in error["msg"]


@pytest.mark.parametrize(("address", "reason"), [("127.0.0.1/8", "loopback"), ("0.0.0.0/0", "unspecified"), ("192.0.2.255/24", "broadcast")])
def test_a_special_vip_group_address_is_a_422(client: TestClient, address: str, reason: str) -> None:
    response = client.post("/api/v1/vip-groups", json={"name": "g", "virtual_router_id": 7, "addresses": ["192.0.2.10/24", address]})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "addresses", 1] and reason in error["msg"]


def test_a_backend_equal_to_the_vip_is_a_pending_change_warning(client: TestClient) -> None:
    created = client.post("/api/v1/services", json={**WEB, "backends": [{"address": WEB["address"], "port": 8080}]})
    assert created.status_code == 201, created.text
    warnings = client.get("/api/v1/changes").json()["plan"]["warnings"]
    assert "service web: backend 192.0.2.10 is the service's own address; it would balance to itself" in warnings


def test_an_allow_list_without_management_ports_is_a_422(client: TestClient) -> None:
    response = client.put("/api/v1/firewall", json={"management_ports": [], "management_allow": ["10.0.0.0/8"]})
    assert response.status_code == 422
    assert "needs the ports it guards" in response.text
    assert client.put("/api/v1/firewall", json={"management_ports": [443], "management_allow": ["10.0.0.0/8"]}).status_code == 200
