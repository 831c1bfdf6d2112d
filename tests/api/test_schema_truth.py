"""The OpenAPI document tells the truth: declared errors, JSON types as the schema states them,
and an Allow header naming every method of a path."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from apitest import WEB


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/services", {**WEB, "enabled": 0}, "enabled"),
        ("/api/v1/services", {**WEB, "ports": ["80"]}, "ports"),
        ("/api/v1/services", {**WEB, "quorum": True}, "quorum"),
        ("/api/v1/tokens", {"name": "ci", "expires_in_days": True}, "expires_in_days"),
        ("/api/v1/revisions", {"confirm_within": "60"}, "confirm_within"),
        ("/api/v1/ha/maintenance", {"enabled": 1}, "enabled"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused(client: TestClient, path: str, body: dict, field: str) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert any(e["loc"][:2] == ["body", field] for e in response.json()["detail"]), response.text


def test_an_integral_number_is_an_integer_as_json_schema_says(client: TestClient) -> None:
    created = client.post("/api/v1/tokens", json={"name": "ci", "expires_in_days": 30.0})
    assert created.status_code == 201, created.text


def test_405_names_every_method_of_the_path(client: TestClient) -> None:
    for method, path, allowed in [("PUT", "/api/v1/services", {"GET", "HEAD", "POST"}),
                                  ("POST", "/api/v1/services/1", {"GET", "HEAD", "PATCH", "DELETE"}),
                                  ("OPTIONS", "/api/v1/setup", {"GET", "HEAD", "POST"})]:
        response = client.request(method, path)
        assert response.status_code == 405
        assert {m.strip() for m in response.headers["allow"].split(",")} == allowed


def test_the_schema_declares_the_errors_an_operation_can_answer(client: TestClient) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    login = paths["/api/v1/auth/login"]["post"]["responses"]
    assert {"400", "401", "413", "422", "429"} <= login.keys()
    patch_service = paths["/api/v1/services/{service_id}"]["patch"]["responses"]
    assert {"400", "401", "403", "404", "409", "413", "422"} <= patch_service.keys()
    assert {"401", "403"} <= paths["/api/v1/status"]["get"]["responses"].keys()
    port = paths["/api/v1/services/{service_id}/backends"]["post"]
    assert "minimum" in str(client.get("/api/v1/openapi.json").json()["components"]["schemas"]["BackendCreate"])
    assert port["responses"]["201"]
