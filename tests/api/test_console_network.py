"""The console menu's management address through the API: its own token and no other, the network
taken over from the kernel when it is not managed yet, only the management interface's IPv4, the
gateway and DNS changed when it is, committed as a revision of its own (confirmed, the candidate's
other edits left pending), and answers that locate each mistake.

The kernel's interfaces and routes are the only stand-in: this host's NICs are not an appliance's.
On the appliance image (tests/image/test_appliance.py) the console menu itself drives this route
against the real kernel, before and after the network is managed.
"""

from __future__ import annotations

import copy
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import WEB, errors, kernel_nic, kernel_runs
from fulcrum.dataplane import links
from fulcrum.services import network_takeover
from fulcrum.services import network as network_service

ROUTE = "/api/v1/node/console/management"
MGMT_MAC, DATA_MAC = "52:54:00:12:34:01", "52:54:00:12:34:02"


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh appliance as the kernel shows it: DHCP on the first NIC, a second NIC unaddressed."""
    nics = [
        kernel_nic("enp0s3", MGMT_MAC, ["10.0.2.15/24", "fe80::5054:ff:fe12:3401/64"], dynamic=["10.0.2.15/24"]),
        kernel_nic("enp0s4", DATA_MAC, []),
    ]
    routes = [links.Route(destination="0.0.0.0/0", gateway="10.0.2.2", interface="enp0s3", table=254,
                          protocol="dhcp", metric=1024)]
    kernel_runs(monkeypatch, nics, routes)


def console(client: TestClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {client.app.state.console_token}"}  # type: ignore[attr-defined]


def set_address(client: TestClient, **body: Any) -> Any:
    return client.put(ROUTE, json=body, headers=console(client))


def test_the_console_token_is_written_for_root_and_taken_nowhere_else(client: TestClient) -> None:
    settings = client.app.state.settings  # type: ignore[attr-defined]
    written = settings.console_token_file
    assert written.read_text().strip() == client.app.state.console_token  # type: ignore[attr-defined]
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    body = {"mac": MGMT_MAC, "address": "10.0.2.16/24"}
    # An admin's own token is not the console's; no token, a wrong one: the same 401.
    assert client.put(ROUTE, json=body).status_code == 401
    for authorization in ("", "Bearer " + "x" * 43):
        assert client.put(ROUTE, json=body, headers={"Authorization": authorization}).status_code == 401
    # The console's token opens no other route.
    assert client.get("/api/v1/services", headers=console(client)).status_code == 401


@pytest.mark.usefixtures("kernel")
def test_an_unmanaged_network_is_taken_over_on_the_consoles_nic_and_committed(client: TestClient) -> None:
    answer = set_address(client, mac=MGMT_MAC.upper(), address="10.0.2.15/24", gateway="10.0.2.2",
                         dns=["10.0.2.3"])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["interface"] == "enp0s3"
    revision = body["revision"]
    # Confirmed, not awaiting it ("validated": this host's engine has no keepalived to reload).
    assert (revision["author"], revision["state"]) == ("console", "validated"), revision
    assert "enp0s3" in revision["message"] and "10.0.2.15/24 via 10.0.2.2" in revision["message"]
    network = client.get("/api/v1/network").json()
    assert network["management_interface"] == "enp0s3"
    nics = {n["name"]: n for n in network["nics"]}
    # Static now, where DHCP gave the address before; the other NIC is listed, unaddressed.
    assert (nics["enp0s3"]["addresses"], nics["enp0s3"]["dhcp4"]) == (["10.0.2.15/24"], False)
    assert (nics["enp0s4"]["mac"], nics["enp0s4"]["addresses"]) == (DATA_MAC, [])
    assert (network["gateway4"], network["dns_servers"]) == ("10.0.2.2", ["10.0.2.3"])
    snapshot = client.get(f"/api/v1/revisions/{revision['number']}").json()["snapshot"]
    assert snapshot["network"] == network
    assert client.get("/api/v1/changes").json()["has_changes"] is False
    actions = [(e["action"], e["username"]) for e in client.get("/api/v1/audit").json()["data"][:3]]
    assert actions == [("revision.confirm", "console"), ("network.update", "console"), ("revision.commit", "console")]


@pytest.mark.usefixtures("kernel")
def test_a_managed_network_changes_its_management_ipv4_only_and_pending_edits_stay_pending(client: TestClient) -> None:
    managed = {
        "hostname": "lb1", "management_interface": "mgmt",
        "nics": [
            {"name": "mgmt", "mac": MGMT_MAC, "addresses": ["192.0.2.5/24", "2001:db8::5/64"]},
            {"name": "sync", "mac": DATA_MAC, "addresses": ["10.99.0.1/30"]},
        ],
        "routes": [{"destination": "10.30.0.0/16", "gateway": "10.99.0.2"}],
        "gateway4": "192.0.2.1", "dns_servers": ["192.0.2.53"], "ntp_servers": ["192.0.2.123"],
    }
    assert client.put("/api/v1/network", json=managed).status_code == 200
    before = client.get("/api/v1/network").json()
    first = client.post("/api/v1/revisions", json={"message": "network", "confirm_within": 60}).json()
    assert client.post(f"/api/v1/revisions/{first['number']}/confirm").status_code == 200
    # Edits the admin has not committed: the console's revision neither applies nor drops them.
    assert client.post("/api/v1/services", json=WEB).status_code == 201
    assert client.put("/api/v1/network", json={**managed, "ntp_servers": ["ntp.example.net"]}).status_code == 200

    answer = set_address(client, address="198.51.100.7/24", gateway="198.51.100.1", dns=["198.51.100.53"])
    assert answer.status_code == 200, answer.text
    revision = answer.json()["revision"]
    assert (answer.json()["interface"], revision["state"]) == ("mgmt", "validated")
    applied = client.get(f"/api/v1/revisions/{revision['number']}").json()["snapshot"]
    assert applied["services"] == [], "the console's revision applied the admin's uncommitted service"
    expected = copy.deepcopy(before)
    expected["nics"][0]["addresses"] = ["198.51.100.7/24", "2001:db8::5/64"]
    expected |= {"gateway4": "198.51.100.1", "dns_servers": ["198.51.100.53"]}
    network = applied["network"]
    assert network == expected
    assert client.get("/api/v1/network").json() == {**network, "ntp_servers": ["ntp.example.net"]}
    pending = client.get("/api/v1/changes").json()
    assert pending["has_changes"] is True and [s["name"] for s in client.get("/api/v1/services").json()["data"]] == ["web"]

    # DHCP: the static IPv4 address and the gateway go, the IPv6 address and the DNS servers stay.
    answer = set_address(client, dhcp=True)
    assert answer.status_code == 200, answer.text
    network = client.get("/api/v1/network").json()
    assert (network["nics"][0]["addresses"], network["nics"][0]["dhcp4"]) == (["2001:db8::5/64"], True)
    assert (network["gateway4"], network["dns_servers"]) == (None, ["198.51.100.53"])


@pytest.mark.usefixtures("kernel")
def test_each_mistake_is_named_at_the_consoles_field_and_changes_nothing(client: TestClient) -> None:
    cases: list[tuple[dict[str, Any], list[Any], str]] = [
        ({"address": "10.0.2.15/24"}, ["body", "mac"], "not managed yet"),
        ({"mac": "52:54:00:ff:ff:ff", "address": "10.0.2.15/24"}, ["body", "mac"], "no network interface"),
        ({"mac": MGMT_MAC}, ["body", "address"], "needs one"),
        ({"mac": MGMT_MAC, "address": "10.0.2.0/24"}, ["body", "address"], "network or broadcast"),
        ({"mac": MGMT_MAC, "dhcp": True, "gateway": "10.0.2.2"}, ["body", "gateway"], "DHCP brings this"),
        ({"mac": MGMT_MAC, "address": "10.0.2.15/24", "gateway": "192.0.2.1"}, ["body", "gateway"], ""),
        ({"mac": MGMT_MAC, "address": "10.0.2.15/33"}, ["body", "address"], ""),
        ({"mac": "not a mac", "address": "10.0.2.15/24"}, ["body", "mac"], ""),
    ]
    for body, loc, words in cases:
        [(found, msg)] = errors(set_address(client, **body))
        assert found == loc and words in msg, (body, found, msg)
    assert client.get("/api/v1/network").json() is None
    assert client.get("/api/v1/revisions").json()["count"] == 0


def test_a_take_over_keeps_the_host_name_and_the_ntp_servers_timesyncd_uses(tmp_path: Path, session: Session) -> None:
    (tmp_path / "timesyncd.conf").write_text(
        "[Time]\nNTP=0.debian.pool.ntp.org 192.0.2.123 bad;name\nFallbackNTP=time.example.net\n"
    )
    kept = network_takeover.kept_settings(tmp_path)
    assert kept["ntp_servers"] == ["0.debian.pool.ntp.org", "192.0.2.123"]
    # The clock shows the same while the network is not managed (the dashboard's take-over keeps them).
    assert network_service.clock(session, tmp_path).ntp_servers == kept["ntp_servers"]
    assert kept.get("hostname") == (socket.gethostname() if network_takeover.HOST_LABEL.fullmatch(socket.gethostname()) else None)
    assert "ntp_servers" not in network_takeover.kept_settings(tmp_path / "absent")
