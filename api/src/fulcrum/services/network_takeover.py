"""Taking this node's network over: a first network document from what the kernel runs now.

The dashboard's "Manage this network" starts its form from it (GET /network/takeover), and the
console's first management address commits it (services.console_network): one reading of the
kernel for both, so what the admin reviews is what the console would have taken.

- each NIC with the addresses it has: static ones as they are, those with a lifetime as DHCPv4 or
  SLAAC; a bond's member without any (its bond has them);
- each bond with its members (its mode is not in the kernel's list: the admin checks it);
- the main table's default gateways, and the other routes someone configured;
- the host name, and the NTP servers timesyncd uses now (without them a take-over would stop the
  clock's synchronisation).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path
from typing import Any

from fulcrum.config.network import HOST_LABEL_PATTERN, NetworkConfig
from fulcrum.dataplane import links
from fulcrum.dataplane.nics import KernelNic, read_nics
from fulcrum.errors import ConfigInvalid, Conflict, Unavailable
from fulcrum.services.network import ntp_servers_in_use
from fulcrum.services.validation import validated

HOST_LABEL = re.compile(HOST_LABEL_PATTERN)
# Routes someone configured (by hand, the console, a static configuration), not those the kernel
# derives from addresses or that DHCP and router advertisements bring.
_CONFIGURED_ROUTE = frozenset({"boot", "static"})


def read_kernel() -> tuple[list[KernelNic], list[links.Route]]:
    try:
        return read_nics(), links.read_routes()
    except OSError as exc:
        raise Unavailable(f"cannot read this node's interfaces: {exc}") from exc


def proposal(address: str | None, network_dir: Path | None) -> NetworkConfig:
    """The take-over with the management interface holding `address` (where the dashboard was
    opened), else the first one with an address, else the first NIC or bond. Conflict when the
    kernel runs something the model refuses (a route through an address DHCP gave, say): nothing
    the client sent is wrong, so it says where in the kernel's network the trouble is."""
    nics, routes = read_kernel()
    try:
        return document(nics, routes, management_holding(nics, address), network_dir)
    except ConfigInvalid as invalid:
        where = "; ".join(f"{_field(error['loc'])}: {error['msg']}" for error in invalid.errors)
        message = f"this node's network cannot be taken over as the kernel runs it: {where}"
        raise Conflict(message) from invalid


def management_holding(nics: list[KernelNic], address: str | None) -> str:
    candidates = [n for n in nics if (n.kind == "physical" and not n.bond_master) or _is_bond(n)]
    wanted = address.strip("[]") if address else None
    holding = next((n.name for n in candidates if wanted and wanted in n.addresses), None)
    addressed = next((n.name for n in candidates if _global_addresses(n)), None)
    return holding or addressed or (candidates[0].name if candidates else "")


def document(
    nics: list[KernelNic], routes: list[links.Route], management: str, network_dir: Path | None
) -> NetworkConfig:
    """The take-over, validated like any network (ConfigInvalid names what the kernel has that the
    model refuses)."""
    found = taken_over(nics, routes, management) | kept_settings(network_dir)
    return validated(lambda: NetworkConfig.model_validate(found))


def kept_settings(network_dir: Path | None) -> dict[str, Any]:
    """What a take-over keeps beyond the kernel's interfaces: the host name, and the NTP servers
    timesyncd uses now (a take-over without them would stop the clock's synchronisation)."""
    kept: dict[str, Any] = {}
    hostname = socket.gethostname()
    if HOST_LABEL.fullmatch(hostname):
        kept["hostname"] = hostname
    servers = ntp_servers_in_use(network_dir)
    if servers:
        kept["ntp_servers"] = servers
    return kept


def taken_over(nics: list[KernelNic], routes: list[links.Route], management: str) -> dict[str, Any]:
    """The interfaces, routes and gateways of the take-over (the module's list)."""

    def addressed(nic: KernelNic) -> dict[str, Any]:
        dynamic = set(nic.dynamic_addresses)
        found = _global_addresses(nic)
        return {
            "addresses": [a for a in found if a not in dynamic],
            "dhcp4": any(a in dynamic and ":" not in a for a in found),
            "ipv6_autoconf": any(a in dynamic and ":" in a for a in found),
        }

    physical = [
        {"name": n.name, "mac": n.mac, **({} if n.bond_master else addressed(n))}
        for n in nics
        if n.kind == "physical"
    ]
    bonds = [{"name": n.name, "members": n.bond_members, **addressed(n)} for n in nics if _is_bond(n)]
    configured = [
        r
        for r in routes
        if r.gateway is not None
        and r.protocol in _CONFIGURED_ROUTE
        and not ipaddress.ip_address(r.gateway).is_link_local
    ]

    def gateway(default: str) -> str | None:
        return next(
            (r.gateway for r in configured if r.table == links.RT_TABLE_MAIN and r.destination == default),
            None,
        )

    static_routes = [
        {"destination": r.destination, "gateway": r.gateway}
        | ({"table": r.table} if r.table != links.RT_TABLE_MAIN else {})
        | ({"metric": r.metric} if r.metric is not None else {})
        for r in configured
        if r.table != links.RT_TABLE_MAIN or r.destination not in ("0.0.0.0/0", "::/0")
    ]
    return {
        "management_interface": management,
        "nics": physical,
        "bonds": bonds,
        "routes": static_routes,
        "gateway4": gateway("0.0.0.0/0"),
        "gateway6": gateway("::/0"),
    }


def _field(loc: list[str | int]) -> str:
    """routes[1].gateway, from ["body", "routes", 1, "gateway"]."""
    path = ""
    for step in loc[1:] if loc and loc[0] == "body" else loc:
        path += f"[{step}]" if isinstance(step, int) else f".{step}" if path else str(step)
    return path


def _is_bond(nic: KernelNic) -> bool:
    return nic.kind == "bond" and bool(nic.bond_members)


def _global_addresses(nic: KernelNic) -> list[str]:
    return [a for a in nic.prefixed_addresses if not ipaddress.ip_interface(a).ip.is_link_local]
