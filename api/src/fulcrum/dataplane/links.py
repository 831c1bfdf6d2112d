"""This node's interfaces as the kernel holds them now: whether each is up, and its addresses;
and its routes.

Read over rtnetlink (RTM_GETLINK, RTM_GETADDR and RTM_GETROUTE dumps), decoded with `struct` like
the IPVS reader. The HA view reads it to see which VIP group addresses this node holds: keepalived adds a
group's addresses when it becomes MASTER and removes them when it leaves, so the addresses are
the VRRP state the data plane actually runs, whatever keepalived's notifications said.

Numbers from include/uapi/linux/rtnetlink.h, if_link.h, if_addr.h and if.h.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

from fulcrum.dataplane.ipvs_netlink import (
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    Attributes,
    NetlinkError,
)

RTM_GETLINK, RTM_NEWLINK = 18, 16
RTM_GETADDR, RTM_NEWADDR = 22, 20
RTM_GETROUTE, RTM_NEWROUTE = 26, 24
IFLA_IFNAME = 3
IFA_ADDRESS, IFA_LOCAL = 1, 2
IFF_UP, IFF_RUNNING = 0x1, 0x40
IFA_F_PERMANENT = 0x80  # added without a lifetime: by hand or a static configuration, not DHCP or SLAAC
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_TABLE = 1, 4, 5, 6, 15
RTN_UNICAST = 1
RT_TABLE_MAIN = 254  # where routes go unless a table is named
RT_TABLE_LOCAL = 255  # the kernel's own: the node's addresses and broadcasts, never configured
# Who made a route (rtm_protocol), as `ip route` names them; other numbers are shown as numbers.
ROUTE_PROTOCOLS = {2: "kernel", 3: "boot", 4: "static", 9: "ra", 16: "dhcp", 186: "bgp", 188: "ospf"}

_NLMSG = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_IFINFO = struct.Struct("=BxHiII")  # family, type, index, flags, change
_IFADDR = struct.Struct("=BBBBI")  # family, prefix length, flags, scope, index
_RTGEN = struct.Struct("=Bxxx")  # family (AF_UNSPEC: every family), padded
_RTMSG = struct.Struct("=BBBBBBBBI")  # family, dst len, src len, tos, table, protocol, scope, type, flags
_RECEIVE_BUFFER = 1 << 18


@dataclass(frozen=True)
class Interface:
    name: str
    up: bool  # administratively up with a carrier (IFF_UP and IFF_RUNNING), as keepalived judges it
    addresses: frozenset[str]  # every address on it, without prefix length ("10.77.0.100", "fd77::100")
    # The same with their prefix length ("10.77.0.100/24"), and which of those came with a lifetime
    # (DHCP, SLAAC): what taking the interface over as it is needs.
    prefixed: frozenset[str] = frozenset()
    dynamic: frozenset[str] = frozenset()


def read_interfaces() -> list[Interface]:
    """Every interface of this network namespace. Raises OSError (NetlinkError included)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        links = {
            index: (name, up)
            for index, name, up in (_link(m) for m in _dump(sock, RTM_GETLINK, 1, RTM_NEWLINK))
        }
        found: dict[int, list[_Address]] = {}
        for index, address in (_address(m) for m in _dump(sock, RTM_GETADDR, 2, RTM_NEWADDR)):
            if address is not None:
                found.setdefault(index, []).append(address)
    return [
        Interface(
            name,
            up,
            frozenset(a.address for a in found.get(index, ())),
            frozenset(a.prefixed for a in found.get(index, ())),
            frozenset(a.prefixed for a in found.get(index, ()) if a.dynamic),
        )
        for index, (name, up) in sorted(links.items())
    ]


@dataclass(frozen=True)
class _Address:
    address: str
    prefixed: str
    dynamic: bool


@dataclass(frozen=True)
class Route:
    """A unicast route of any table but the kernel's local one."""

    destination: str  # with its prefix length: "0.0.0.0/0" is the IPv4 default route
    gateway: str | None  # None: on-link, or a multipath route's several next hops
    interface: str | None
    table: int  # 254 is the main table
    protocol: str  # who made it: kernel, boot (by hand), static, dhcp, ra, bgp, ... or a number
    metric: int | None


