"""The DR/TUN guardrail's pure parts: which backends it probes, its packets, and its verdicts.

The probe itself (raw sockets, a real backend with and without the VIP) is proven in the VM lab:
tests/kernel/test_api_guardrail.py.
"""

from __future__ import annotations

import ipaddress
import struct

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.vip_guard import GuardedBackend, guarded_backends, warning_for
from fulcrum.dataplane.vip_probe import (
    ProbeMethod,
    ProbeTarget,
    Verdict,
    _checksum,
    classify_reply,
    icmp_echo,
    tcp_syn,
)

V4 = ipaddress.ip_address
LB = V4("10.0.0.2")
VIP = V4("10.0.0.100")
BACKEND = V4("10.0.0.21")


def snapshot(**service) -> ConfigSnapshot:
    base = {"name": "web", "address": str(VIP), "ports": [80], "backends": [{"address": "10.0.0.21"}, {"address": "10.0.0.22", "enabled": False}]}
    return ConfigSnapshot.model_validate({"services": [{**base, **service}]})


def test_only_dr_and_ipip_backends_that_are_enabled_are_probed():
    assert guarded_backends(snapshot(forwarding="nat")) == []
    assert guarded_backends(snapshot(forwarding="tun", tunnel_type="gre")) == []
    assert guarded_backends(snapshot(forwarding="dr", enabled=False)) == []
    [dr] = guarded_backends(snapshot(forwarding="dr"))
    assert dr == GuardedBackend("web", "10.0.0.21:80", ProbeTarget(VIP, 80, BACKEND, ProbeMethod.DIRECT, tcp=True))
    [tun] = guarded_backends(snapshot(forwarding="tun", protocol="udp", ports=[53], health_check={"type": "udp"}))
    assert tun.target.method == ProbeMethod.IPIP and not tun.target.tcp and tun.backend == "10.0.0.21:53"


def test_the_syn_is_a_valid_ipv4_tcp_syn_with_ttl_1():
    packet = tcp_syn(LB, VIP, 40000, 80, ttl=1)
    assert _checksum(packet[:20]) == 0  # a correct header sums to zero
    assert packet[8] == 1 and packet[9] == 6
    assert (packet[12:16], packet[16:20]) == (LB.packed, VIP.packed)
    segment = packet[20:]
    pseudo = LB.packed + VIP.packed + struct.pack("!BBH", 0, 6, len(segment))
    assert _checksum(pseudo + segment) == 0
    assert struct.unpack("!HH", segment[:4]) == (40000, 80) and segment[13] == 0x02


def test_the_ipv6_echo_has_a_valid_icmpv6_checksum():
    source, vip = V4("2001:db8::2"), V4("2001:db8::100")
    packet = icmp_echo(source, vip, 77, ttl=1)
    assert packet[0] >> 4 == 6 and packet[6] == 58 and packet[7] == 1
    message = packet[40:]
    pseudo = source.packed + vip.packed + struct.pack("!I3xB", len(message), 58)
    assert _checksum(pseudo + message) == 0


def reply(src, dst, sport, dport, flags) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, flags, 1000, 0, 0)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0, 64, 6, 0, src.packed, dst.packed)
    return header + tcp


def test_a_syn_ack_from_the_vip_proves_it_a_reset_says_the_port_is_closed():
    target = ProbeTarget(VIP, 80, BACKEND, ProbeMethod.DIRECT, tcp=True)
    assert classify_reply(reply(VIP, LB, 80, 40000, 0x12), target, LB, 40000, 1) == Verdict.VIP_PRESENT
    assert classify_reply(reply(VIP, LB, 80, 40000, 0x14), target, LB, 40000, 1) == Verdict.PORT_CLOSED
    # Not ours: from the backend's own address, another port, or another probe.
    assert classify_reply(reply(BACKEND, LB, 80, 40000, 0x12), target, LB, 40000, 1) is None
    assert classify_reply(reply(VIP, LB, 81, 40000, 0x12), target, LB, 40000, 1) is None
    assert classify_reply(reply(VIP, LB, 80, 40001, 0x12), target, LB, 40000, 1) is None


def test_an_echo_reply_from_the_vip_proves_it_for_udp_services():
    target = ProbeTarget(VIP, 53, BACKEND, ProbeMethod.DIRECT, tcp=False)
    echo = struct.pack("!BBHHH", 0, 0, 0, 9, 1)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 1, 0, VIP.packed, LB.packed)
    assert classify_reply(header + echo, target, LB, 0, 9) == Verdict.VIP_PRESENT
    assert classify_reply(header + echo, target, LB, 0, 10) is None


def test_verdicts_become_warnings_only_when_traffic_would_be_lost():
    [guarded] = guarded_backends(snapshot(forwarding="dr"))
    missing = warning_for(guarded, Verdict.NO_REPLY)
    assert missing.code == "vip_missing" and "10.0.0.100" in missing.message and "arp_ignore" in missing.message
    assert warning_for(guarded, Verdict.PORT_CLOSED).code == "vip_port_closed"
    assert warning_for(guarded, Verdict.NOT_ON_LINK).code == "not_on_link"
    assert warning_for(guarded, Verdict.VIP_PRESENT) is None
    assert warning_for(guarded, Verdict.UNRESOLVED) is None  # a dead backend: its check says so
    [tun] = guarded_backends(snapshot(forwarding="tun"))
    assert "tunl0" in warning_for(tun, Verdict.NO_REPLY).message
