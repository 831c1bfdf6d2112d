"""Helpers shared by the API tests (a module of its own: conftest files are not importable by name)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the lab package

from fulcrum.dataplane import links  # noqa: E402
from fulcrum.dataplane.nics import KernelNic  # noqa: E402
from fulcrum.services import network_takeover  # noqa: E402
from lab.wait import wait_until  # noqa: E402

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


@contextlib.contextmanager
def serve(app, lifespan: str = "off") -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The already-started app behind a real uvicorn on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan=lifespan, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 10, what="uvicorn to start", interval=0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def errors(response: Any) -> list[tuple[list[Any], str]]:
    """(location, message) of each error, as the API sends them: a model's cross-field rule is
    located at its field by the API (fulcrum.errors.at_the_field), not by the reader."""
    assert response.status_code == 422, response.text
    return [(list(error["loc"]), error["msg"]) for error in response.json()["detail"]]


def kernel_nic(name: str, mac: str, prefixed: list[str], dynamic: Sequence[str] = (), **fields: Any) -> KernelNic:
    """An interface as fulcrum.dataplane.nics reads it from the kernel (a NIC unless `kind` says)."""
    return KernelNic(**{
        "name": name, "kind": "physical", "mac": mac, "driver": "virtio_net", "operstate": "up", "carrier": True,
        "speed_mbps": None, "mtu": 1500, "addresses": [a.split("/")[0] for a in prefixed],
        "prefixed_addresses": prefixed, "dynamic_addresses": list(dynamic), **fields,
    })


def kernel_runs(monkeypatch: Any, nics: list[KernelNic], routes: list[links.Route]) -> None:
    """The take-over (fulcrum.services.network_takeover) reads these as the kernel's interfaces and routes."""
    monkeypatch.setattr(network_takeover, "read_nics", lambda: nics)
    monkeypatch.setattr(links, "read_routes", lambda: routes)
