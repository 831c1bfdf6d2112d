"""IPVS tables: what keepalived should program for a snapshot, what the kernel holds, and the gap.

`expected_ipvs` is pure; `read_ipvs` asks the kernel over IPVS generic netlink (`ipvs_netlink`);
`compare` lists real mismatches, while `down_real_servers` lists what health checks explain
(a checker removes a dead real server, or sets its weight to 0), so that an apply is not
failed, or rolled back, because a backend happens to be down.

The same tables, with counters and rate estimators filled in by `read_ipvs`, feed the live
statistics.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from fulcrum.config.snapshot import Backend, ConfigSnapshot, Service, programmed_backends
from fulcrum.config.types import CheckType, FailureAction, Forwarding
from fulcrum.dataplane import ipvs_netlink as nl
from fulcrum.dataplane.ipvs_netlink import Attributes, IpvsSocket, NetlinkError

PROC_IPVS = Path("/proc/net/ip_vs")

_FAMILY_TO_AF: dict[int, int] = {4: socket.AF_INET, 6: socket.AF_INET6}
_AF_TO_FAMILY = {af: family for family, af in _FAMILY_TO_AF.items()}
_PROTOCOLS = {"tcp": socket.IPPROTO_TCP, "udp": socket.IPPROTO_UDP, "sctp": socket.IPPROTO_SCTP}
_PROTOCOL_NAMES = {number: name for name, number in _PROTOCOLS.items()}

# include/uapi/linux/ip_vs.h: IP_VS_SVC_F_*. PERSISTENT is carried by persistence_timeout and
# HASHED is kernel bookkeeping, so neither appears in VirtualService.flags.
_SVC_F_PERSISTENT = 0x0001
_SERVICE_FLAGS = {
    0x0004: "one-packet",  # IP_VS_SVC_F_ONEPACKET: UDP, schedule every datagram
    0x0008: "sched-fallback",  # IP_VS_SVC_F_SCHED1: sh/mh skip overloaded or weight-0 servers
    0x0010: "sched-port",  # IP_VS_SVC_F_SCHED2: sh/mh hash the source port too
    0x0020: "sched-flag-3",  # IP_VS_SVC_F_SCHED3: unused by current schedulers
}
# IP_VS_CONN_F_FWD_MASK values; "local" and "bypass" are never configured by Fulcrum.
_FORWARDING_NAMES = {0: "nat", 1: "local", 2: "tun", 3: "dr", 4: "bypass"}
_FWD_MASK = 0x0007
# IP_VS_CONN_F_TUNNEL_TYPE_*
_TUNNEL_NAMES = {0: "ipip", 1: "gue", 2: "gre"}


class IpvsUnavailable(RuntimeError):
    """IPVS cannot be used: not in this kernel, or not readable by this process."""


@dataclass(frozen=True)
class Counters:
    """IPVS totals since the service or real server was added, and the kernel's rate estimates.

    Rates are per second, averaged by the kernel estimator over about 2 s windows.
    """

    conns: int = 0
    inpkts: int = 0
    outpkts: int = 0
    inbytes: int = 0
    outbytes: int = 0
    cps: int = 0
    inpps: int = 0
    outpps: int = 0
    inbps: int = 0
    outbps: int = 0
    activeconns: int = 0
    inactconns: int = 0


@dataclass(frozen=True)
class ServiceKey:
    """How IPVS identifies a virtual service: (family, protocol, address, port) or (family, fwmark)."""

    family: int  # 4 or 6
    protocol: str | None = None  # tcp, udp, sctp; None for a fwmark service
    address: str | None = None  # None for a fwmark service
    port: int | None = None  # None for a fwmark service
    fwmark: int | None = None

    def __str__(self) -> str:
        if self.fwmark is not None:
            return f"fwmark {self.fwmark} (IPv{self.family})"
        return f"{self.protocol} {endpoint(self.address or '', self.port or 0)}"


@dataclass(frozen=True)
class RealServer:
    address: str
    port: int  # 0 in a fwmark service: packets keep the destination port the client used
    weight: int
    forwarding: str  # nat, dr, tun (read back: also local, bypass)
    upper_threshold: int = 0  # 0: no limit
    lower_threshold: int = 0
    tunnel_type: str | None = None  # tun only: ipip, gue, gre
    tunnel_port: int | None = None  # gue only
    # Expected tables only: what a failed check does (None: no check, keepalived keeps it).
    failure_action: FailureAction | None = None
    counters: Counters | None = None  # read-back only

    @property
    def key(self) -> tuple[str, int]:
        return (self.address, self.port)


@dataclass(frozen=True)
class VirtualService:
    key: ServiceKey
    scheduler: str
    flags: tuple[str, ...] = ()  # sorted names from _SERVICE_FLAGS
    persistence_timeout: int | None = None  # seconds; None: not persistent
    persistence_prefix: int | None = None  # client grouping prefix length when persistent
    real_servers: tuple[RealServer, ...] = ()
    name: str | None = None  # expected tables only: the service's name in the snapshot
    # Expected tables only: keepalived adds this address when quorum is lost.
    sorry_server: str | None = None
    counters: Counters | None = None  # read-back only; connection counts summed over real servers

    @property
    def label(self) -> str:
        return f"service {self.name} ({self.key})" if self.name else f"service {self.key}"

    def real_server(self, address: str, port: int) -> RealServer | None:
        return self._by_endpoint.get((address, port))

    @cached_property
    def _by_endpoint(self) -> dict[tuple[str, int], RealServer]:
        # The statistics join every configured backend with its real server once a second: a scan
        # per backend made that quadratic in a service's size (a summary of 10 x 1,000 took 0.2-0.35 s
        # natively, 0.08-0.13 s with this index).
        return {(real.address, real.port): real for real in reversed(self.real_servers)}


@dataclass(frozen=True)
class IpvsTable:
    services: tuple[VirtualService, ...] = field(default_factory=tuple)

    def service(self, key: ServiceKey) -> VirtualService | None:
        return self._by_key.get(key)

    @cached_property
    def _by_key(self) -> dict[ServiceKey, VirtualService]:
        # A read-back compares every expected service with the kernel's, several times a second:
        # a scan per lookup made that quadratic (seconds at 1,000 services).
        return {service.key: service for service in reversed(self.services)}


def endpoint(address: str, port: int) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"{host}:{port}" if port else host


# --- expected -------------------------------------------------------------------------------


def expected_ipvs(snapshot: ConfigSnapshot) -> IpvsTable:
    """The IPVS table keepalived programs for `snapshot` when every health check passes.

    The services are the renderer's: enabled ones with at least one enabled backend (keepalived
    refuses a virtual server without real servers), with its real servers (`programmed_backends`:
    a disabled backend is left out, or at weight 0 in a service whose VIP BGP announces).
    """
    clustered = snapshot.clustered_services()
    return IpvsTable(
        tuple(
            _expected_service(service, programmed_backends(service, service.name in clustered))
            for service in snapshot.balanced_services()
        )
    )


def service_key(service: Service) -> ServiceKey:
    if service.is_fwmark:
        return ServiceKey(family=service.family, fwmark=service.fwmark)
    return ServiceKey(
        family=service.family,
        protocol=service.protocol.value,
        address=str(service.address),
        port=service.ports[0],
    )


def _expected_service(service: Service, backends: list[Backend]) -> VirtualService:
    flags = []
    if service.one_packet_scheduling:
        flags.append("one-packet")
    if service.scheduler_fallback:
        flags.append("sched-fallback")
    if service.scheduler_port:
        flags.append("sched-port")
    persistent = service.persistence_timeout is not None
    full_prefix = 32 if service.family == 4 else 128
    return VirtualService(
        key=service_key(service),
        scheduler=service.scheduler.value,
        flags=tuple(sorted(flags)),
        persistence_timeout=service.persistence_timeout,
        persistence_prefix=(service.persistence_prefix or full_prefix) if persistent else None,
        real_servers=tuple(_expected_real_server(service, backend) for backend in backends),
        name=service.name,
        sorry_server=str(service.sorry_server.address) if service.sorry_server else None,
    )


def _expected_real_server(service: Service, backend: Backend) -> RealServer:
    check = backend.health_check or service.health_check
    tunnel = service.forwarding == Forwarding.TUN
    return RealServer(
        address=str(backend.address),
        port=0 if service.is_fwmark else backend.port or service.ports[0],
        weight=backend.weight,
        forwarding=service.forwarding.value,
        upper_threshold=backend.upper_threshold,
        lower_threshold=backend.lower_threshold,
        tunnel_type=service.tunnel_type.value if tunnel else None,
        tunnel_port=service.tunnel_port if tunnel else None,
        failure_action=None if check.type == CheckType.NONE else check.on_failure,
    )


# --- comparison -----------------------------------------------------------------------------


def compare(expected: IpvsTable, actual: IpvsTable) -> list[str]:
    """What in `actual` contradicts `expected`; empty when IPVS is as keepalived should make it.

    Real servers missing because their health check removed them are not mismatches (see
    `down_real_servers`), nor is the sorry server's presence.
    """
    problems: list[str] = []
    for want in expected.services:
        have = actual.service(want.key)
        if have is None:
            problems.append(f"{want.label} is not in IPVS")
        else:
            problems.extend(_service_differences(want, have))
    wanted_keys = {service.key for service in expected.services}
    for have in actual.services:
        if have.key not in wanted_keys:
            problems.append(f"{have.label} is in IPVS but not in the configuration")
    return problems


def down_real_servers(expected: IpvsTable, actual: IpvsTable) -> list[str]:
    """Expected real servers that IPVS lacks, or holds at weight 0, because of a health check."""
    notes: list[str] = []
    for want in expected.services:
        have = actual.service(want.key)
        if have is None:
            continue
        present = {server.key: server for server in have.real_servers}
        for server in want.real_servers:
            found = present.get(server.key)
            where = f"{want.label}: real server {endpoint(server.address, server.port)}"
            if found is None and not _must_be_present(want, server):
                notes.append(f"{where} is down or not yet checked")
            elif found is not None and _inhibited(server, found):
                notes.append(
                    f"{where} is down: its check failed, so its weight is 0 (on_failure weight_zero)"
                )
    return notes


def _must_be_present(service: VirtualService, server: RealServer) -> bool:
    # Without a check keepalived never removes a real server, unless quorum is lost and the
    # sorry server takes over.
    return server.failure_action is None and service.sorry_server is None


def _inhibited(want: RealServer, have: RealServer) -> bool:
    return have.weight == 0 and want.weight != 0 and want.failure_action == FailureAction.WEIGHT_ZERO


def _service_differences(want: VirtualService, have: VirtualService) -> list[str]:
    label = want.label
    problems = []
    if have.scheduler != want.scheduler:
        problems.append(f"{label}: scheduler is {have.scheduler} in IPVS, expected {want.scheduler}")
    if have.flags != want.flags:
        problems.append(f"{label}: flags are {_names(have.flags)} in IPVS, expected {_names(want.flags)}")
    if have.persistence_timeout != want.persistence_timeout:
        problems.append(
            f"{label}: persistence is {_persistence(have.persistence_timeout)} in IPVS, "
            f"expected {_persistence(want.persistence_timeout)}"
        )
    elif have.persistence_prefix != want.persistence_prefix:
        problems.append(
            f"{label}: persistence groups clients by /{have.persistence_prefix} in IPVS, "
            f"expected /{want.persistence_prefix}"
        )
    wanted = {server.key: server for server in want.real_servers}
    for server in have.real_servers:
        where = f"{label}: real server {endpoint(server.address, server.port)}"
        target = wanted.get(server.key)
        if target is None:
            if server.address != want.sorry_server:
                problems.append(f"{where} is in IPVS but not in the configuration")
            continue
        if server.forwarding != target.forwarding:
            problems.append(
                f"{where}: forwarding is {server.forwarding} in IPVS, expected {target.forwarding}"
            )
        if server.weight != target.weight and not _inhibited(target, server):
            problems.append(f"{where}: weight is {server.weight} in IPVS, expected {target.weight}")
        if (server.upper_threshold, server.lower_threshold) != (
            target.upper_threshold,
            target.lower_threshold,
        ):
            problems.append(
                f"{where}: thresholds are {server.upper_threshold}/{server.lower_threshold} in IPVS, "
                f"expected {target.upper_threshold}/{target.lower_threshold} (upper/lower)"
            )
        if (server.tunnel_type, server.tunnel_port) != (target.tunnel_type, target.tunnel_port):
            problems.append(f"{where}: tunnel is {_tunnel(server)} in IPVS, expected {_tunnel(target)}")
    present = {server.key for server in have.real_servers}
    for key, server in wanted.items():
        if key not in present and _must_be_present(want, server):
            problems.append(
                f"{label}: real server {endpoint(*key)} has no health check, so keepalived keeps it "
                "in IPVS, but it is missing"
            )
    return problems


def _names(flags: tuple[str, ...]) -> str:
    return ", ".join(flags) if flags else "none"


def _persistence(timeout: int | None) -> str:
    return f"{timeout} s" if timeout is not None else "off"


def _tunnel(server: RealServer) -> str:
    if server.tunnel_type is None:
        return "none"
    return f"{server.tunnel_type} port {server.tunnel_port}" if server.tunnel_port else server.tunnel_type


# --- reading the kernel ---------------------------------------------------------------------


def ipvs_available() -> tuple[bool, str]:
    """Whether this kernel has IPVS and this process may use it, with a detail for operators."""
    try:
        _open().close()
    except IpvsUnavailable as error:
        return False, str(error)
    return True, _version()


def read_ipvs(counters: bool = True, only: Collection[ServiceKey] | None = None) -> IpvsTable:
    """The kernel's IPVS table, with counters and rates unless `counters` is False (the apply's
    read-back compares the configuration only, and skips decoding them); with `only`, just those of
    its services that the kernel has. Raises IpvsUnavailable.

    This is the function the kernel tests in the VM call to check what keepalived programmed.
    """
    wanted = None if only is None else (lambda service: decode_service_key(service) in only)
    try:
        with _open() as ipvs:
            dumps = ipvs.dump(wanted)
    except OSError as error:
        raise IpvsUnavailable(f"reading IPVS over netlink failed: {error}") from error
    services = []
    for dump in dumps:
        key = decode_service_key(dump.service)
        servers = tuple(
            decode_real_server(destination, key.family, counters) for destination in dump.destinations
        )
        services.append(decode_service(dump.service, key, servers, counters))
    return IpvsTable(tuple(services))


def _open() -> IpvsSocket:
    try:
        return IpvsSocket()
    except NetlinkError as error:
        if error.errno == errno.ENOENT:
            raise IpvsUnavailable(
                "this kernel has no IPVS: the IPVS generic netlink family is not registered "
                "(ip_vs is neither built in nor loaded)"
            ) from error
        raise IpvsUnavailable(f"cannot open the IPVS netlink interface: {error}") from error
    except OSError as error:
        raise IpvsUnavailable(f"cannot open a generic netlink socket: {error}") from error


def _version() -> str:
    """'IPVS 1.2.1 (size=4096)' from /proc/net/ip_vs's first line."""
    try:
        first = PROC_IPVS.read_text().splitlines()[0]
    except (OSError, IndexError):
        return "IPVS (generic netlink)"
    return first.replace("IP Virtual Server version", "IPVS", 1)


