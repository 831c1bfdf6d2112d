"""Expected IPVS tables from snapshots, their comparison with the kernel's, and netlink decoding.

Reading the kernel itself needs IPVS; it runs in the VM (tests/kernel). Here the decoders get
messages built by pyroute2's marshalling, an independent encoder, shaped as the kernel sends them.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import socket
import sys
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyroute2.netlink.generic.ipvs import ipvsmsg

from fulcrum.apply.result import DataplaneStats
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.config.types import FailureAction
from fulcrum.dataplane.ipvs_table import (
    Counters,
    IpvsTable,
    IpvsUnavailable,
    RealServer,
    ServiceKey,
    VirtualService,
    compare,
    down_real_servers,
    expected_ipvs,
    ipvs_available,
    read_ipvs,
    decode_real_server,
    decode_service,
    decode_service_key,
)
from fulcrum.dataplane.ipvs_netlink import (
    CTRL_ATTR_FAMILY_NAME,
    DEST_ADDR,
    DEST_FWD_METHOD,
    DEST_PORT,
    DEST_WEIGHT,
    CTRL_CMD_GETFAMILY,
    GENL_ID_CTRL,
    IPVS_CMD_ATTR_DEST,
    IPVS_CMD_ATTR_SERVICE,
    Attributes,
    GenericNetlinkSocket,
    NetlinkError,
    attribute,
)


def _snapshot(*services: dict[str, Any]) -> ConfigSnapshot:
    return ConfigSnapshot.model_validate({"services": list(services)})


def _service(**fields: Any) -> dict[str, Any]:
    return {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "10.0.0.11"}], **fields}


# --- expected_ipvs ---------------------------------------------------------------------------


def test_nat_service() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(
                scheduler="wrr",
                backends=[{"address": "10.0.0.11"}, {"address": "10.0.0.12", "port": 8080, "weight": 5}],
            )
        )
    )
    (service,) = table.services
    assert service.key == ServiceKey(family=4, protocol="tcp", address="192.0.2.10", port=80)
    assert (service.name, service.scheduler, service.flags) == ("web", "wrr", ())
    assert (service.persistence_timeout, service.persistence_prefix, service.sorry_server) == (None, None, None)
    assert service.real_servers == (
        RealServer("10.0.0.11", 80, 1, "nat", failure_action=FailureAction.REMOVE),
        RealServer("10.0.0.12", 8080, 5, "nat", failure_action=FailureAction.REMOVE),
    )


def test_dr_and_tunnel_forwarding() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(name="dr", forwarding="dr"),
            _service(name="ipip", ports=[81], forwarding="tun"),
            _service(name="gue", ports=[82], forwarding="tun", tunnel_type="gue", tunnel_port=6080),
            _service(name="gre", ports=[83], forwarding="tun", tunnel_type="gre"),
        )
    )
    servers = {service.name: service.real_servers[0] for service in table.services}
    assert (servers["dr"].forwarding, servers["dr"].tunnel_type) == ("dr", None)
    ipip = servers["ipip"]
    assert (ipip.forwarding, ipip.tunnel_type, ipip.tunnel_port) == ("tun", "ipip", None)
    assert (servers["gue"].tunnel_type, servers["gue"].tunnel_port) == ("gue", 6080)
    assert (servers["gre"].tunnel_type, servers["gre"].tunnel_port) == ("gre", None)
    assert servers["gue"].port == 82  # DR and TUN keep the service port


def test_fwmark_services_have_no_address_and_port_zero_real_servers() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(name="v4", ports=[80, 443], fwmark=7),
            _service(
                name="v6", address="2001:db8::10", ports=[80, 443], fwmark=8, backends=[{"address": "2001:db8::11"}]
            ),
        )
    )
    v4, v6 = table.services  # in the renderer's order: by name
    assert v4.key == ServiceKey(family=4, fwmark=7)
    assert v6.key == ServiceKey(family=6, fwmark=8)
    assert v4.real_servers[0].key == ("10.0.0.11", 0)
    assert v6.real_servers[0].key == ("2001:db8::11", 0)
    assert str(v4.key) == "fwmark 7 (IPv4)"


def test_disabled_services_and_backends_are_not_in_ipvs() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(name="off", enabled=False),
            _service(
                name="half", ports=[81], backends=[{"address": "10.0.0.11"}, {"address": "10.0.0.12", "enabled": False}]
            ),
            _service(name="drained", ports=[82], backends=[{"address": "10.0.0.11", "enabled": False}]),
        )
    )
    assert [service.name for service in table.services] == ["half"]
    assert [server.address for server in table.services[0].real_servers] == ["10.0.0.11"]


def test_weights_and_failure_actions_follow_the_snapshot() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(
                health_check={"type": "tcp", "on_failure": "weight_zero"},
                backends=[
                    {"address": "10.0.0.11", "weight": 0},
                    {"address": "10.0.0.12", "health_check": {"type": "none"}},
                    {"address": "10.0.0.13", "upper_threshold": 100, "lower_threshold": 50},
                ],
            )
        )
    )
    drained, unchecked, limited = table.services[0].real_servers
    assert (drained.weight, drained.failure_action) == (0, FailureAction.WEIGHT_ZERO)
    assert unchecked.failure_action is None
    assert (limited.upper_threshold, limited.lower_threshold) == (100, 50)


def test_persistence_and_flags() -> None:
    table = expected_ipvs(
        _snapshot(
            _service(name="p4", persistence_timeout=300),
            _service(name="p4net", ports=[81], persistence_timeout=60, persistence_prefix=24),
            _service(
                name="p6",
                address="2001:db8::10",
                persistence_timeout=60,
                persistence_prefix=64,
                backends=[{"address": "2001:db8::11"}],
            ),
            _service(name="sh", ports=[82], scheduler="sh", scheduler_fallback=True, scheduler_port=True),
            _service(name="dns", ports=[53], protocol="udp", one_packet_scheduling=True, health_check={"type": "udp"}),
        )
    )
    services = {service.name: service for service in table.services}
    assert (services["p4"].persistence_timeout, services["p4"].persistence_prefix) == (300, 32)
    assert services["p4net"].persistence_prefix == 24
    assert services["p6"].persistence_prefix == 64
    assert services["sh"].flags == ("sched-fallback", "sched-port")
    assert services["dns"].flags == ("one-packet",)
    assert services["dns"].key.protocol == "udp"


# --- compare ---------------------------------------------------------------------------------

KEY = ServiceKey(family=4, protocol="tcp", address="192.0.2.10", port=80)


def _expected(**fields: Any) -> VirtualService:
    servers = (
        RealServer("10.0.0.11", 80, 1, "nat", failure_action=FailureAction.REMOVE),
        RealServer("10.0.0.12", 80, 2, "nat", failure_action=FailureAction.WEIGHT_ZERO),
        RealServer("10.0.0.13", 80, 1, "nat", failure_action=None),
    )
    return VirtualService(key=KEY, scheduler="wlc", real_servers=servers, name="web", **fields)


def _actual(expected: VirtualService, **fields: Any) -> VirtualService:
    """What the kernel reports: no names, no failure actions, counters filled in."""
    servers = tuple(replace(server, failure_action=None, counters=Counters()) for server in expected.real_servers)
    kernel: dict[str, Any] = {"name": None, "sorry_server": None, "counters": Counters(), "real_servers": servers}
    return replace(expected, **{**kernel, **fields})


def _tables(expected: VirtualService, actual: VirtualService | None) -> tuple[IpvsTable, IpvsTable]:
    return IpvsTable((expected,)), IpvsTable((actual,) if actual else ())


def test_a_matching_kernel_has_no_mismatches() -> None:
    want = _expected()
    assert compare(*_tables(want, _actual(want))) == []
    assert down_real_servers(*_tables(want, _actual(want))) == []


def test_missing_and_unexpected_services() -> None:
    want = _expected()
    stray = VirtualService(key=ServiceKey(family=6, fwmark=9), scheduler="rr")
    problems = compare(IpvsTable((want,)), IpvsTable((stray,)))
    assert problems == [
        "service web (tcp 192.0.2.10:80) is not in IPVS",
        "service fwmark 9 (IPv6) is in IPVS but not in the configuration",
    ]


def test_scheduler_flags_and_persistence_differences() -> None:
    want = _expected(persistence_timeout=300, persistence_prefix=24)
    have = _actual(want, scheduler="rr", flags=("one-packet",), persistence_prefix=32)
    assert compare(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): scheduler is rr in IPVS, expected wlc",
        "service web (tcp 192.0.2.10:80): flags are one-packet in IPVS, expected none",
        "service web (tcp 192.0.2.10:80): persistence groups clients by /32 in IPVS, expected /24",
    ]
    assert compare(*_tables(want, _actual(want, persistence_timeout=None, persistence_prefix=None))) == [
        "service web (tcp 192.0.2.10:80): persistence is off in IPVS, expected 300 s"
    ]


def test_real_server_differences() -> None:
    want = _expected()
    first, second, third = _actual(want).real_servers
    stray = RealServer("10.0.0.99", 80, 1, "nat")
    have = _actual(
        want,
        real_servers=(
            replace(first, weight=7, forwarding="dr"),
            replace(second, upper_threshold=10),
            third,
            stray,
        ),
    )
    assert compare(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): real server 10.0.0.11:80: forwarding is dr in IPVS, expected nat",
        "service web (tcp 192.0.2.10:80): real server 10.0.0.11:80: weight is 7 in IPVS, expected 1",
        "service web (tcp 192.0.2.10:80): real server 10.0.0.12:80: thresholds are 10/0 in IPVS, "
        "expected 0/0 (upper/lower)",
        "service web (tcp 192.0.2.10:80): real server 10.0.0.99:80 is in IPVS but not in the configuration",
    ]


def test_checked_real_servers_may_be_absent_unchecked_ones_may_not() -> None:
    want = _expected()
    have = _actual(want, real_servers=())
    assert compare(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): real server 10.0.0.13:80 has no health check, so keepalived "
        "keeps it in IPVS, but it is missing"
    ]
    assert down_real_servers(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): real server 10.0.0.11:80 is down or not yet checked",
        "service web (tcp 192.0.2.10:80): real server 10.0.0.12:80 is down or not yet checked",
    ]


def test_weight_zero_is_a_failed_check_only_where_that_is_the_failure_action() -> None:
    want = _expected()
    first, second, third = _actual(want).real_servers
    have = _actual(want, real_servers=(replace(first, weight=0), replace(second, weight=0), third))
    assert compare(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): real server 10.0.0.11:80: weight is 0 in IPVS, expected 1"
    ]
    assert down_real_servers(*_tables(want, have)) == [
        "service web (tcp 192.0.2.10:80): real server 10.0.0.12:80 is down: its check failed, so its weight "
        "is 0 (on_failure weight_zero)"
    ]


def test_the_sorry_server_replacing_the_pool_is_not_a_mismatch() -> None:
    want = _expected(sorry_server="10.0.0.250")
    sorry = RealServer("10.0.0.250", 80, 1, "nat")
    have = _actual(want, real_servers=(sorry,))  # quorum lost: keepalived swapped the pool out
    assert compare(*_tables(want, have)) == []
    assert len(down_real_servers(*_tables(want, have))) == 3


# --- decoding netlink messages ---------------------------------------------------------------


def _decoded(attrs: list[tuple[str, Any]]) -> Attributes:
    """The message's top-level attributes, encoded by pyroute2 and parsed by Fulcrum's reader."""
    message = ipvsmsg()
    message["cmd"] = 4
    message["version"] = 1
    message["attrs"] = attrs
    message.encode()
    return Attributes.parse(message.data, 20)  # after nlmsghdr (16 bytes) and genlmsghdr (4)


def _stats(**values: int) -> dict[str, Any]:
    return {"attrs": [(f"IPVS_STATS_ATTR_{name.upper()}", value) for name, value in values.items()]}


def test_decoding_a_persistent_ipv4_service() -> None:
    message = _decoded(
        [
            (
                "IPVS_CMD_ATTR_SERVICE",
                {
                    "attrs": [
                        ("IPVS_SVC_ATTR_AF", socket.AF_INET),
                        ("IPVS_SVC_ATTR_PROTOCOL", socket.IPPROTO_TCP),
                        ("IPVS_SVC_ATTR_ADDR", "192.0.2.10"),
                        ("IPVS_SVC_ATTR_PORT", 80),
                        ("IPVS_SVC_ATTR_SCHED_NAME", "wlc"),
                        ("IPVS_SVC_ATTR_FLAGS", {"flags": 0x1 | 0x2, "mask": 0xFFFFFFFF}),  # persistent, hashed
                        ("IPVS_SVC_ATTR_TIMEOUT", 300),
                        ("IPVS_SVC_ATTR_NETMASK", "255.255.255.0"),
                        ("IPVS_SVC_ATTR_STATS64", _stats(conns=5, inbytes=1 << 40, cps=2)),
                    ]
                },
            )
        ]
    )
    attrs = message.nested(IPVS_CMD_ATTR_SERVICE)
    key = decode_service_key(attrs)
    assert key == ServiceKey(family=4, protocol="tcp", address="192.0.2.10", port=80)
    server = RealServer("10.0.0.11", 80, 1, "nat", counters=Counters(activeconns=3, inactconns=4))
    service = decode_service(attrs, key, (server,))
    assert (service.scheduler, service.flags) == ("wlc", ())
    assert (service.persistence_timeout, service.persistence_prefix) == (300, 24)
    assert service.counters == Counters(conns=5, inbytes=1 << 40, cps=2, activeconns=3, inactconns=4)


def test_decoding_a_persistent_ipv6_service_reads_the_prefix_length() -> None:
    # For IPv6 the kernel echoes the prefix length as a host-order u32 in the netmask attribute.
    netmask = socket.inet_ntoa((64).to_bytes(4, sys.byteorder))
    message = _decoded(
        [
            (
                "IPVS_CMD_ATTR_SERVICE",
                {
                    "attrs": [
                        ("IPVS_SVC_ATTR_AF", socket.AF_INET6),
                        ("IPVS_SVC_ATTR_PROTOCOL", socket.IPPROTO_UDP),
                        ("IPVS_SVC_ATTR_ADDR", "2001:db8::10"),
                        ("IPVS_SVC_ATTR_PORT", 53),
                        ("IPVS_SVC_ATTR_SCHED_NAME", "sh"),
                        ("IPVS_SVC_ATTR_FLAGS", {"flags": 0x1 | 0x4 | 0x8, "mask": 0xFFFFFFFF}),
                        ("IPVS_SVC_ATTR_TIMEOUT", 60),
                        ("IPVS_SVC_ATTR_NETMASK", netmask),
                    ]
                },
            )
        ]
    )
    attrs = message.nested(IPVS_CMD_ATTR_SERVICE)
    key = decode_service_key(attrs)
    assert key == ServiceKey(family=6, protocol="udp", address="2001:db8::10", port=53)
    service = decode_service(attrs, key, ())
    assert service.flags == ("one-packet", "sched-fallback")
    assert (service.persistence_timeout, service.persistence_prefix) == (60, 64)
    assert service.counters == Counters()


def test_decoding_a_fwmark_service() -> None:
    message = _decoded(
        [
            (
                "IPVS_CMD_ATTR_SERVICE",
                {
                    "attrs": [
                        ("IPVS_SVC_ATTR_AF", socket.AF_INET),
                        ("IPVS_SVC_ATTR_FWMARK", 7),
                        ("IPVS_SVC_ATTR_SCHED_NAME", "rr"),
                        ("IPVS_SVC_ATTR_FLAGS", {"flags": 0x2, "mask": 0xFFFFFFFF}),
                        ("IPVS_SVC_ATTR_TIMEOUT", 0),
                        ("IPVS_SVC_ATTR_NETMASK", "255.255.255.255"),
                    ]
                },
            )
        ]
    )
    attrs = message.nested(IPVS_CMD_ATTR_SERVICE)
    key = decode_service_key(attrs)
    assert key == ServiceKey(family=4, fwmark=7)
    service = decode_service(attrs, key, ())
    assert (service.persistence_timeout, service.persistence_prefix) == (None, None)


def test_decoding_a_gue_tunnel_real_server_with_counters() -> None:
    message = _decoded(
        [
            (
                "IPVS_CMD_ATTR_DEST",
                {
                    "attrs": [
                        ("IPVS_DEST_ATTR_ADDR_FAMILY", socket.AF_INET),
                        ("IPVS_DEST_ATTR_ADDR", "10.0.0.11"),
                        ("IPVS_DEST_ATTR_PORT", 443),
                        ("IPVS_DEST_ATTR_FWD_METHOD", 2),
                        ("IPVS_DEST_ATTR_WEIGHT", 3),
                        ("IPVS_DEST_ATTR_U_THRESH", 100),
                        ("IPVS_DEST_ATTR_L_THRESH", 50),
                        ("IPVS_DEST_ATTR_ACTIVE_CONNS", 4),
                        ("IPVS_DEST_ATTR_INACT_CONNS", 6),
                        ("IPVS_DEST_ATTR_STATS64", _stats(conns=10, inpkts=20, outbps=30)),
                        ("IPVS_DEST_ATTR_TUN_TYPE", 1),
                        ("IPVS_DEST_ATTR_TUN_PORT", socket.htons(6080)),  # be16 on the wire
                    ]
                },
            )
        ]
    )
    server = decode_real_server(message.nested(IPVS_CMD_ATTR_DEST), service_family=4)
    # The apply's read-back skips the counters, and reads the configuration the same.
    without = decode_real_server(message.nested(IPVS_CMD_ATTR_DEST), service_family=4, counters=False)
    assert without == replace(server, counters=None)
    assert server == RealServer(
        address="10.0.0.11",
        port=443,
        weight=3,
        forwarding="tun",
        upper_threshold=100,
        lower_threshold=50,
        tunnel_type="gue",
        tunnel_port=6080,
        counters=Counters(conns=10, inpkts=20, outbps=30, activeconns=4, inactconns=6),
    )


def test_decoding_ipv6_nat_and_dr_real_servers() -> None:
    for method, name in ((0, "nat"), (3, "dr")):
        message = _decoded(
            [
                (
                    "IPVS_CMD_ATTR_DEST",
                    {
                        "attrs": [
                            ("IPVS_DEST_ATTR_ADDR_FAMILY", socket.AF_INET6),
                            ("IPVS_DEST_ATTR_ADDR", "2001:db8::11"),
                            ("IPVS_DEST_ATTR_PORT", 80),
                            ("IPVS_DEST_ATTR_FWD_METHOD", method),
                            ("IPVS_DEST_ATTR_WEIGHT", 1),
                            ("IPVS_DEST_ATTR_STATS", _stats(conns=1)),
                        ]
                    },
                )
            ]
        )
        server = decode_real_server(message.nested(IPVS_CMD_ATTR_DEST), service_family=4)
        assert (server.address, server.forwarding, server.tunnel_type) == ("2001:db8::11", name, None)
        assert server.counters == Counters(conns=1)


# --- the kernel and serialisation ------------------------------------------------------------


def test_availability_agrees_with_proc() -> None:
    available, detail = ipvs_available()
    assert available == Path("/proc/net/ip_vs").exists()
    if available:
        assert detail.startswith("IPVS ")
    else:
        assert detail.startswith("this kernel has no IPVS")
        with pytest.raises(IpvsUnavailable, match="this kernel has no IPVS"):
            read_ipvs()


def test_tables_survive_json_both_ways() -> None:
    table = expected_ipvs(_snapshot(_service(persistence_timeout=60), _service(name="x", ports=[1, 2], fwmark=3)))
    stats = DataplaneStats(ipvs_available=True, ipvs_detail="IPVS 1.2.1", table=table)
    assert DataplaneStats.model_validate_json(stats.model_dump_json()) == stats
    # The VM lab reads tables as plain data.
    plain = json.loads(json.dumps(dataclasses.asdict(table)))
    assert plain["services"][1]["key"] == {"family": 4, "protocol": None, "address": None, "port": None, "fwmark": 3}


# --- the generic netlink socket (the host has generic netlink, though not IPVS) --------------


def test_generic_netlink_resolves_a_family_and_reads_a_dump() -> None:
    with closing(GenericNetlinkSocket()) as netlink:
        assert netlink.family_id("nlctrl") == GENL_ID_CTRL
        families = netlink.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, b"", dump=True)
        names = {family.string(CTRL_ATTR_FAMILY_NAME) for family in families}
        assert "nlctrl" in names
        # The socket stays usable after a dump of many messages.
        assert netlink.family_id("nlctrl") == GENL_ID_CTRL


def test_an_unknown_family_is_a_netlink_error_naming_enoent() -> None:
    with closing(GenericNetlinkSocket()) as netlink, pytest.raises(NetlinkError) as raised:
        netlink.family_id("no-such-family")
    assert raised.value.errno == errno.ENOENT


def test_a_destination_without_its_own_family_takes_the_services() -> None:
    # Kernels before 3.18 send no IPVS_DEST_ATTR_ADDR_FAMILY (pyroute2 cannot encode that case).
    destination = Attributes(
        {
            DEST_ADDR: socket.inet_pton(socket.AF_INET6, "2001:db8::11"),
            DEST_PORT: (8080).to_bytes(2, "big"),
            DEST_FWD_METHOD: (0).to_bytes(4, sys.byteorder),
            DEST_WEIGHT: (7).to_bytes(4, sys.byteorder),
        }
    )
    parsed = Attributes.parse(attribute(IPVS_CMD_ATTR_DEST, destination.encode())).nested(IPVS_CMD_ATTR_DEST)
    server = decode_real_server(parsed, service_family=6)
    assert (server.address, server.port, server.weight, server.counters) == ("2001:db8::11", 8080, 7, Counters())


def test_comparing_a_large_table_looks_each_service_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-back compares every service several times a second: a scan per lookup cost seconds
    at 1,000 services (issue 18). Counted as key comparisons, not timed."""
    table = IpvsTable(tuple(
        VirtualService(key=ServiceKey(family=4, protocol="tcp", address="192.0.2.10", port=port), scheduler="rr")
        for port in range(1, 301)
    ))
    comparisons = 0
    equal = ServiceKey.__eq__

    def counted(self: ServiceKey, other: object) -> bool:
        nonlocal comparisons
        comparisons += 1
        return equal(self, other)

    monkeypatch.setattr(ServiceKey, "__eq__", counted)
    assert compare(table, table) == [] and down_real_servers(table, table) == []
    assert comparisons <= 3 * len(table.services), comparisons
