"""Does a DR or TUN backend really accept packets addressed to the VIP?

keepalived's checkers connect to a backend's own address, so a backend that lacks the VIP (on a
non-ARPing interface for DR, on its tunnel device for TUN) passes every check while IPVS sends it
traffic it silently drops. The probe sends what IPVS would send — a TCP SYN (or, for UDP services,
an ICMP echo) to VIP:port, delivered to the backend's link-layer address for DR or inside an IPIP
packet to the backend for TUN — and waits for the backend to answer from the VIP. The probe's TTL
is 1 so that a backend without the VIP that forwards packets cannot pass it on to another host
that has it. Needs CAP_NET_RAW: it runs in the privileged apply helper (or the in-process engine).
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
import select
import socket
import struct
import time
from dataclasses import dataclass
from enum import StrEnum

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
PACKET_OUTGOING = 4
TCP_SYN, TCP_RST, TCP_ACK = 0x02, 0x04, 0x10
IPPROTO_IPIP = 4

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ProbeMethod(StrEnum):
    DIRECT = "direct"  # DR: the VIP packet to the backend's MAC address
    IPIP = "ipip"  # TUN: the VIP packet inside IPIP to the backend's address


class Verdict(StrEnum):
    VIP_PRESENT = "vip_present"  # the backend answered from the VIP (SYN-ACK or echo reply)
    PORT_CLOSED = "port_closed"  # the backend holds the VIP but nothing listens on VIP:port
    NO_REPLY = "no_reply"  # the backend dropped it: no VIP, or a firewall
    NOT_ON_LINK = "not_on_link"  # DR needs the backend on a directly attached network
    UNRESOLVED = "unresolved"  # the backend's link-layer address is unknown (it is down?)


@dataclass(frozen=True)
class ProbeTarget:
    vip: IPAddress
    port: int | None  # None: fwmark or UDP service probed by ICMP echo
    backend: IPAddress
    method: ProbeMethod
    tcp: bool  # TCP SYN to port; otherwise an ICMP echo to the VIP


def probe(target: ProbeTarget, timeout: float = 1.0) -> Verdict:
    """One probe; raises OSError when raw sockets are not available (no CAP_NET_RAW)."""
    if target.vip.version != target.backend.version:
        raise ValueError("the VIP and the backend must be of one address family")
    route = _route_to(target.backend)
    if route is None:
        return Verdict.NOT_ON_LINK if target.method == ProbeMethod.DIRECT else Verdict.UNRESOLVED
    oif, source, gateway = route
    if target.method == ProbeMethod.DIRECT and gateway is not None:
        return Verdict.NOT_ON_LINK
    if target.method == ProbeMethod.IPIP and target.backend.version != 4:
        raise ValueError("IPIP probes are IPv4 only")
    # Only tell this probe's answer from others': nothing here needs to be unpredictable.
    source_port = random.randint(32768, 60999)  # noqa: S311
    ident = random.randint(1, 0xFFFF)  # noqa: S311
    packet = (
        tcp_syn(source, target.vip, source_port, target.port, ttl=1)
        if target.tcp and target.port is not None
        else icmp_echo(source, target.vip, ident, ttl=1)
    )
    ethertype = ETH_P_IP if target.vip.version == 4 else ETH_P_IPV6
    with socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ethertype)) as listener:
        if target.method == ProbeMethod.DIRECT:
            mac = _neighbour(oif, target.backend)
            if mac is None:
                return Verdict.UNRESOLVED
            with socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ethertype)) as sender:
                sender.sendto(packet, (_ifname(oif), ethertype, 0, 0, mac))
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_RAW, IPPROTO_IPIP) as sender:
                sender.sendto(packet, (str(target.backend), 0))
        return _await_reply(listener, target, source, source_port, ident, timeout)


def _await_reply(
    listener: socket.socket,
    target: ProbeTarget,
    source: IPAddress,
    source_port: int,
    ident: int,
    timeout: float,
) -> Verdict:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([listener], [], [], left)
        if not ready:
            break
        data, address = listener.recvfrom(65535)
        if address[2] == PACKET_OUTGOING:
            continue
        verdict = classify_reply(data, target, source, source_port, ident)
        if verdict is not None:
            return verdict
    return Verdict.NO_REPLY


def classify_reply(
    packet: bytes, target: ProbeTarget, source: IPAddress, source_port: int, ident: int
) -> Verdict | None:
    """The verdict a received IP packet gives, or None when it is not the answer to our probe."""
    parsed = _parse_ip(packet)
    if parsed is None:
        return None
    src, dst, protocol, payload = parsed
    if src != target.vip or dst != source:
        return None
    if target.tcp and protocol == socket.IPPROTO_TCP and len(payload) >= 14:
        sport, dport = struct.unpack("!HH", payload[:4])
        flags = payload[13]
        if sport != target.port or dport != source_port:
            return None
        if flags & TCP_SYN and flags & TCP_ACK:
            return Verdict.VIP_PRESENT
        if flags & TCP_RST:
            return Verdict.PORT_CLOSED
        return None
    echo_reply = 0 if target.vip.version == 4 else 129
    icmp = socket.IPPROTO_ICMP if target.vip.version == 4 else socket.IPPROTO_ICMPV6
    if not target.tcp and protocol == icmp and len(payload) >= 8:
        kind, _code, _sum, reply_ident = struct.unpack("!BBHH", payload[:6])
        if kind == echo_reply and reply_ident == ident:
            return Verdict.VIP_PRESENT
    return None


# --- packets ---------------------------------------------------------------------------------


def tcp_syn(source: IPAddress, destination: IPAddress, source_port: int, port: int, *, ttl: int) -> bytes:
    segment = struct.pack(
        "!HHIIBBHHH", source_port, port, random.getrandbits(32), 0, 5 << 4, TCP_SYN, 64240, 0, 0
    )
    checksum = _checksum(_pseudo_header(source, destination, socket.IPPROTO_TCP, len(segment)) + segment)
    segment = segment[:16] + struct.pack("!H", checksum) + segment[18:]
    return _ip(source, destination, socket.IPPROTO_TCP, segment, ttl)


def icmp_echo(source: IPAddress, destination: IPAddress, ident: int, *, ttl: int) -> bytes:
    if destination.version == 4:
        message = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"fulcrum-vip-probe"
        message = message[:2] + struct.pack("!H", _checksum(message)) + message[4:]
        return _ip(source, destination, socket.IPPROTO_ICMP, message, ttl)
    message = struct.pack("!BBHHH", 128, 0, 0, ident, 1) + b"fulcrum-vip-probe"
    checksum = _checksum(_pseudo_header(source, destination, socket.IPPROTO_ICMPV6, len(message)) + message)
    message = message[:2] + struct.pack("!H", checksum) + message[4:]
    return _ip(source, destination, socket.IPPROTO_ICMPV6, message, ttl)


def _ip(source: IPAddress, destination: IPAddress, protocol: int, payload: bytes, ttl: int) -> bytes:
    if destination.version == 4:
        header = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(payload),
            random.getrandbits(16),
            0x4000,
            ttl,
            protocol,
            0,
            source.packed,
            destination.packed,
        )
        header = header[:10] + struct.pack("!H", _checksum(header)) + header[12:]
        return header + payload
    header = struct.pack(
        "!IHBB16s16s", 6 << 28, len(payload), protocol, ttl, source.packed, destination.packed
    )
    return header + payload


def _pseudo_header(source: IPAddress, destination: IPAddress, protocol: int, length: int) -> bytes:
    if destination.version == 4:
        return struct.pack("!4s4sBBH", source.packed, destination.packed, 0, protocol, length)
    return struct.pack("!16s16sI3xB", source.packed, destination.packed, length, protocol)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _parse_ip(packet: bytes) -> tuple[IPAddress, IPAddress, int, bytes] | None:
    if len(packet) >= 20 and packet[0] >> 4 == 4:
        header_length = (packet[0] & 0x0F) * 4
        return (
            ipaddress.IPv4Address(packet[12:16]),
            ipaddress.IPv4Address(packet[16:20]),
            packet[9],
            packet[header_length:],
        )
    if len(packet) >= 40 and packet[0] >> 4 == 6:
        # Extension headers are not followed: replies to a SYN or an echo carry none.
        return (
            ipaddress.IPv6Address(packet[8:24]),
            ipaddress.IPv6Address(packet[24:40]),
            packet[6],
            packet[40:],
        )
    return None


# --- routes and neighbours -------------------------------------------------------------------


def _route_to(backend: IPAddress) -> tuple[int, IPAddress, IPAddress | None] | None:
    """(output interface, source address, gateway or None) for packets to the backend."""
    from pyroute2 import IPRoute  # here: importing pyroute2 costs every process that loads this module

    with IPRoute() as ipr:
        try:
            routes = ipr.route("get", dst=str(backend))
        except Exception:  # noqa: BLE001 - no route: pyroute2 raises NetlinkError
            return None
    if not routes:
        return None
    route = routes[0]
    source, gateway = route.get_attr("RTA_PREFSRC"), route.get_attr("RTA_GATEWAY")
    if source is None:
        return None
    return (
        route.get_attr("RTA_OIF"),
        ipaddress.ip_address(source),
        ipaddress.ip_address(gateway) if gateway else None,
    )


def _neighbour(oif: int, backend: IPAddress, wait: float = 1.0) -> bytes | None:
    """The backend's link-layer address, asking the kernel to resolve it when it is not known."""
    from pyroute2 import IPRoute

    deadline = time.monotonic() + wait
    nudged = False
    while True:
        with IPRoute() as ipr:
            for entry in ipr.get_neighbours(ifindex=oif, dst=str(backend)):
                mac = entry.get_attr("NDA_LLADDR")
                if mac and entry["state"] not in (0x01, 0x20):  # NUD_INCOMPLETE, NUD_FAILED
                    return bytes.fromhex(mac.replace(":", ""))
        if time.monotonic() >= deadline:
            return None
        if not nudged:
            _nudge(backend)
            nudged = True
        time.sleep(0.05)


def _nudge(backend: IPAddress) -> None:
    """Send one datagram to the discard port so the kernel resolves the backend's address."""
    family = socket.AF_INET if backend.version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_DGRAM) as udp, contextlib.suppress(OSError):
        udp.sendto(b"", (str(backend), 9))


def _ifname(index: int) -> str:
    return socket.if_indextoname(index)


def raw_sockets_available() -> bool:
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP)).close()
    except OSError:
        return False
    return True
