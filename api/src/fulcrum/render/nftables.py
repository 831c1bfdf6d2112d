"""The appliance's own nftables table, `inet fulcrum`, from a snapshot.

The file creates, deletes and recreates the table, so `nft -f` replaces it in one transaction
whether or not it exists. Four chains:

- input guards the management ports and nothing else (VRRP and services pass untouched);
- announced_unbalanced drops what IPVS left of the flows to a VIP this node announces by BGP;
- prerouting marks the packets of multi-port services with the fwmark IPVS balances;
- postrouting source-NATs the connections of one-arm services to their backends.

Only addresses, networks, numbers and service names (comments) reach the file.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from fulcrum.config.snapshot import ConfigSnapshot, Firewall, Service
from fulcrum.config.types import Protocol
from fulcrum.render.jinja import template

_TEMPLATE = template("nftables.nft.j2")

_FAMILY = {4: "ip", 6: "ip6"}


def render_nftables(snapshot: ConfigSnapshot) -> str:
    """The whole ruleset file for the snapshot; the same input always gives the same text."""
    services = snapshot.balanced_services()
    return _TEMPLATE.render(
        management=_management(snapshot.firewall, services),
        unbalanced=_announced_endpoints(snapshot, services),
        marks=[_mark(service) for service in services if service.is_fwmark],
        snat=[_snat(service) for service in services if service.one_arm],
    )


def _management(firewall: Firewall, services: list[Service]) -> dict[str, object] | None:
    """The management guard, or None when every source may reach the management ports.

    A non-empty allow list names every source allowed, whatever its family: listing only IPv4
    networks shuts IPv6 sources out of the management ports, and the reverse.
    """
    ports = sorted(set(firewall.management_ports))
    if not firewall.management_allow or not ports:
        return None
    # IPVS takes its connections after the input hook, so a service that shares a port with
    # management must be let through before the guard drops that port.
    listeners = sorted(
        {
            (service.address.version, service.address, port)
            for service in services
            if service.protocol == Protocol.TCP
            for port in service.ports
            if port in ports
        }
    )
    networks = [ipaddress.ip_network(network) for network in firewall.management_allow]
    # Merged, so a set never holds overlapping intervals.
    v4 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv4Network))
    v6 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv6Network))
    return {
        "ports": _join(ports),
        "listeners": _per_family((version, f"{address} . {port}") for version, address, port in listeners),
        "allow": _per_family([*((4, str(n)) for n in v4), *((6, str(n)) for n in v6)]),
    }


def _announced_endpoints(snapshot: ConfigSnapshot, services: list[Service]) -> list[dict[str, str]]:
    """Address . protocol . port of every balanced service whose VIP this node announces.

    A router sends such a service's flows to this node until a withdrawal reaches it. IPVS takes
    them at its input hook; whatever it leaves (its virtual server gone: keepalived stopped takes
    them with it, between the node going unfit and the withdrawal) would reach this host's own
    stack, which answers a TCP segment with a reset and a datagram with port-unreachable, ending a
    connection that another node carries on once the route has changed. Dropped, the client
    retransmits onto the new path. Only announced VIPs: a pair's node has no other path to leave
    the flow to, and a quick reset there lets a client reconnect at once.
    """
    clustered = snapshot.clustered_services()
    return _per_family(
        (service.address.version, f"{service.address} . {service.protocol.value} . {port}")
        for service in services
        if service.name in clustered
        for port in sorted(service.ports)
    )


def _mark(service: Service) -> dict[str, object]:
    return {
        "name": service.name,
        "family": _FAMILY[service.family],
        "address": str(service.address),
        "protocol": service.protocol.value,
        "ports": _join(sorted(service.ports)),
        "fwmark": service.fwmark,
    }


def _snat(service: Service) -> dict[str, object]:
    """Match the connections IPVS forwards for the service, as conntrack saw them arrive.

    A fwmark service is matched by its mark, which prerouting set on the very packet IPVS
    forwards. A single-port one by the original destination of the connection: by now IPVS has
    rewritten the packet's own destination to the backend.
    """
    family = _FAMILY[service.family]
    if service.is_fwmark:
        match = f"meta mark {service.fwmark}"
    else:
        match = (
            f"meta l4proto {service.protocol.value} ct original {family} daddr {service.address} "
            f"ct original proto-dst {service.ports[0]}"
        )
    action = "masquerade" if service.snat_address is None else f"snat {family} to {service.snat_address}"
    return {"name": service.name, "match": match, "action": action}


def _per_family(elements: Iterable[tuple[int, str]]) -> list[dict[str, str]]:
    """Group (IP version, set element) pairs into one nft set per family, IPv4 first."""
    by_version: dict[int, list[str]] = {}
    for version, element in elements:
        by_version.setdefault(version, []).append(element)
    return [
        {"family": _FAMILY[version], "elements": _join(by_version[version])} for version in sorted(by_version)
    ]


def _join(items: Iterable[object]) -> str:
    return ", ".join(str(item) for item in items)
