"""Helpers shared by the API tests (a module of its own: conftest files are not importable by name)."""

from __future__ import annotations

from fastapi.testclient import TestClient

PASSWORD = "correct horse battery"


def login_as(client: TestClient, username: str, role: str) -> TestClient:
    """A second client for another user with `role`, sharing the app and the test transaction."""
    created = client.post("/api/v1/users", json={"username": username, "password": PASSWORD, "role": role})
    assert created.status_code == 201, created.text
    other = TestClient(client.app, base_url="http://testserver")
    token = other.post("/api/v1/auth/login", json={"username": username, "password": PASSWORD}).json()["token"]
    other.headers["Authorization"] = f"Bearer {token}"
    return other


WEB = {
    "name": "web",
    "address": "192.0.2.10",
    "ports": [80],
    "scheduler": "wrr",
    "backends": [{"address": "198.51.100.1", "weight": 2}, {"address": "198.51.100.2"}],
}
