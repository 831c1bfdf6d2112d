from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from apitest import WEB


def errors(response) -> list[tuple[list, str]]:  # type: ignore[no-untyped-def]
    assert response.status_code == 422, response.text
    return [(e["loc"], e["msg"]) for e in response.json()["detail"]]


def test_create_service_with_backends(client: TestClient) -> None:
    response = client.post("/api/v1/services", json=WEB)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["scheduler"] == "wrr"
    assert [b["weight"] for b in body["backends"]] == [2, 1]
    assert body["health_check"]["interval"] == 1.0  # defaults detect a dead backend in ~3 s
    listed = client.get("/api/v1/services").json()
    assert listed["count"] == 1 and listed["data"][0]["id"] == body["id"]


def _with(**changes):  # type: ignore[no-untyped-def]
    service = copy.deepcopy(WEB)
    service.update(changes)
    return service


@pytest.mark.parametrize(
    ("service", "loc", "fragment"),
    [
        (_with(address="192.0.2.300"), ["body", "address"], "not a valid IPv4 or IPv6 address"),
        (_with(ports=[70000]), ["body", "ports", 0], "less than or equal to 65535"),
        (_with(scheduler="fastest"), ["body", "scheduler"], "'rr'"),
        (_with(backends=[{"address": "198.51.100.1", "weight": -1}]), ["body", "backends", 0, "weight"], "greater than or equal to 0"),
        (_with(backends=[{"address": "2001:db8::1"}]), ["body", "backends", 0, "address"], "IPv6 but the service address is IPv4"),
        (_with(ports=[80, 443], backends=[{"address": "198.51.100.1", "port": 8080}]), ["body", "backends", 0, "port"], "takes no port"),
        (_with(forwarding="dr", backends=[{"address": "198.51.100.1", "port": 8080}]), ["body", "backends", 0, "port"], "DR forwarding cannot change"),
        (_with(name="web; include /etc/passwd"), ["body", "name"], "pattern"),
        (_with(health_check={"type": "http", "http_path": "/x }\nMISC_CHECK {"}), ["body", "health_check", "http_path"], "pattern"),
        (_with(scheduler_port=True), ["body", "scheduler"], "apply only to sh and mh"),
        (_with(protocol="udp", health_check={"type": "http"}), ["body", "health_check", "type"], "opens a TCP connection"),
        (_with(backends=[{"address": "198.51.100.1"}, {"address": "198.51.100.1"}]), ["body", "backends", 1, "address"], "listed twice"),
    ],
)
def test_bad_services_get_precise_errors(client: TestClient, service, loc, fragment) -> None:  # type: ignore[no-untyped-def]
    found = errors(client.post("/api/v1/services", json=service))
    assert any(l == loc and fragment in m for l, m in found), found


def test_a_second_service_on_the_same_vip_port_and_protocol_is_refused(client: TestClient) -> None:
    assert client.post("/api/v1/services", json=WEB).status_code == 201
    clash = _with(name="web2", backends=[])
    found = errors(client.post("/api/v1/services", json=clash))
    assert found == [(["body", "ports"], "192.0.2.10:80/tcp is already served by service 'web'")]
    assert client.post("/api/v1/services", json=_with(name="dns", protocol="udp", backends=[], health_check={"type": "udp"})).status_code == 201


def test_a_rejected_request_changes_nothing(client: TestClient) -> None:
    created = client.post("/api/v1/services", json=WEB).json()
    before = client.get("/api/v1/services").json()
    audit_before = client.get("/api/v1/audit").json()["count"]
    # A backend on another port makes switching to DR invalid: the whole PATCH must be refused.
    client.post(f"/api/v1/services/{created['id']}/backends", json={"address": "198.51.100.3", "port": 8080})
    mid = client.get("/api/v1/services").json()
    response = client.patch(f"/api/v1/services/{created['id']}", json={"forwarding": "dr", "scheduler": "sh"})
    assert errors(response)[0][0] == ["body", "backends", 2, "port"]
    assert client.get("/api/v1/services").json() == mid
    assert mid["data"][0]["scheduler"] == before["data"][0]["scheduler"] == "wrr"
    assert client.get("/api/v1/audit").json()["count"] == audit_before + 1  # only the backend add


