"""The desired state of one appliance, as one validated, canonical document.

A revision stores exactly one `ConfigSnapshot` (as canonical JSON). The renderers are pure
functions of it, and the privileged applier re-validates it with these same models before it
touches a file, so everything that reaches keepalived or nftables has passed through here.

Rules that span fields live in model validators and raise `ValueError` with a message that names
the offending value; FastAPI turns those into 422 responses with the field's location.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
from typing import Annotated, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, ValidationInfo, model_validator

from fulcrum.config.bgp import BgpConfig
from fulcrum.config.cluster import service_problem
from fulcrum.config.network import NetworkConfig
from fulcrum.config.types import (
    CheckType,
    Description,
    DnsQueryType,
    FailureAction,
    Forwarding,
    Fwmark,
    HexString,
    HostAddress,
    Hostname,
    HttpPath,
    InterfaceAddress,
    InterfaceName,
    IPAddress,
    JsonInteger,
    Md5Digest,
    Name,
    Network,
    Port,
    Protocol,
    Scheduler,
    Seconds,
    TunnelType,
    Weight,
)

SNAPSHOT_FORMAT: Final = 1
# The validation context of a configuration being written (the candidate, a peer's revision, an
# import): rules added after revisions were stored apply to what is written, not to what runs.
WRITTEN: Final = {"written": True}

# Checks that open a TCP connection; they make no sense against a UDP-only port.
TCP_BASED_CHECKS = {CheckType.TCP, CheckType.HTTP, CheckType.HTTPS, CheckType.SMTP}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HealthCheck(Strict):
    """How keepalived decides whether a backend is alive.

    The defaults detect a dead backend in about 3 s: a check every second, 1 s to answer, and one
    retry 0.5 s later (keepalived's own defaults take about a minute: delay_loop 60 s).
    """

    type: CheckType = CheckType.TCP
    interval: Seconds = 1.0
    timeout: Seconds = 1.0
    retries: Annotated[int, Field(ge=0, le=10), JsonInteger] = 1
    retry_delay: Seconds = 0.5
    on_failure: FailureAction = FailureAction.REMOVE
    port: Port | None = None  # connect to this port instead of the backend's
    # HTTP / HTTPS
    http_path: HttpPath = "/"
    http_status_codes: list[Annotated[int, Field(ge=100, le=599), JsonInteger]] = Field(
        default_factory=lambda: [200], min_length=1, max_length=20
    )
    http_digest: Md5Digest | None = None
    http_host: Hostname | None = None
    # HTTPS: send SNI (the Host header's name). keepalived's SSL_GET does not verify certificates.
    tls_sni: StrictBool = False
    # DNS
    dns_query_type: DnsQueryType = DnsQueryType.SOA
    dns_query_name: Hostname = "."
    # SMTP
    smtp_helo_name: Hostname | None = None
    # UDP
    udp_payload: HexString | None = None
    udp_require_reply: StrictBool = False

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.http_digest and self.type not in (CheckType.HTTP, CheckType.HTTPS):
            raise ValueError("http_digest: applies only to http and https checks")
        if self.tls_sni and self.type != CheckType.HTTPS:
            raise ValueError("tls_sni: applies only to https checks")
        if self.tls_sni and not self.http_host:
            raise ValueError("http_host: tls_sni needs the host name to send")
        if self.timeout > 60:
            raise ValueError("timeout: above 60 s would hide a dead backend for minutes")
        if self.udp_payload and self.udp_payload[-2:].lower() == "ff":
            # keepalived 2.2.7 mistakes a last byte 0xff for its own "invalid hex" marker.
            raise ValueError("udp_payload: keepalived cannot read a payload whose last byte is ff")
        return self


class SorryServer(Strict):
    address: HostAddress
    port: Port | None = None


class Backend(Strict):
    """A real server. Weight 0 drains it: established connections finish, no new ones arrive."""

    address: HostAddress
    port: Port | None = None  # None: the service's port (required for fwmark services)
    weight: Weight = 1
    enabled: StrictBool = True  # False: maintenance, not in IPVS at all
    upper_threshold: Annotated[int, Field(ge=0, le=1_000_000), JsonInteger] = 0  # 0: unlimited
    lower_threshold: Annotated[int, Field(ge=0, le=1_000_000), JsonInteger] = 0
    health_check: HealthCheck | None = None  # None: the service's check
    description: Description = ""

    @model_validator(mode="after")
    def _thresholds(self) -> Self:
        if self.lower_threshold and not self.upper_threshold:
            raise ValueError("upper_threshold: lower_threshold needs an upper_threshold")
        if self.upper_threshold and self.lower_threshold >= self.upper_threshold:
            raise ValueError("lower_threshold: must be below upper_threshold")
        return self


class Service(Strict):
    """An IPVS virtual service.

    One port: a plain `address:port` service. Several ports: a firewall-mark service; nftables
    marks packets to `address` on any of `ports` with `fwmark`, and IPVS balances the mark, so
    persistence is shared across those ports (e.g. 80 and 443 land on the same backend).
    """

    name: Name
    description: Description = ""
    enabled: StrictBool = True
    address: HostAddress
    ports: list[Port] = Field(min_length=1, max_length=32)
    fwmark: Fwmark | None = None  # assigned by the control plane for multi-port services
    protocol: Protocol = Protocol.TCP
    scheduler: Scheduler = Scheduler.WLC
    scheduler_fallback: StrictBool = False  # sh/mh: skip overloaded or weight-0 servers
    scheduler_port: StrictBool = False  # sh/mh: hash the source port as well as the address
    one_packet_scheduling: StrictBool = False  # UDP: schedule every datagram separately
    forwarding: Forwarding = Forwarding.NAT
    tunnel_type: TunnelType = TunnelType.IPIP
    tunnel_port: Port | None = None  # GUE only
    one_arm: StrictBool = False  # NAT: nftables SNAT so backends need no route via the appliance
    snat_address: IPAddress | None = None  # one-arm source; None masquerades to the egress address
    persistence_timeout: Annotated[int, Field(ge=1, le=86400 * 31), JsonInteger] | None = None
    persistence_prefix: Annotated[int, Field(ge=1, le=128), JsonInteger] | None = (
        None  # clients grouped by prefix
    )
    quorum: Annotated[int, Field(ge=1, le=1_000_000), JsonInteger] = 1
    sorry_server: SorryServer | None = None
    health_check: HealthCheck = Field(default_factory=HealthCheck)
    backends: list[Backend] = Field(default_factory=list, max_length=10_000)

    @property
    def is_fwmark(self) -> bool:
        return len(self.ports) > 1

    @property
    def family(self) -> int:
        return self.address.version

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if len(set(self.ports)) != len(self.ports):
            raise ValueError(f"ports: lists a port twice: {self.ports}")
        if self.is_fwmark and self.fwmark is None:
            raise ValueError("fwmark: a multi-port service needs a fwmark")
        if not self.is_fwmark and self.fwmark is not None:
            raise ValueError("fwmark: only multi-port services have one")
        if (self.scheduler_fallback or self.scheduler_port) and self.scheduler not in (
            Scheduler.SH,
            Scheduler.MH,
        ):
            raise ValueError("scheduler: scheduler_fallback and scheduler_port apply only to sh and mh")
        if self.one_packet_scheduling and self.protocol != Protocol.UDP:
            raise ValueError("one_packet_scheduling: applies only to udp services")
        if self.forwarding != Forwarding.TUN and (
            self.tunnel_type != TunnelType.IPIP or self.tunnel_port is not None
        ):
            raise ValueError("tunnel_type: tunnel_type and tunnel_port apply only to tun forwarding")
        if self.tunnel_type == TunnelType.GUE and self.tunnel_port is None:
            raise ValueError("tunnel_port: a gue tunnel needs a port")
        if self.tunnel_type != TunnelType.GUE and self.tunnel_port is not None:
            raise ValueError("tunnel_port: applies only to gue tunnels")
        if self.one_arm and self.forwarding != Forwarding.NAT:
            raise ValueError("one_arm: applies only to nat forwarding")
        if self.snat_address is not None and not self.one_arm:
            raise ValueError("snat_address: applies only to one_arm services")
        if self.snat_address is not None and self.snat_address.version != self.family:
            raise ValueError(
                f"snat_address: {self.snat_address} is not IPv{self.family} like the service address"
            )
        if self.persistence_prefix is not None:
            if self.persistence_timeout is None:
                raise ValueError("persistence_prefix: needs persistence_timeout")
            if self.family == 4 and self.persistence_prefix > 32:
                raise ValueError("persistence_prefix: at most 32 for an IPv4 service")
        if self.sorry_server is not None:
            self._check_member(self.sorry_server.address, self.sorry_server.port, "sorry_server")
        if self.protocol == Protocol.UDP:
            self._check_udp_health(self.health_check, "health_check")
        seen: set[tuple[str, int | None]] = set()
        for index, backend in enumerate(self.backends):
            where = f"backends[{index}]"
            self._check_member(backend.address, backend.port, where)
            key = (str(backend.address), backend.port or (None if self.is_fwmark else self.ports[0]))
            if key in seen:
                raise ValueError(
                    f"{where}.address: backend {_endpoint(backend.address, key[1])} is listed twice"
                )
            seen.add(key)
            if backend.health_check is not None and self.protocol == Protocol.UDP:
                self._check_udp_health(backend.health_check, f"{where}.health_check")
        return self

    def _check_member(self, address: IPAddress, port: int | None, where: str) -> None:
        if address.version != self.family:
            raise ValueError(
                f"{where}.address: {address} is IPv{address.version} but the service address is "
                f"IPv{self.family}"
            )
        if self.is_fwmark and port is not None:
            raise ValueError(
                f"{where}.port: a backend of a multi-port (fwmark) service takes no port; "
                "traffic keeps the port the client used"
            )
        if self.forwarding in (Forwarding.DR, Forwarding.TUN) and port is not None and port != self.ports[0]:
            raise ValueError(
                f"{where}.port: {port} differs from the service port {self.ports[0]}; "
                f"{self.forwarding.value.upper()} forwarding cannot change the destination port"
            )

    @staticmethod
    def _check_udp_health(check: HealthCheck, where: str) -> None:
        if check.type in TCP_BASED_CHECKS and check.port is None:
            raise ValueError(
                f"{where}.type: a {check.type.value} check opens a TCP connection but this is a udp "
                "service; use udp, dns or ping, or set the check's port"
            )


def programmed_backends(service: Service, clustered: bool) -> list[Backend]:
    """The backends keepalived puts in IPVS for `service`, in the service's (creation) order: the
    enabled ones; for a clustered service (ConfigSnapshot.clustered_services) every one, a disabled
    one at weight 0, so that no real server leaves IPVS's list while it exists and the nodes' mh
    tables stay the same (fulcrum.config.cluster)."""
    if clustered:
        return [b if b.enabled else b.model_copy(update={"weight": 0}) for b in service.backends]
    return [b for b in service.backends if b.enabled]


class VipGroup(Strict):
    """A VRRP group: virtual addresses that move between the two nodes together."""

    name: Name
    virtual_router_id: Annotated[int, Field(ge=1, le=255), JsonInteger]
    addresses: list[InterfaceAddress] = Field(min_length=1, max_length=64)
    advert_interval: Annotated[StrictFloat, Field(ge=0.01, le=40.95)] = 0.1
    preempt: StrictBool = False

    @model_validator(mode="after")
    def _centiseconds(self) -> Self:
        # VRRPv3 carries the interval in centiseconds; keepalived refuses anything finer.
        if abs(self.advert_interval * 100 - round(self.advert_interval * 100)) > 1e-6:
            raise ValueError(f"advert_interval: {self.advert_interval} is not a multiple of 0.01 s")
        return self

    @model_validator(mode="after")
    def _one_family(self) -> Self:
        families = {ipaddress.ip_interface(a).version for a in self.addresses}
        if len(families) > 1:
            raise ValueError(
                f"addresses: VIP group {self.name} mixes IPv4 and IPv6; use one group per family"
            )
        if len(set(self.addresses)) != len(self.addresses):
            raise ValueError(f"addresses: VIP group {self.name} lists an address twice")
        return self


class Node(Strict):
    """Settings that belong to this appliance only and never replicate to the peer."""

    name: Name = "fulcrum"
    vrrp_interface: InterfaceName = "eth0"
    priority: Annotated[int, Field(ge=1, le=254), JsonInteger] = 100
    unicast_source: IPAddress | None = None
    peer_address: IPAddress | None = None  # None: no peer (single node) unless multicast
    multicast: StrictBool = False
    sync_interface: InterfaceName | None = None  # IPVS connection sync; None: off
    # Where each VIP group's addresses live on this node, by group name (the NAT backends'
    # gateway on the backend side, say); groups not listed use vrrp_interface. Names of groups
    # that do not exist are ignored: groups replicate, this map does not.
    vip_interfaces: dict[Name, InterfaceName] = Field(default_factory=dict, max_length=64)
    # Further data interfaces whose loss must move the VIPs to the peer; every interface holding
    # a VIP is tracked already.
    track_interfaces: list[InterfaceName] = Field(default_factory=list, max_length=16)

    @model_validator(mode="after")
    def _peers(self) -> Self:
        if self.vrrp_interface == "lo":
            raise ValueError("vrrp_interface: cannot be the loopback interface; VRRP needs a network")
        for group, interface in self.vip_interfaces.items():
            if interface == "lo":
                raise ValueError(f"vip_interfaces: VIP group {group} cannot live on the loopback interface")
        if "lo" in self.track_interfaces:
            raise ValueError(
                "track_interfaces: the loopback interface is always up; track a network interface"
            )
        if len(set(self.track_interfaces)) != len(self.track_interfaces):
            raise ValueError("track_interfaces: lists an interface twice")
        if self.multicast and self.peer_address is not None:
            raise ValueError("multicast: choose unicast (peer_address) or multicast, not both")
        if (
            self.peer_address is not None
            and self.unicast_source is not None
            and self.peer_address.version != self.unicast_source.version
        ):
            raise ValueError("unicast_source: must be the same IP version as peer_address")
        return self


class Firewall(Strict):
    """The appliance's own input filter for its management ports."""

    management_ports: list[Port] = Field(default_factory=lambda: [22, 80, 443], max_length=16)
    management_allow: list[Network] = Field(default_factory=list, max_length=256)  # empty: anywhere

    @model_validator(mode="after")
    def _guarded_ports(self) -> Self:
        # The allow-list restricts the management ports; with none it would silently restrict
        # nothing (no rule is rendered), which is never what an operator listing networks wants.
        if self.management_allow and not self.management_ports:
            raise ValueError(
                "management_ports: a management allow-list needs the ports it guards; "
                "list them, or empty management_allow to allow management from anywhere"
            )
        return self


class ConfigSnapshot(Strict):
    format: Literal[1] = SNAPSHOT_FORMAT
    services: list[Service] = Field(default_factory=list)
    vip_groups: list[VipGroup] = Field(default_factory=list)
    node: Node = Field(default_factory=Node)
    firewall: Firewall = Field(default_factory=Firewall)
    # The appliance's own network (node-local); None: Fulcrum does not manage it (the lab, tests,
    # an appliance before its network was first saved), and nothing of the host's network changes.
    network: NetworkConfig | None = None
    # This node's BGP announcements of the VIPs through FRR (node-local); None: no BGP here.
    bgp: BgpConfig | None = None

    def balanced_services(self) -> list[Service]:
        """The services keepalived puts in IPVS, by name: enabled ones with an enabled backend.

        keepalived refuses a virtual_server without real servers, so a service whose backends are all
        disabled stays out of IPVS (and out of the nftables rules) until one is enabled again.
        """
        active = (s for s in self.services if s.enabled and any(b.enabled for b in s.backends))
        return sorted(active, key=lambda service: service.name)

    def announced_vips(self) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        """The VIPs BGP announces (as /32 and /128), IPv4 first: the listed ones, or by default the
        address of every enabled service. Empty without BGP or with BGP turned off."""
        bgp = self.bgp
        if bgp is None or not bgp.enabled:
            return []
        chosen = bgp.announce if bgp.announce is not None else [s.address for s in self.services if s.enabled]
        return sorted(set(chosen), key=lambda a: (a.version, a))

    def clustered_services(self) -> set[str]:
        """The names of the enabled services whose VIP this node announces by BGP: a router may send
        any of their flows to any node, so every node must pick the same backend (fulcrum.config.cluster)."""
        bgp = self.bgp
        return {s.name for s in self.services if s.enabled and bgp is not None and bgp.announces(s.address)}

    @model_validator(mode="after")
    def _clustered_agree(self, info: ValidationInfo) -> Self:
        """fulcrum.config.cluster's rules, for a configuration being written (context WRITTEN): a
        revision stored before they existed still parses, renders and can be read back."""
        if not (info.context or {}).get("written"):
            return self
        clustered = self.clustered_services()
        for index, service in enumerate(self.services):
            problem = service_problem(service) if service.name in clustered else None
            if problem is not None:
                raise ValueError(f"services[{index}].{problem[0]}: {problem[1]}")
        return self

    @model_validator(mode="after")
    def _announced_are_vips(self) -> Self:
        if self.bgp is None or self.bgp.announce is None:
            return self
        vips = {service.address for service in self.services}
        for index, address in enumerate(self.bgp.announce):
            if address not in vips:
                raise ValueError(f"bgp.announce[{index}]: {address} is not the address of any service")
        return self

    @model_validator(mode="after")
    def _unique(self) -> Self:
        names: dict[str, int] = {}
        listeners: dict[tuple[str, str, int], str] = {}
        marks: dict[int, str] = {}
        for index, service in enumerate(self.services):
            where = f"services[{index}]"
            if service.name in names:
                raise ValueError(f"{where}.name: service name {service.name!r} is used twice")
            names[service.name] = index
            for port in service.ports:
                key = (str(service.address), service.protocol.value, port)
                if key in listeners:
                    raise ValueError(f"{where}.ports: {listener_taken(service, port, listeners[key])}")
                listeners[key] = service.name
            if service.fwmark is not None:
                if service.fwmark in marks:
                    raise ValueError(f"{where}.fwmark: {fwmark_taken(service, marks[service.fwmark])}")
                marks[service.fwmark] = service.name
        group_names: set[str] = set()
        vrids: dict[tuple[int, int], str] = {}
        for index, group in enumerate(self.vip_groups):
            where = f"vip_groups[{index}]"
            if group.name in group_names:
                raise ValueError(f"{where}.name: VIP group name {group.name!r} is used twice")
            group_names.add(group.name)
            family = ipaddress.ip_interface(group.addresses[0]).version
            vrid = (family, group.virtual_router_id)
            if vrid in vrids:
                raise ValueError(
                    f"{where}.virtual_router_id: VRID {group.virtual_router_id} is already used by "
                    f"VIP group {vrids[vrid]!r}; a VRID can be used once per address family"
                )
            vrids[vrid] = group.name
            peer = self.node.peer_address
            if peer is not None and family != peer.version:
                # keepalived sends a group's adverts in the family of its addresses, to its peer.
                raise ValueError(
                    f"{where}.addresses: VIP group {group.name!r} is IPv{family} but node.peer_address "
                    f"{peer} is IPv{peer.version}; unicast VRRP needs a peer of the group's family"
                )
        return self

    @model_validator(mode="after")
    def _node_on_network(self) -> Self:
        """The node's interfaces exist in the network Fulcrum manages, and carry addresses."""
        network = self.network
        if network is None:
            return self
        node = self.node
        # VRRP runs for VIP groups only: without any, the VRRP interface is never used, and a fresh
        # appliance (whose default, eth0, its NICs are not named) can take over its network.
        vrrp = [("node.vrrp_interface", node.vrrp_interface)] if self.vip_groups else []
        named = [
            *vrrp,
            *(("node.vip_interfaces", name) for name in node.vip_interfaces.values()),
            *((f"node.track_interfaces[{i}]", name) for i, name in enumerate(node.track_interfaces)),
        ]
        if node.sync_interface is not None:
            named.append(("node.sync_interface", node.sync_interface))
        for where, name in named:
            interface = network.interface(name)
            if interface is None:
                raise ValueError(f"{where}: {name} is not an interface of this node's network")
            bond = network.bond_of(name)
            if bond is not None:
                raise ValueError(f"{where}: {name} is a member of bond {bond.name}; use the bond")
        sync = node.sync_interface and network.interface(node.sync_interface)
        if sync and not sync.addressed:
            raise ValueError(
                f"node.sync_interface: {node.sync_interface} has no address; connection sync "
                "sends its multicast from an address on it"
            )
        return self

    def canonical_json(self) -> str:
        """The exact text stored in a revision: sorted keys, no whitespace, stable order. A snapshot
        without a managed network or BGP has no "network" or "bgp" key, as before they were modelled,
        so the digests of older revisions still hold."""
        data = self.model_dump(mode="json")
        for node_local in ("network", "bgp"):
            if data[node_local] is None:
                del data[node_local]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def digest(self) -> str:
        return digest_of(self.canonical_json())


def digest_of(canonical_json: str) -> str:
    """The digest of a snapshot from its `canonical_json()`, for a caller that needs both: at
    thousands of backends, making the JSON again is a visible part of a commit."""
    return hashlib.sha256(canonical_json.encode()).hexdigest()


def listener_taken(service: Service, port: int, other: str) -> str:
    """Why `service` cannot listen on `port`: service `other` serves that address:port/protocol."""
    return (
        f"{_endpoint(service.address, port)}/{service.protocol.value} is already served by service {other!r}"
    )


def fwmark_taken(service: Service, other: str) -> str:
    return f"{service.fwmark} is used by service {other!r} too"


def _endpoint(address: IPAddress, port: int | None) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    return host if port is None else f"{host}:{port}"


class VrrpPart(BaseModel):
    """This node and its VIP groups out of a stored snapshot, its services left unread: what the HA
    watcher needs of the running revision every tick. Stored snapshots were validated whole when
    they were made, and no check of the whole changes these two parts."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    vip_groups: list[VipGroup] = Field(default_factory=list)
    node: Node = Field(default_factory=Node)


@functools.lru_cache(maxsize=2)
def parsed_vrrp_part(text: str) -> VrrpPart:
    """Once per text, as parsed_snapshot; the services' JSON is scanned, not validated (a full parse
    of 10,000 backends took seconds of the emulated VM's CPU after every commit)."""
    return VrrpPart.model_validate_json(text)


@functools.lru_cache(maxsize=2)
def parsed_snapshot(text: str) -> ConfigSnapshot:
    """A stored snapshot's text parsed, once per text: a revision never changes, and every write
    request and HA tick reads the running one (0.045 s natively at 5,000 backends, holding the
    interpreter; the emulated VM runs Python tens of times slower). Keyed by the text, not the
    revision's number or digest, so a restored database cannot be served a stale parse. Callers
    treat snapshots as immutable."""
    return ConfigSnapshot.model_validate_json(text)
