"""Constrained value types shared by every layer that handles configuration.

Every string that can reach a rendered keepalived or nftables file is restricted here to a
character set that cannot open a block, end a statement, start a comment, quote, substitute a
parameter (keepalived's `$NAME`) or start a conditional (`@host`). Renderers may therefore place
these values verbatim; the injection property test in tests/unit/render proves it.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from functools import lru_cache
from typing import Annotated

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictFloat,
    StringConstraints,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

# A name an operator chooses: starts with a letter or digit, then letters, digits, '-', '_', '.'.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]

# Free text that is stored and shown but never rendered into a daemon config.
Description = Annotated[str, StringConstraints(max_length=500)]

# An absolute HTTP path with query: RFC 3986 path/query characters minus the ones keepalived
# treats specially ('!' and '#' start comments, '$' substitutes, '"' quotes, braces open blocks).
HTTP_PATH_PATTERN = r"^/[A-Za-z0-9._~%/?=&+,;:*'()-]{0,254}$"
HttpPath = Annotated[str, StringConstraints(pattern=HTTP_PATH_PATTERN)]

# A DNS host name (also used for HTTP Host headers, DNS check queries and SMTP HELO).
# '.' alone is the DNS root (a DNS check's default query name).
HOSTNAME_PATTERN = r"^(?:\.|[A-Za-z0-9_][A-Za-z0-9_-]{0,62}(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\.?)$"
Hostname = Annotated[str, StringConstraints(pattern=HOSTNAME_PATTERN, max_length=253)]

# Hexadecimal payloads for UDP checks, and MD5 digests for HTTP body checks.
HexString = Annotated[str, StringConstraints(pattern=r"^(?:[0-9A-Fa-f]{2}){1,128}$")]
Md5Digest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$", to_lower=True)]

# Network interface names as the kernel accepts them (IFNAMSIZ 16, no '/', no whitespace).
InterfaceName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")]


def _json_integer(value: object) -> object:
    """JSON Schema's integer: 80 and 80.0, not true or "80" (which pydantic would otherwise take)."""
    if isinstance(value, bool | str):
        raise PydanticCustomError("int_type", "Input should be a valid integer")  # pydantic's own error
    return value


# After the bounds in an Annotated, so that the schema still states them (minimum, maximum):
# Annotated[int, Field(ge=1), JsonInteger].
JsonInteger = BeforeValidator(_json_integer)


Port = Annotated[int, Field(ge=1, le=65535), JsonInteger]
Weight = Annotated[int, Field(ge=0, le=65535), JsonInteger]
# Fractional seconds are fine for keepalived timers; bounded so a typo cannot stall a checker.
Seconds = Annotated[StrictFloat, Field(ge=0.1, le=3600)]
Fwmark = Annotated[int, Field(ge=1, le=0x7FFFFFFF), JsonInteger]