def test_multi_port_services_get_a_firewall_mark(client: TestClient) -> None:
    both = client.post("/api/v1/services", json=_with(name="site", ports=[80, 443], persistence_timeout=300)).json()
    other = client.post("/api/v1/services", json=_with(name="mail", address="192.0.2.11", ports=[25, 587], backends=[])).json()
    assert {both["fwmark"], other["fwmark"]} == {1, 2}
    single = client.patch(f"/api/v1/services/{both['id']}", json={"ports": [443]}).json()
    assert single["fwmark"] is None


def test_drain_and_maintenance_of_a_backend(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    backend = service["backends"][0]
    url = f"/api/v1/services/{service['id']}/backends/{backend['id']}"
    drained = client.patch(url, json={"weight": 0})
    assert drained.status_code == 200 and drained.json()["weight"] == 0
    assert client.patch(url, json={"enabled": False}).json()["enabled"] is False
    plan = client.get("/api/v1/changes").json()["plan"]
    assert plan["items"][0]["action"] == "add"  # nothing committed yet: the whole service is new


def test_backend_health_check_override(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    url = f"/api/v1/services/{service['id']}/backends/{service['backends'][0]['id']}/health-check"
    check = {"type": "http", "http_path": "/healthz", "http_status_codes": [200, 204], "interval": 2}
    assert client.put(url, json=check).json()["http_path"] == "/healthz"
    assert client.delete(url).status_code == 204
    backend = client.get(f"/api/v1/services/{service['id']}/backends/{service['backends'][0]['id']}").json()
    assert backend["health_check"] is None


def test_unknown_fields_are_rejected_not_ignored(client: TestClient) -> None:
    found = errors(client.post("/api/v1/services", json=_with(misc_path="/bin/sh")))
    assert found[0][0] == ["body", "misc_path"]


def test_vip_groups_reject_a_reused_vrid(client: TestClient) -> None:
    group = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.10/24"]}
    assert client.post("/api/v1/vip-groups", json=group).status_code == 201
    found = errors(client.post("/api/v1/vip-groups", json={**group, "name": "back", "addresses": ["192.0.2.20/24"]}))
    assert found[0][0] == ["body", "virtual_router_id"]
    assert "already used by VIP group 'front'" in found[0][1]


def test_duplicate_names_are_field_errors_not_server_errors(client: TestClient) -> None:
    assert client.post("/api/v1/services", json=WEB).status_code == 201
    found = errors(client.post("/api/v1/services", json=_with(address="192.0.2.99", backends=[])))
    assert found == [(["body", "name"], "a service named 'web' exists already")]
    other = client.post("/api/v1/services", json=_with(name="api", address="192.0.2.99", backends=[])).json()
    assert errors(client.patch(f"/api/v1/services/{other['id']}", json={"name": "web"}))[0][0] == ["body", "name"]
    group = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.10/24"]}
    client.post("/api/v1/vip-groups", json=group)
    assert errors(client.post("/api/v1/vip-groups", json={**group, "virtual_router_id": 52}))[0][0] == ["body", "name"]


def test_a_duplicate_backend_is_refused_at_its_field(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    url = f"/api/v1/services/{service['id']}/backends"
    found = errors(client.post(url, json={"address": "198.51.100.1"}))
    assert found[0][0] == ["body", "address"] and "listed twice" in found[0][1]
    second = service["backends"][1]["id"]
    assert errors(client.patch(f"{url}/{second}", json={"address": "198.51.100.1"}))[0][0] == ["body", "address"]


def test_every_request_uses_a_dependency_that_commits_before_responding(app) -> None:  # type: ignore[no-untyped-def]
    """A yield dependency scoped to the request commits after the response is sent, so a client's
    next request could miss what the previous one wrote (the dashboard saw it as random 401s)."""
    from fastapi.routing import APIRoute

    from fulcrum.db import get_session

    def scopes(dependant):  # type: ignore[no-untyped-def]
        for dep in dependant.dependencies:
            if dep.call is get_session:
                yield dep.scope
            yield from scopes(dep)

    def routes(container):  # type: ignore[no-untyped-def]
        for route in container.routes:
            if isinstance(route, APIRoute):
                yield route
            elif hasattr(route, "original_router"):  # FastAPI's included-router wrapper
                yield from routes(route.original_router)

    found = [s for route in routes(app) for s in scopes(route.dependant)]
    assert len(found) > 40 and set(found) == {"function"}
