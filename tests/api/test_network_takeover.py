"""GET /network/takeover: the dashboard's "Manage this network" form starts from the kernel's
interfaces and routes as the API reads them, the same reading the console's first management
address commits (fulcrum.services.network_takeover). Nothing is saved."""

from __future__ import annotations

import socket

import pytest
from fastapi.testclient import TestClient

from apitest import kernel_nic, kernel_runs
from fulcrum.dataplane import links
from fulcrum.services import network_takeover

ROUTE = "/api/v1/network/takeover"


def route(destination: str, gateway: str | None = None, *, table: int = 254, protocol: str = "boot",
          metric: int | None = None) -> links.Route:
    return links.Route(destination=destination, gateway=gateway, interface="eth0", table=table, protocol=protocol,
                       metric=metric)


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    nics = [
        kernel_nic("lo", "00:00:00:00:00:00", ["127.0.0.1/8"], kind="loopback"),
        kernel_nic("eth0", "52:54:00:00:00:01", ["192.0.2.2/24", "fd00::2/64", "fd00::99/64", "fe80::1/64"],
                   dynamic=("fd00::99/64",)),
        kernel_nic("eth1", "52:54:00:00:00:02", [], bond_master="bond0"),
        kernel_nic("eth2", "52:54:00:00:00:03", [], bond_master="bond0"),
        kernel_nic("bond0", "52:54:00:00:00:02", ["10.0.0.2/24"], dynamic=("10.0.0.2/24",), kind="bond",
                   bond_members=["eth1", "eth2"]),
        kernel_nic("ifb0", "9e:00:00:00:00:09", [], kind="virtual"),
    ]
    routes = [
        route("0.0.0.0/0", "192.0.2.1"),
        route("192.0.2.0/24", protocol="kernel"),
        route("::/0", "fe80::1", protocol="ra", metric=1024),
        route("10.30.0.0/16", "192.0.2.254", table=100, protocol="static"),
        route("10.40.0.0/16", "192.0.2.253", protocol="dhcp"),
        route("fd30::/48", "fd00::fe", metric=1024),
    ]
    kernel_runs(monkeypatch, nics, routes)


@pytest.mark.usefixtures("kernel")
def test_the_take_over_starts_from_the_kernels_interfaces_and_configured_routes(client: TestClient) -> None:
    pending = client.get("/api/v1/changes").json()["text"]
    taken = client.get(ROUTE).json()
    # Static and dynamic addresses as they are held; bond members bare; link-local, loopback and
    # virtual devices left out.
    assert [{k: v for k, v in nic.items() if k in ("name", "addresses", "dhcp4", "ipv6_autoconf")}
            for nic in taken["nics"]] == [
        {"name": "eth0", "addresses": ["192.0.2.2/24", "fd00::2/64"], "dhcp4": False, "ipv6_autoconf": True},
        {"name": "eth1", "addresses": [], "dhcp4": False, "ipv6_autoconf": False},
        {"name": "eth2", "addresses": [], "dhcp4": False, "ipv6_autoconf": False},
    ]
    [bond] = taken["bonds"]
    assert (bond["name"], bond["members"], bond["dhcp4"]) == ("bond0", ["eth1", "eth2"], True)
    # The main table's IPv4 default gateway; not a router advertisement's (SLAAC brings it back),
    # nor what the kernel or DHCP made.
    assert (taken["gateway4"], taken["gateway6"]) == ("192.0.2.1", None)
    assert [(r["destination"], r["gateway"], r["table"], r["metric"]) for r in taken["routes"]] == [
        ("10.30.0.0/16", "192.0.2.254", 100, None),
        ("fd30::/48", "fd00::fe", None, 1024),
    ]
    # Not reached at an address of these: the first interface with one manages.
    assert taken["management_interface"] == "eth0"
    # The host name is kept (the dashboard's own take-over reset it to "fulcrum"), where it is one
    # the model takes.
    hostname = socket.gethostname()
    assert taken["hostname"] == (hostname if network_takeover.HOST_LABEL.fullmatch(hostname) else "fulcrum")
    # Nothing was saved: the network is still not managed, and the pending changes are as they were.
    assert client.get("/api/v1/network").json() is None
    assert client.get("/api/v1/changes").json()["text"] == pending


@pytest.mark.usefixtures("kernel")
def test_the_management_interface_is_the_one_the_dashboard_was_opened_at(client: TestClient) -> None:
    assert client.get(ROUTE, params={"address": "10.0.0.2"}).json()["management_interface"] == "bond0"
    assert client.get(ROUTE, params={"address": "[fd00::2]"}).json()["management_interface"] == "eth0"
    assert client.get(ROUTE, params={"address": "dashboard.example.net"}).json()["management_interface"] == "eth0"


def test_interfaces_that_cannot_be_read_are_a_503(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> list:
        raise FileNotFoundError("/sys/class/net")

    monkeypatch.setattr(network_takeover, "read_nics", unreadable)
    answer = client.get(ROUTE)
    assert answer.status_code == 503 and "cannot read this node's interfaces" in answer.json()["detail"], answer.text


def test_a_kernel_network_the_model_refuses_is_a_409_naming_where(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A route through a gateway only a DHCP lease's network holds: the model wants the gateway on
    a static address's network, so the take-over cannot be offered as it is."""
    nics = [kernel_nic("eth0", "52:54:00:00:00:01", ["192.0.2.2/24"], dynamic=("192.0.2.2/24",))]
    kernel_runs(monkeypatch, nics, [route("10.30.0.0/16", "192.0.2.254", protocol="static")])
    answer = client.get(ROUTE)
    assert answer.status_code == 409, answer.text
    assert answer.json()["detail"].startswith(
        "this node's network cannot be taken over as the kernel runs it: routes[0].gateway: 192.0.2.254 is on no"
    ), answer.text
    assert client.get("/api/v1/network").json() is None
