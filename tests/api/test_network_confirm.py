"""Moving the management address through the API, applied by the engine to a real systemd-networkd
(lab.networkd, private namespaces on this host): the commit awaits confirmation by default, and
when nobody confirms, the previous network comes back by itself."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from fulcrum.apply.client import LocalApplier
from fulcrum.apply.daemons.networkd import NetworkdDaemon, NetworkPaths
from fulcrum.models._types import utcnow
from fulcrum.services import revisions
from lab.networkd import Networkd, available, engine, private_networkd
from lab.wait import wait_until


@pytest.fixture
def networkd(tmp_path: Path) -> Iterator[Networkd]:
    if not available():
        pytest.skip("needs root, systemd-networkd and dbus-daemon")
    with private_networkd(tmp_path) as running:
        yield running


@pytest.fixture
def applier(tmp_path: Path, networkd: Networkd) -> LocalApplier:
    """The engine with the network daemon alone (this host has no IPVS for keepalived)."""
    paths = NetworkPaths(networkd.directory, networkd.runtime, readback_timeout=20)
    return LocalApplier(engine(tmp_path, NetworkdDaemon(paths, networkd.prefix)))


def network(networkd: Networkd, address: str) -> dict[str, Any]:
    return {
        "hostname": "lb1",
        "management_interface": "nic0",
        "nics": [{"name": "nic0", "mac": networkd.macs["nic0"], "permanent_mac": False, "addresses": [address]}],
    }


def ipv4(networkd: Networkd) -> set[str]:
    return {a for a in networkd.addresses("nic0") if "." in a}


def test_an_unconfirmed_management_move_puts_the_previous_network_back(
    client: TestClient, session: Session, applier: LocalApplier, networkd: Networkd
) -> None:
    assert client.put("/api/v1/node", json={"name": "lb1", "vrrp_interface": "nic0"}).status_code == 200
    assert client.put("/api/v1/network", json=network(networkd, "10.5.0.1/24")).status_code == 200
    first = client.post("/api/v1/revisions", json={"message": "take the network over"})
    assert first.status_code == 201, first.text
    assert first.json()["state"] == "awaiting_confirm"  # taking over moves management too
    assert client.post("/api/v1/revisions/1/confirm").json()["state"] == "applied"
    assert ipv4(networkd) == {"10.5.0.1/24"}

    assert client.put("/api/v1/network", json=network(networkd, "10.5.0.2/24")).status_code == 200
    answer = client.post("/api/v1/revisions", json={"message": "move management"})
    assert answer.status_code == 201, answer.text
    moved = answer.json()
    assert moved["state"] == "awaiting_confirm" and moved["confirm_deadline"] is not None
    wait_until(lambda: ipv4(networkd), 20, what="the new management address", expect={"10.5.0.2/24"})

    reverted = revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=121))
    assert reverted is not None and reverted.state == "applied" and reverted.rollback_of == 1
    wait_until(lambda: ipv4(networkd), 20, what="the previous management address", expect={"10.5.0.1/24"})
    assert client.get("/api/v1/network").json()["nics"][0]["addresses"] == ["10.5.0.1/24"]
    assert client.get(f"/api/v1/revisions/{moved['number']}").json()["state"] == "reverted"


def test_an_unconfirmed_take_over_gives_the_network_back(
    client: TestClient, session: Session, applier: LocalApplier, networkd: Networkd
) -> None:
    assert client.put("/api/v1/node", json={"name": "lb1", "vrrp_interface": "nic0"}).status_code == 200
    assert client.post("/api/v1/revisions", json={"message": "before the network is managed"}).status_code == 201
    assert client.put("/api/v1/network", json=network(networkd, "10.5.0.1/24")).status_code == 200
    taken = client.post("/api/v1/revisions", json={"message": "take the network over"}).json()
    assert taken["state"] == "awaiting_confirm"
    wait_until(lambda: ipv4(networkd), 20, what="the managed address", expect={"10.5.0.1/24"})
    reverted = revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=121))
    assert reverted is not None and reverted.state == "applied"
    assert list(networkd.runtime.iterdir()) == []  # networkd is left with the console's file alone
    assert client.get("/api/v1/network").json() is None