def _address(raw: bytes, family: int) -> str:
    # The kernel sends a whole union nf_inet_addr (16 bytes); an IPv4 address is its first 4.
    # inet_ntop writes IPv4 as ipaddress does, at a fraction of the cost (thousands per read).
    if family == 4:
        return socket.inet_ntop(socket.AF_INET, raw[:4])
    return str(ipaddress.IPv6Address(raw[:16]))


def decode_service_key(attrs: Attributes) -> ServiceKey:
    """The key of an IPVS_CMD_ATTR_SERVICE attribute."""
    family = _AF_TO_FAMILY[attrs.integer(nl.SVC_AF)]
    fwmark = attrs.integer(nl.SVC_FWMARK)
    if fwmark:  # the kernel sends FWMARK only for fwmark services, and then no protocol/addr/port
        return ServiceKey(family=family, fwmark=fwmark)
    number = attrs.integer(nl.SVC_PROTOCOL)
    return ServiceKey(
        family=family,
        protocol=_PROTOCOL_NAMES.get(number, str(number)),
        address=_address(attrs[nl.SVC_ADDR], family),
        port=attrs.big_endian(nl.SVC_PORT),
    )


def decode_service(
    attrs: Attributes, key: ServiceKey, servers: tuple[RealServer, ...], counters: bool = True
) -> VirtualService:
    bits = int.from_bytes(attrs.get(nl.SVC_FLAGS, b"")[:4], sys.byteorder)  # struct ip_vs_flags: flags, mask
    persistent = bool(bits & _SVC_F_PERSISTENT)
    active = sum(server.counters.activeconns for server in servers if server.counters)
    inactive = sum(server.counters.inactconns for server in servers if server.counters)
    return VirtualService(
        key=key,
        scheduler=attrs.string(nl.SVC_SCHED_NAME),
        flags=tuple(sorted(name for bit, name in _SERVICE_FLAGS.items() if bits & bit)),
        persistence_timeout=attrs.integer(nl.SVC_TIMEOUT) if persistent else None,
        persistence_prefix=_prefix(key.family, attrs.get(nl.SVC_NETMASK)) if persistent else None,
        real_servers=servers,
        counters=(
            _counters(attrs, nl.SVC_STATS64, nl.SVC_STATS, activeconns=active, inactconns=inactive)
            if counters
            else None
        ),
    )


