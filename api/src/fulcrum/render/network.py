"""The appliance's own network, rendered as the files its system daemons read from /data/network.

- systemd-networkd: a `.link` per NIC (its role name, by permanent MAC address), a `.netdev` per
  bond and VLAN, a `.network` per interface (addresses, DHCP, MTU, bond membership, VLANs, routes);
- systemd-timesyncd: `timesyncd.conf` (/etc/systemd/timesyncd.conf.d/50-fulcrum.conf links to it);
- systemd-resolved: `resolved.conf` (/etc/systemd/resolved.conf.d/50-fulcrum.conf links to it);
- the host name: `hostname`.

Pure: a validated `NetworkConfig` in, {file name: text} out, the same text for the same input.
Every value placed here passed the character sets of fulcrum.config.network and
fulcrum.config.types, which cannot end a line, open a section or add a key.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from fulcrum.config.network import HASHING_MODES, Addressing, Bond, BondMode, NetworkConfig, Nic, Route, Vlan

HEADER = "# Written by Fulcrum from this node's network settings; changes here are overwritten.\n"
# Before the console's 80-fulcrum-mgmt.network (first match wins): a NIC listed here is ours.
LINK_PREFIX, NETDEV_PREFIX, NETWORK_PREFIX = "10-fulcrum-", "20-fulcrum-", "30-fulcrum-"
OWNED_SUFFIXES = (".link", ".netdev", ".network")
TIMESYNCD, RESOLVED, HOSTNAME = "timesyncd.conf", "resolved.conf", "hostname"


def render_network(network: NetworkConfig) -> dict[str, str]:
    """Every file, by name: the networkd files first (sorted), then time, DNS and the host name."""
    files: dict[str, str] = {}
    for nic in network.nics:
        files[f"{LINK_PREFIX}{nic.name}.link"] = _link(nic)
    for bond in network.bonds:
        files[f"{NETDEV_PREFIX}{bond.name}.netdev"] = _bond_netdev(bond)
    for vlan in network.vlans:
        files[f"{NETDEV_PREFIX}{vlan.name}.netdev"] = _vlan_netdev(vlan)
    for _, interface in network.interfaces():
        files[f"{NETWORK_PREFIX}{interface.name}.network"] = _network(network, interface)
    ordered = dict(sorted(files.items()))
    ordered[TIMESYNCD] = _file([("Time", [("NTP", " ".join(network.ntp_servers))])])
    ordered[RESOLVED] = _file(
        [
            (
                "Resolve",
                [
                    ("DNS", " ".join(str(s) for s in network.dns_servers)),
                    ("Domains", " ".join(network.search_domains)),
                ],
            )
        ]
    )
    ordered[HOSTNAME] = network.hostname + "\n"
    return ordered


def is_networkd_file(name: str) -> bool:
    """Whether `name` is one of the networkd files this renderer writes (and so may remove)."""
    prefixed = name.startswith((LINK_PREFIX, NETDEV_PREFIX, NETWORK_PREFIX))
    return prefixed and name.endswith(OWNED_SUFFIXES)


Section = tuple[str, list[tuple[str, str]]]


def _file(sections: Iterable[Section]) -> str:
    blocks = []
    for name, keys in sections:
        lines = [f"[{name}]", *(f"{key}={value}" for key, value in keys)]
        blocks.append("\n".join(lines) + "\n")
    return HEADER + "\n" + "\n".join(blocks)


def _mac_match(nic: Nic) -> tuple[str, str]:
    return ("PermanentMACAddress" if nic.permanent_mac else "MACAddress", nic.mac)


def _link(nic: Nic) -> str:
    return _file([("Match", [_mac_match(nic)]), ("Link", [("Name", nic.name)])])


def _bond_netdev(bond: Bond) -> str:
    options = [("Mode", bond.mode.value), ("MIIMonitorSec", f"{bond.miimon}ms")]
    if bond.mode in HASHING_MODES:
        options.append(("TransmitHashPolicy", bond.xmit_hash_policy.value))
    if bond.mode == BondMode.LACP:
        options.append(("LACPTransmitRate", "fast"))  # a dead link is noticed in 3 s, not 90
    return _file([("NetDev", [("Name", bond.name), ("Kind", "bond")]), ("Bond", options)])


def _vlan_netdev(vlan: Vlan) -> str:
    return _file([("NetDev", [("Name", vlan.name), ("Kind", "vlan")]), ("VLAN", [("Id", str(vlan.vlan_id))])])


def _network(network: NetworkConfig, interface: Addressing) -> str:
    if isinstance(interface, Nic) and interface.permanent_mac:
        match = [_mac_match(interface)]
    elif isinstance(interface, Nic):
        # By the name its .link file gave it: a bond sets its members' current MAC address to its
        # own, after which a match by that address would leave the member unmanaged.
        match = [("Name", interface.name)]
    else:
        match = [("Name", interface.name), ("Kind", "bond" if isinstance(interface, Bond) else "vlan")]
    sections: list[Section] = [("Match", match)]
    link: list[tuple[str, str]] = []
    if interface.mtu is not None:
        link.append(("MTUBytes", str(interface.mtu)))
    if not interface.enabled:
        link.append(("ActivationPolicy", "down"))
    link.append(("RequiredForOnline", "yes" if interface.name == network.management_interface else "no"))
    sections.append(("Link", link))
    bond = network.bond_of(interface.name)
    settings: list[tuple[str, str]] = []
    if bond is not None:
        settings.append(("Bond", bond.name))
    else:
        settings += [("Address", address) for address in sorted(interface.addresses, key=_address_order)]
        settings.append(("DHCP", "ipv4" if interface.dhcp4 else "no"))
        settings.append(("IPv6AcceptRA", "yes" if interface.ipv6_autoconf else "no"))
    settings.append(("LinkLocalAddressing", "no" if bond is not None else "ipv6"))
    settings += [
        ("VLAN", vlan.name)
        for vlan in sorted(network.vlans, key=lambda v: v.name)
        if vlan.parent == interface.name
    ]
    sections.append(("Network", settings))
    for route in _routes_via(network, interface.name):
        keys = [("Destination", route.destination), ("Gateway", str(route.gateway))]
        if route.table is not None:
            keys.append(("Table", str(route.table)))
        if route.metric is not None:
            keys.append(("Metric", str(route.metric)))
        sections.append(("Route", keys))
    return _file(sections)


def _routes_via(network: NetworkConfig, name: str) -> list[Route]:
    """The routes whose gateway is on `name`'s networks, the default gateways among them."""
    routes = list(network.routes)
    if network.gateway4 is not None:
        routes.append(Route(destination="0.0.0.0/0", gateway=network.gateway4))
    if network.gateway6 is not None:
        routes.append(Route(destination="::/0", gateway=network.gateway6))
    mine = [r for r in routes if network.connected_interface(r.gateway) == name]
    return sorted(mine, key=lambda r: (r.table or 0, _network_order(r.destination), str(r.gateway)))


def _address_order(address: str) -> tuple[int, int, int]:
    interface = ipaddress.ip_interface(address)
    return interface.version, int(interface.ip), interface.network.prefixlen


def _network_order(network: str) -> tuple[int, int, int]:
    parsed = ipaddress.ip_network(network)
    return parsed.version, int(parsed.network_address), parsed.prefixlen