def _reject_zone(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """Refuse an IPv6 zone ('fe80::1%eth0'): Python accepts any text after the '%', and no address
    here needs one (VRRP and IPVS bind to their configured interfaces)."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        raise ValueError("an IPv6 zone ('%' and an interface name) is not accepted; give the address alone")
    return address


def _parse_address(value: object) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """One clear message for a bad address, rather than one per address family."""
    if isinstance(value, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return _reject_zone(value)
    if not isinstance(value, str):
        raise ValueError("an IP address must be a string such as 192.0.2.10 or 2001:db8::10")
    try:
        address = _ip_address(value)
    except ValueError:
        raise ValueError(f"{value[:64]!r} is not a valid IPv4 or IPv6 address") from None
    return _reject_zone(address)


@lru_cache(maxsize=1 << 16)
def _ip_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    # Addresses are immutable, and a commit parses every backend's again: at 5,000 backends the
    # parsing was a third of a candidate's validation. (A ValueError is not cached: it is raised.)
    return ipaddress.ip_address(text)


IPAddress = Annotated[
    ipaddress.IPv4Address | ipaddress.IPv6Address,
    PlainValidator(_parse_address),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "format": "ip", "examples": ["192.0.2.10", "2001:db8::10"]}),
]

_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_LIMITED_BROADCAST = ipaddress.ip_address("255.255.255.255")


def special_address_reason(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why `address` cannot be a VIP or a backend (None: it can). keepalived -t accepts all of
    these, and then the service silently never works."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"an IPv4-mapped IPv6 address; write it as the IPv4 address {address.ipv4_mapped}"
    if address.is_unspecified or (address.version == 4 and address in _THIS_NETWORK):
        return "unspecified (0.0.0.0/8 or ::): it names no host"
    if address.is_loopback:
        return "a loopback address: traffic to it never leaves the host"
    if address.is_multicast:
        return "a multicast address: IPVS and VRRP need a unicast one"
    if address == _LIMITED_BROADCAST:
        return "the broadcast address"
    if address.version == 6 and address.is_link_local:
        return "an IPv6 link-local address: it is ambiguous without a zone, which is not accepted here"
    return None


def _usable_host(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    reason = special_address_reason(address)
    if reason is not None:
        mapped = getattr(address, "ipv4_mapped", None)  # Python before 3.13 prints it as hex
        raise ValueError(f"{f'::ffff:{mapped}' if mapped else address} is {reason}")
    return address


# A VIP, a backend, a sorry server: an address a client's traffic can actually be sent to.
HostAddress = Annotated[
    IPAddress,
    AfterValidator(_usable_host),
    WithJsonSchema({"type": "string", "format": "ip", "examples": ["192.0.2.10", "2001:db8::10"]}),
]


def _normalise_network(value: str | ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    """Accept '10.0.0.0/8', '2001:db8::/32' or a bare address; reject host bits set and zones."""
    network = ipaddress.ip_network(value, strict=True)
    _reject_zone(network.network_address)
    return network.with_prefixlen


def _normalise_interface_address(value: str) -> str:
    """An address with its prefix length, as VRRP virtual addresses are written ('10.0.0.5/24')."""
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        raise ValueError(
            f"{value[:64]!r} is not an address with a prefix length, such as 192.0.2.10/24"
        ) from None
    _reject_zone(interface.ip)
    _usable_host(interface.ip)
    network = interface.network
    if network.version == 4 and network.prefixlen <= 30 and interface.ip == network.broadcast_address:
        raise ValueError(f"{interface.ip} is the broadcast address of {network}")
    return interface.with_prefixlen


Network = Annotated[str, AfterValidator(_normalise_network)]
InterfaceAddress = Annotated[str, AfterValidator(_normalise_interface_address)]


class Protocol(StrEnum):
    TCP = "tcp"
    UDP = "udp"
    SCTP = "sctp"


class Scheduler(StrEnum):
    """Every IPVS scheduler of a current kernel (see ip_vs_*.c in net/netfilter/ipvs)."""

    RR = "rr"
    WRR = "wrr"
    LC = "lc"
    WLC = "wlc"
    LBLC = "lblc"
    LBLCR = "lblcr"
    DH = "dh"
    SH = "sh"
    SED = "sed"
    NQ = "nq"
    FO = "fo"
    OVF = "ovf"
    MH = "mh"
    TWOS = "twos"


class Forwarding(StrEnum):
    NAT = "nat"
    DR = "dr"
    TUN = "tun"


class TunnelType(StrEnum):
    IPIP = "ipip"
    GUE = "gue"
    GRE = "gre"


class CheckType(StrEnum):
    TCP = "tcp"
    HTTP = "http"
    HTTPS = "https"
    DNS = "dns"
    SMTP = "smtp"
    UDP = "udp"
    PING = "ping"
    NONE = "none"


class FailureAction(StrEnum):
    """What a failed health check does to a backend."""

    REMOVE = "remove"  # delete the real server from IPVS: its connections are cut
    WEIGHT_ZERO = "weight_zero"  # keep it with weight 0: existing connections finish


class DnsQueryType(StrEnum):
    A = "A"
    AAAA = "AAAA"
    NS = "NS"
    CNAME = "CNAME"
    SOA = "SOA"
    MX = "MX"
    TXT = "TXT"