def read_routes() -> list[Route]:
    """Every unicast route, main table first. Raises OSError (NetlinkError included)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        names = {
            index: name for index, name, _up in (_link(m) for m in _dump(sock, RTM_GETLINK, 1, RTM_NEWLINK))
        }
        routes = [_route(m, names) for m in _dump(sock, RTM_GETROUTE, 2, RTM_NEWROUTE)]
    found = [route for route in routes if route is not None]
    return sorted(
        found, key=lambda r: (r.table != RT_TABLE_MAIN, r.table, ":" in r.destination, r.destination)
    )


def _route(payload: bytes, names: dict[int, str]) -> Route | None:
    family, prefix, _src, _tos, table, protocol, _scope, kind, _flags = _RTMSG.unpack_from(payload)
    if family not in (socket.AF_INET, socket.AF_INET6) or kind != RTN_UNICAST:
        return None
    attributes = Attributes.parse(payload, _RTMSG.size)
    table = attributes.integer(RTA_TABLE, table)  # the header's byte cannot hold tables past 255
    if table == RT_TABLE_LOCAL:
        return None
    destination = attributes.get(RTA_DST)
    any_address = ipaddress.IPv4Address(0) if family == socket.AF_INET else ipaddress.IPv6Address(0)
    network = str(ipaddress.ip_address(destination) if destination else any_address)
    gateway = attributes.get(RTA_GATEWAY)
    oif = attributes.get(RTA_OIF)
    return Route(
        destination=f"{network}/{prefix}",
        gateway=str(ipaddress.ip_address(gateway)) if gateway else None,
        interface=names.get(attributes.integer(RTA_OIF)) if oif else None,
        table=table,
        protocol=ROUTE_PROTOCOLS.get(protocol, str(protocol)),
        metric=attributes.integer(RTA_PRIORITY) if attributes.get(RTA_PRIORITY) else None,
    )


def _dump(sock: socket.socket, request: int, sequence: int, reply: int) -> list[bytes]:
    """The payloads (after the netlink header) of every `reply` message of one dump request."""
    sock.send(
        _NLMSG.pack(_NLMSG.size + _RTGEN.size, request, NLM_F_REQUEST | NLM_F_DUMP, sequence, 0)
        + _RTGEN.pack(socket.AF_UNSPEC)
    )
    payloads: list[bytes] = []
    while True:
        data = sock.recv(_RECEIVE_BUFFER)
        offset = 0
        while offset + _NLMSG.size <= len(data):
            length, kind, _flags, seen, _port = _NLMSG.unpack_from(data, offset)
            if length < _NLMSG.size:
                raise NetlinkError(errno.EPROTO, "malformed netlink message")
            start, offset = offset + _NLMSG.size, offset + ((length + 3) & ~3)
            if seen != sequence:
                continue
            if kind in (NLMSG_ERROR, NLMSG_DONE):
                code = -struct.unpack_from("=i", data, start)[0] if length >= _NLMSG.size + 4 else 0
                if code:
                    raise NetlinkError(code, os.strerror(code))
                return payloads
            if kind == reply:
                payloads.append(data[start : start + length - _NLMSG.size])


def _link(payload: bytes) -> tuple[int, str, bool]:
    _family, _type, index, flags, _change = _IFINFO.unpack_from(payload)
    name = Attributes.parse(payload, _IFINFO.size).string(IFLA_IFNAME)
    return index, name, bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def _address(payload: bytes) -> tuple[int, _Address | None]:
    family, prefix, flags, _scope, index = _IFADDR.unpack_from(payload)
    attributes = Attributes.parse(payload, _IFADDR.size)
    # IPv4: IFA_LOCAL is the address itself (IFA_ADDRESS the peer's on point-to-point links).
    raw = attributes.get(IFA_LOCAL) or attributes.get(IFA_ADDRESS)
    if raw is None or family not in (socket.AF_INET, socket.AF_INET6):
        return index, None
    address = str(ipaddress.ip_address(raw))
    return index, _Address(address, f"{address}/{prefix}", dynamic=not flags & IFA_F_PERMANENT)
