"""The appliance's own network: NICs, bonds, VLANs, routes, DNS, time and hostname.

Node-local like `Node`: each appliance has its own addresses, so this part of a snapshot never
replicates to the HA peer (fulcrum.services.lineage leaves it out of the shared part).

Everything here is rendered into systemd-networkd, timesyncd and resolved files, whose syntax is
`Key=value` lines in `[Section]`s: every string is restricted to a character set that cannot end
a line, open a section or add a key (no whitespace, '[', ']', '=', '#', ';'), so the renderers may
place values verbatim (tests/unit/render/test_network.py proves it with hostile input).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from fulcrum.config.types import InterfaceAddress, InterfaceName, IPAddress, JsonInteger, Network

MacAddress = Annotated[
    str, StringConstraints(pattern=r"^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}$", to_lower=True)
]
# The static host name: one DNS label (the kernel's nodename is at most 64 characters).
HOST_LABEL_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
HostLabel = Annotated[str, StringConstraints(pattern=HOST_LABEL_PATTERN)]
# A DNS domain without the root's trailing dot: search domains and NTP server names.
DOMAIN_PATTERN = (
    r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
Domain = Annotated[str, StringConstraints(pattern=DOMAIN_PATTERN, max_length=253)]
Mtu = Annotated[int, Field(ge=576, le=9216), JsonInteger]
# Routing tables an operator may name: not 0 (unspecified) nor the kernel's own 253-255
# (default, main, local); routes without a table go to main.
RouteTable = Annotated[int, Field(ge=1, le=252), JsonInteger]

MANAGEMENT_DEFAULT = "mgmt"
NTP_SERVERS_MAX = 8

ROUND_ROBIN_REASON = (
    "balance-rr sends the packets of one flow round robin over every member, so links of different "
    "latency deliver them out of order and TCP collapses (SARA's measurements: under 1 Gb/s over "
    "two 10GE links when one path had 17 ms more delay); 802.3ad or balance-xor hash each flow onto "
    "one link. Set allow_round_robin to use it anyway"
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BondMode(StrEnum):
    ACTIVE_BACKUP = "active-backup"
    LACP = "802.3ad"
    BALANCE_XOR = "balance-xor"
    BALANCE_RR = "balance-rr"  # refused unless allow_round_robin (ROUND_ROBIN_REASON)


class XmitHashPolicy(StrEnum):
    LAYER2 = "layer2"
    LAYER2_3 = "layer2+3"
    LAYER3_4 = "layer3+4"
    ENCAP2_3 = "encap2+3"
    ENCAP3_4 = "encap3+4"


HASHING_MODES = (BondMode.LACP, BondMode.BALANCE_XOR)


class Addressing(Strict):
    """What every interface the appliance configures has: its addresses, MTU and whether it is up."""

    name: InterfaceName
    addresses: list[InterfaceAddress] = Field(default_factory=list, max_length=64)  # static, both families
    dhcp4: StrictBool = False
    ipv6_autoconf: StrictBool = False  # SLAAC from router advertisements (and DHCPv6 if they say so)
    mtu: Mtu | None = None  # None: the kernel's default
    enabled: StrictBool = True

    @property
    def addressed(self) -> bool:
        return bool(self.addresses) or self.dhcp4 or self.ipv6_autoconf


class Nic(Addressing):
    """A physical NIC, named by its permanent MAC address so that a re-ordered NIC keeps its role."""

    mac: MacAddress
    # Match the NIC by its permanent (burnt-in) address, which a bond cannot change. False: by its
    # current address, for virtual NICs that have none (veth, some hypervisors' NICs).
    permanent_mac: StrictBool = True


class Bond(Addressing):
    members: list[InterfaceName] = Field(min_length=1, max_length=8)
    mode: BondMode = BondMode.ACTIVE_BACKUP
    xmit_hash_policy: XmitHashPolicy = XmitHashPolicy.LAYER3_4  # per flow: one flow stays on one link
    miimon: Annotated[int, Field(ge=0, le=10_000), JsonInteger] = 100  # ms; 0: no link monitoring
    allow_round_robin: StrictBool = False

    @model_validator(mode="after")
    def _mode(self) -> Self:
        if self.mode == BondMode.BALANCE_RR and not self.allow_round_robin:
            raise ValueError(f"mode: {ROUND_ROBIN_REASON}")
        if len(set(self.members)) != len(self.members):
            raise ValueError("members: lists an interface twice")
        return self


class Vlan(Addressing):
    """An 802.1Q sub-interface of a NIC or a bond."""

    parent: InterfaceName
    vlan_id: Annotated[int, Field(ge=1, le=4094), JsonInteger]


class Route(Strict):
    destination: Network
    gateway: IPAddress
    table: RouteTable | None = None  # None: the main table
    metric: Annotated[int, Field(ge=0, le=65535), JsonInteger] | None = None


class NetworkConfig(Strict):
    hostname: HostLabel = "fulcrum"
    management_interface: InterfaceName = MANAGEMENT_DEFAULT
    nics: list[Nic] = Field(default_factory=list, max_length=32)
    bonds: list[Bond] = Field(default_factory=list, max_length=16)
    vlans: list[Vlan] = Field(default_factory=list, max_length=256)
    routes: list[Route] = Field(default_factory=list, max_length=256)
    gateway4: ipaddress.IPv4Address | None = None
    gateway6: ipaddress.IPv6Address | None = None
    dns_servers: list[IPAddress] = Field(default_factory=list, max_length=8)
    search_domains: list[Domain] = Field(default_factory=list, max_length=8)
    ntp_servers: list[Annotated[str, StringConstraints(pattern=DOMAIN_PATTERN, max_length=253)]] = Field(
        default_factory=list, max_length=NTP_SERVERS_MAX
    )

    def interfaces(self) -> Iterator[tuple[str, Addressing]]:
        """(location, interface) of every interface, NICs first: "nics[0]", "bonds[1]", ..."""
        for kind in ("nics", "bonds", "vlans"):
            for index, interface in enumerate(getattr(self, kind)):
                yield f"{kind}[{index}]", interface

    def interface(self, name: str) -> Addressing | None:
        return next((i for _, i in self.interfaces() if i.name == name), None)

    def bond_of(self, name: str) -> Bond | None:
        return next((b for b in self.bonds if name in b.members), None)

    def connected_interface(self, gateway: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
        """The interface whose static address's network holds `gateway` (None: none does)."""
        for _, interface in self.interfaces():
            for address in interface.addresses:
                if gateway in ipaddress.ip_interface(address).network:
                    return interface.name
        return None

    @model_validator(mode="after")
    def _names(self) -> Self:
        names: dict[str, str] = {}
        macs: dict[str, str] = {}
        for where, interface in self.interfaces():
            if interface.name == "lo":
                raise ValueError(f"{where}.name: lo is the loopback interface; it is not configured here")
            if interface.name in names:
                raise ValueError(f"{where}.name: {interface.name} is already {names[interface.name]}")
            names[interface.name] = where
            if isinstance(interface, Nic):
                if interface.mac in macs:
                    raise ValueError(
                        f"{where}.mac: {interface.mac} is already the MAC of {macs[interface.mac]}"
                    )
                macs[interface.mac] = interface.name
        return self

    @model_validator(mode="after")
    def _bonds_and_vlans(self) -> Self:
        nics = {n.name: n for n in self.nics}
        bonded: dict[str, str] = {}
        for index, bond in enumerate(self.bonds):
            for position, member in enumerate(bond.members):
                where = f"bonds[{index}].members[{position}]"
                if member not in nics:
                    raise ValueError(
                        f"{where}: {member} is not a NIC listed in nics; only NICs can be bonded"
                    )
                if member in bonded:
                    raise ValueError(f"{where}: {member} is already a member of bond {bonded[member]}")
                bonded[member] = bond.name
                if nics[member].addressed:
                    raise ValueError(
                        f"{where}: {member} has addresses of its own; a bond member carries none "
                        "(address the bond instead)"
                    )
                if nics[member].mtu is not None:
                    raise ValueError(f"{where}: {member} sets an MTU; set it on the bond")
        parents = {n.name for n in self.nics} | {b.name for b in self.bonds}
        tagged: dict[tuple[str, int], str] = {}
        for index, vlan in enumerate(self.vlans):
            where = f"vlans[{index}]"
            if vlan.parent not in parents:
                raise ValueError(f"{where}.parent: {vlan.parent} is not a NIC or bond listed here")
            if vlan.parent in bonded:
                raise ValueError(
                    f"{where}.parent: {vlan.parent} is a member of bond {bonded[vlan.parent]}; "
                    "put the VLAN on the bond"
                )
            key = (vlan.parent, vlan.vlan_id)
            if key in tagged:
                raise ValueError(
                    f"{where}.vlan_id: VLAN {vlan.vlan_id} on {vlan.parent} is already {tagged[key]}"
                )
            tagged[key] = vlan.name
        return self

    @model_validator(mode="after")
    def _addresses(self) -> Self:
        seen: dict[str, str] = {}
        for where, interface in self.interfaces():
            for position, address in enumerate(interface.addresses):
                host = str(ipaddress.ip_interface(address).ip)
                if host in seen:
                    raise ValueError(
                        f"{where}.addresses[{position}]: {host} is already an address of {seen[host]}"
                    )
                seen[host] = interface.name
        return self

    @model_validator(mode="after")
    def _routes(self) -> Self:
        for index, route in enumerate(self.routes):
            where = f"routes[{index}]"
            destination = ipaddress.ip_network(route.destination)
            if destination.version != route.gateway.version:
                raise ValueError(
                    f"{where}.gateway: {route.gateway} is not IPv{destination.version} like the destination"
                )
            self._on_link(route.gateway, f"{where}.gateway")
        for field, gateway in (("gateway4", self.gateway4), ("gateway6", self.gateway6)):
            if gateway is not None:
                self._on_link(gateway, field)
        return self

    def _on_link(self, gateway: ipaddress.IPv4Address | ipaddress.IPv6Address, where: str) -> None:
        if self.connected_interface(gateway) is None:
            raise ValueError(
                f"{where}: {gateway} is on no connected network: no static address of any interface "
                "here is in a network that holds it"
            )

    @model_validator(mode="after")
    def _management(self) -> Self:
        interface = self.interface(self.management_interface)
        if interface is None:
            raise ValueError(
                f"management_interface: {self.management_interface} is not an interface listed here"
            )
        if not interface.enabled or not interface.addressed:
            raise ValueError(
                f"management_interface: {self.management_interface} must be enabled and have an address "
                "(static, DHCP or SLAAC), or the dashboard cannot be reached"
            )
        return self

    def management_addresses(self) -> list[str]:
        """The management interface's static addresses, and "dhcp4"/"ipv6-autoconf" if it takes them."""
        interface = self.interface(self.management_interface)
        if interface is None:
            return []
        dynamic = ["dhcp4"] * interface.dhcp4 + ["ipv6-autoconf"] * interface.ipv6_autoconf
        return sorted(str(ipaddress.ip_interface(a).ip) for a in interface.addresses) + dynamic
