"""Addresses that pass keepalived -t but can never carry a service are refused, with the reason;
a backend that is the appliance itself is a plan warning; an allow-list needs ports."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fulcrum.config.snapshot import ConfigSnapshot, Firewall, Service, VipGroup
from fulcrum.services.plan import warnings

SPECIAL = [
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("::", "unspecified"),
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("::1", "loopback"),
    ("224.0.0.18", "multicast"),
    ("239.1.2.3", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("::ffff:1.2.3.4", "write it as the IPv4 address 1.2.3.4"),
    ("fe80::1", "link-local"),
]


def error_of(build) -> tuple[tuple, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as caught:
        build()
    [error] = caught.value.errors()
    return error["loc"], error["msg"]


@pytest.mark.parametrize(("address", "reason"), SPECIAL)
def test_a_special_address_is_no_vip(address: str, reason: str) -> None:
    loc, msg = error_of(lambda: Service.model_validate({"name": "web", "address": address, "ports": [80]}))
    assert loc == ("address",) and reason in msg and address in msg


@pytest.mark.parametrize(("address", "reason"), SPECIAL)
def test_a_special_address_is_no_backend_or_sorry_server(address: str, reason: str) -> None:
    family = "2001:db8::10" if ":" in address else "192.0.2.10"
    loc, msg = error_of(lambda: Service.model_validate({"name": "web", "address": family, "ports": [80], "backends": [{"address": address}]}))
    assert loc == ("backends", 0, "address") and reason in msg
    loc, msg = error_of(lambda: Service.model_validate({"name": "web", "address": family, "ports": [80], "sorry_server": {"address": address}}))
    assert loc == ("sorry_server", "address") and reason in msg


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1/8", "loopback"),
        ("0.0.0.0/0", "unspecified"),
        ("::1/128", "loopback"),
        ("224.0.0.5/32", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("192.0.2.255/24", "broadcast address of 192.0.2.0/24"),
        ("::ffff:1.2.3.4/128", "IPv4-mapped"),
        ("fe80::1%eth0/64", "zone"),
        ("banana", "not an address with a prefix length"),
    ],
)
def test_a_special_address_is_no_vip_group_address(address: str, reason: str) -> None:
    loc, msg = error_of(lambda: VipGroup.model_validate({"name": "g", "virtual_router_id": 1, "addresses": [address]}))
    assert loc == ("addresses", 0) and reason in msg


def test_ordinary_addresses_still_pass() -> None:
    backends = [{"address": "10.0.0.1"}, {"address": "169.254.0.5"}]
    fields = {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": backends}
    service = Service.model_validate(fields)
    assert [str(backend.address) for backend in service.backends] == ["10.0.0.1", "169.254.0.5"]
    addresses = ["192.0.2.10/24", "192.0.2.11/31", "198.51.100.255/32"]
    group = VipGroup.model_validate({"name": "g", "virtual_router_id": 1, "addresses": addresses})
    assert [str(address) for address in group.addresses] == addresses


def test_a_management_allow_list_needs_ports() -> None:
    loc, msg = error_of(lambda: Firewall(management_ports=[], management_allow=["10.0.0.0/8"]))
    assert "management_ports: a management allow-list needs the ports it guards" in msg
    assert Firewall(management_ports=[], management_allow=[]).management_ports == []


def test_a_backend_that_is_the_appliance_itself_is_a_warning() -> None:
    snapshot = ConfigSnapshot.model_validate(
        {
            "services": [
                {"name": "loop", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "192.0.2.10", "port": 8080}]},
                {"name": "other", "address": "192.0.2.20", "ports": [80], "backends": [{"address": "192.0.2.10"}, {"address": "10.0.0.1"}, {"address": "10.0.0.2"}]},
            ],
            "vip_groups": [{"name": "g", "virtual_router_id": 1, "addresses": ["192.0.2.10/24", "192.0.2.20/24"]}],
            "node": {"unicast_source": "10.0.0.1", "peer_address": "10.0.0.2"},
        }
    )
    found = warnings(snapshot)
    assert "service loop: backend 192.0.2.10 is the service's own address; it would balance to itself" in found
    assert "service other: backend 192.0.2.10 is a VIP of this appliance, not a real server" in found
    assert "service other: backend 10.0.0.1 is this node's VRRP address, not a real server" in found
    assert "service other: backend 10.0.0.2 is the peer node's address, not a real server" in found
