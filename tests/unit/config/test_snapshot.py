"""The desired-state model: cross-field rules and canonical form."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fulcrum.config.snapshot import Backend, ConfigSnapshot, HealthCheck, Service, VipGroup, parsed_snapshot, parsed_vrrp_part


def service(**fields) -> Service:  # type: ignore[no-untyped-def]
    base = {"name": "web", "address": "192.0.2.10", "ports": [80]}
    return Service.model_validate({**base, **fields})


def rejects(fragment: str, build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as caught:
        build()
    assert fragment in str(caught.value)


def test_canonical_json_is_stable_and_digest_tracks_content() -> None:
    a = ConfigSnapshot(services=[service(backends=[{"address": "198.51.100.1"}])])
    b = ConfigSnapshot.model_validate_json(a.canonical_json())
    assert a.canonical_json() == b.canonical_json() and a.digest() == b.digest()
    c = ConfigSnapshot(services=[service(scheduler="rr", backends=[{"address": "198.51.100.1"}])])
    assert c.digest() != a.digest()


def test_health_check_defaults_detect_a_dead_backend_in_about_three_seconds() -> None:
    check = HealthCheck()
    worst_case = check.interval + check.timeout + check.retries * (check.retry_delay + check.timeout)
    assert worst_case <= 3.5


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"ports": [80, 80]}, "lists a port twice"),
        ({"ports": [80, 443]}, "needs a fwmark"),
        ({"fwmark": 3}, "only multi-port services"),
        ({"scheduler": "rr", "scheduler_fallback": True}, "apply only to sh and mh"),
        ({"one_packet_scheduling": True}, "only to udp"),
        ({"forwarding": "tun", "tunnel_type": "gue"}, "needs a port"),
        ({"tunnel_type": "gre"}, "only to tun"),
        ({"forwarding": "dr", "one_arm": True}, "only to nat"),
        ({"snat_address": "192.0.2.1"}, "only to one_arm"),
        ({"persistence_prefix": 24}, "needs persistence_timeout"),
        ({"persistence_timeout": 60, "persistence_prefix": 64}, "at most 32"),
        ({"sorry_server": {"address": "2001:db8::1"}}, "IPv6 but the service address is IPv4"),
        ({"address": "fe80::1%eth0"}, "zone"),
        ({"name": "a b"}, "pattern"),
    ],
)
def test_service_rules(fields, fragment) -> None:  # type: ignore[no-untyped-def]
    rejects(fragment, lambda: service(**fields))


def test_fwmark_service_backends_take_no_port_and_dr_keeps_the_port() -> None:
    rejects("takes no port", lambda: service(ports=[80, 443], fwmark=1, backends=[{"address": "198.51.100.1", "port": 80}]))
    rejects("cannot change the destination port", lambda: service(forwarding="dr", backends=[{"address": "198.51.100.1", "port": 81}]))
    assert service(forwarding="dr", backends=[{"address": "198.51.100.1", "port": 80}]).backends[0].port == 80


def test_backend_thresholds() -> None:
    rejects("needs an upper_threshold", lambda: Backend(address="198.51.100.1", lower_threshold=5))
    rejects("must be below", lambda: Backend(address="198.51.100.1", upper_threshold=5, lower_threshold=5))


def test_snapshot_rejects_clashing_listeners_fwmarks_and_vrids() -> None:
    rejects("already served by service 'a'", lambda: ConfigSnapshot(services=[service(name="a"), service(name="b")]))
    both = {"ports": [80, 443], "fwmark": 1}
    rejects("fwmark: 1 is used by", lambda: ConfigSnapshot(services=[service(name="a", **both), service(name="b", address="192.0.2.11", **both)]))
    group = {"virtual_router_id": 7, "addresses": ["192.0.2.10/24"]}
    rejects("VRID 7 is already used", lambda: ConfigSnapshot(vip_groups=[VipGroup(name="a", **group), VipGroup(name="b", **{**group, "addresses": ["192.0.2.11/24"]})]))
    # The same VRID is fine once per address family (VRRPv3 runs IPv4 and IPv6 separately).
    v6 = VipGroup(name="b", virtual_router_id=7, addresses=["2001:db8::10/64"])
    snapshot = ConfigSnapshot(vip_groups=[VipGroup(name="a", **group), v6])
    assert [g.name for g in snapshot.vip_groups] == ["a", "b"]


def test_vip_group_is_one_family() -> None:
    rejects("mixes IPv4 and IPv6", lambda: VipGroup(name="g", virtual_router_id=1, addresses=["192.0.2.1/24", "2001:db8::1/64"]))


def test_a_stored_snapshot_is_parsed_once_per_text():
    first = ConfigSnapshot.model_validate({"services": [{"name": "web", "address": "192.0.2.1", "ports": [80]}]})
    second = first.model_copy(update={"services": []})
    text = first.canonical_json()
    parsed = parsed_snapshot(text)
    assert parsed == first
    assert parsed_snapshot("".join(text)) is parsed, "the same text (another str object) parsed again"
    assert parsed_snapshot(second.canonical_json()) == second


def test_the_vrrp_part_of_a_stored_snapshot_is_its_node_and_vip_groups_without_reading_its_services():
    """What the HA watcher parses every tick: at 10,000 backends a whole parse took seconds of the
    emulated VM's CPU after each commit."""
    snapshot = ConfigSnapshot.model_validate({
        "node": {"name": "lb1", "vrrp_interface": "eth0", "peer_address": "10.0.0.3", "priority": 150},
        "vip_groups": [{"name": "front", "virtual_router_id": 51, "addresses": ["10.0.0.100/32"]}],
        "services": [{"name": "web", "address": "10.0.0.100", "ports": [80], "backends": [{"address": "10.1.0.21"}]}],
    })  # fmt: skip
    text = snapshot.canonical_json()
    part = parsed_vrrp_part(text)
    assert (part.node, part.vip_groups) == (snapshot.node, snapshot.vip_groups)
    assert parsed_vrrp_part("".join(text)) is part  # once per text
    # Its services are not validated: a backend no whole parse would take does not matter here.
    unread = text.replace('"10.1.0.21"', '"not an address"')
    with pytest.raises(ValidationError):
        parsed_snapshot(unread)
    assert parsed_vrrp_part(unread).node == snapshot.node