def decode_real_server(attrs: Attributes, service_family: int, counters: bool = True) -> RealServer:
    """An IPVS_CMD_ATTR_DEST attribute, with its counters unless `counters` is False."""
    forwarding = _FORWARDING_NAMES.get(attrs.integer(nl.DEST_FWD_METHOD) & _FWD_MASK, "unknown")
    tunnel_type = _TUNNEL_NAMES.get(attrs.integer(nl.DEST_TUN_TYPE)) if forwarding == "tun" else None
    # A tunnel may cross families, so a destination names its own (kernel 3.18+).
    family = _AF_TO_FAMILY.get(attrs.integer(nl.DEST_ADDR_FAMILY), service_family)
    return RealServer(
        address=_address(attrs[nl.DEST_ADDR], family),
        port=attrs.big_endian(nl.DEST_PORT),
        weight=attrs.integer(nl.DEST_WEIGHT),
        forwarding=forwarding,
        upper_threshold=attrs.integer(nl.DEST_U_THRESH),
        lower_threshold=attrs.integer(nl.DEST_L_THRESH),
        tunnel_type=tunnel_type,
        tunnel_port=attrs.big_endian(nl.DEST_TUN_PORT) if tunnel_type == "gue" else None,
        counters=(
            _counters(
                attrs,
                nl.DEST_STATS64,
                nl.DEST_STATS,
                activeconns=attrs.integer(nl.DEST_ACTIVE_CONNS),
                inactconns=attrs.integer(nl.DEST_INACT_CONNS),
            )
            if counters
            else None
        ),
    )


def _counters(attrs: Attributes, stats64: int, stats32: int, activeconns: int, inactconns: int) -> Counters:
    # STATS64 (kernel 4.1+) does not wrap; STATS is the 32-bit fallback.
    stats = attrs.nested(stats64) or attrs.nested(stats32) or Attributes()
    totals = {name: stats.integer(number) for number, name in enumerate(nl.STATS_NAMES, start=1)}
    return Counters(**totals, activeconns=activeconns, inactconns=inactconns)


def _prefix(family: int, netmask: bytes | None) -> int:
    """The persistence netmask as a prefix length.

    IPv4 services carry a network-order netmask. IPv6 services carry the prefix length itself as
    a host-order u32 in the same attribute.
    """
    if netmask is None:
        return 32 if family == 4 else 128
    if family == 4:
        return ipaddress.IPv4Network(f"0.0.0.0/{ipaddress.IPv4Address(netmask[:4])}").prefixlen
    return int.from_bytes(netmask[:4], sys.byteorder)
