"""This node's BGP, rendered as FRR's integrated frr.conf (bgpd and bfdd sections).

How the VIPs are announced: one `network PREFIX` statement per VIP (/32, /128) with BGP's import
check off, not a `redistribute` of static, blackhole or connected routes. A `network` statement
names exactly one prefix, so nothing else of the node's routing table can leak out, it needs no
other daemon (staticd) and no route the kernel would act on, and a withdrawal is a reload that
drops those lines, which frr-reload.py applies as `no network ...` on the live session (the
session stays up). Whether the node is fit to announce (healthy, not in maintenance) is decided by
Fulcrum, which renders with `announce=False` to withdraw, not by the presence of the VIP address.

The VIPs are addresses of the node's loopback, set by zebra from the same file (`interface lo`):
IPVS sees only packets addressed to the node itself, and the routers reach every node's copy of
a VIP through the announced routes.

Defence in depth: the export route-map lets out only the VIP prefix-lists' prefixes, tagged with
the configured communities; the import route-map takes nothing from the routers (the node needs
no routes from them: its own routing is systemd-networkd's).

ECMP: every node renders the same prefixes with the same attributes (no MED, no AS-path prepend,
the same communities), so a router with `maximum-paths` sees equal-cost paths and spreads flows.
BFD (100 ms x 3 asked; a session runs at the slower of the two ends' intervals) takes a dead
node's paths out in well under a second, far under BGP's hold time.

Pure: a validated snapshot in, the same text out. Every value placed here passed the character
sets of fulcrum.config.bgp, which cannot end a line, start a comment or quote.
"""

from __future__ import annotations

import ipaddress

from fulcrum.config.bgp import BgpConfig, Neighbor
from fulcrum.config.snapshot import ConfigSnapshot

HEADER = "! Written by Fulcrum from this node's BGP settings; changes here are overwritten.\n"
EXPORT_MAP, IMPORT_MAP = "fulcrum-export", "fulcrum-import"
PREFIX_LISTS = {4: "fulcrum-vips-v4", 6: "fulcrum-vips-v6"}
BFD_PROFILE = "fulcrum"
# BFD detects a dead peer after 3 (bfdd's default multiplier, which FRR does not write back: not
# rendered, so frr-reload.py finds no difference) missed 100 ms intervals.
BFD_INTERVAL_MS = 100
# BGP's own timers where a neighbor sets none: FRR's datacenter profile (keepalive 3 s, hold 9 s).
KEEPALIVE, HOLD = 3, 9


def render_frr(snapshot: ConfigSnapshot, announce: bool = True) -> str:
    """frr.conf for `snapshot`'s BGP. `announce=False` withdraws every VIP (the sessions stay up).
    Without BGP, or with it turned off, only the header: FRR runs no BGP."""
    bgp = snapshot.bgp
    if bgp is None or not bgp.enabled:
        return HEADER
    vips = snapshot.announced_vips()
    lines = [
        *_loopback(vips),
        *_prefix_lists(vips),
        "!",
        *_route_maps(bgp),
        "!",
        *_bfd(bgp),
        *_router(bgp, vips if announce else []),
    ]
    return HEADER + "!\n" + "\n".join(lines) + "\n"


def _prefix(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"{address}/{address.max_prefixlen}"


def _loopback(vips: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> list[str]:
    """Every announced VIP as an address of the loopback, which zebra adds to the kernel: IPVS takes
    only packets addressed to the node itself, and the routers send the VIP's flows to every node.
    Kept while the node withdraws, so that the flows the routers still send until they have taken
    the withdrawal in are served, not reset."""
    if not vips:
        return []
    keyword = {4: "ip", 6: "ipv6"}
    return ["interface lo", *(f" {keyword[v.version]} address {_prefix(v)}" for v in vips), "exit", "!"]


def _prefix_lists(vips: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> list[str]:
    """One list per family: each VIP's host prefix, then an explicit deny (so the list exists, and
    denies everything, when a family has no VIP)."""
    lines = []
    for family, name in PREFIX_LISTS.items():
        keyword = "ip" if family == 4 else "ipv6"
        mine = [v for v in vips if v.version == family]
        lines += [
            f"{keyword} prefix-list {name} seq {10 * (i + 1)} permit {_prefix(v)}" for i, v in enumerate(mine)
        ]
        lines.append(f"{keyword} prefix-list {name} seq {10 * (len(mine) + 1)} deny any")
    return lines


def _route_maps(bgp: BgpConfig) -> list[str]:
    sets = []
    if bgp.communities:
        sets.append(f" set community {' '.join(bgp.communities)}")
    if bgp.large_communities:
        sets.append(f" set large-community {' '.join(bgp.large_communities)}")
    lines = []
    for order, (family, name) in enumerate(PREFIX_LISTS.items(), start=1):
        keyword = "ip" if family == 4 else "ipv6"
        lines += [
            f"route-map {EXPORT_MAP} permit {10 * order}",
            f" match {keyword} address prefix-list {name}",
            *sets,
            "exit",
        ]
    return [*lines, f"route-map {IMPORT_MAP} deny 10", "exit"]


def _bfd(bgp: BgpConfig) -> list[str]:
    if not any(neighbor.bfd for neighbor in bgp.neighbors):
        return []
    return [
        "bfd",
        f" profile {BFD_PROFILE}",
        f"  receive-interval {BFD_INTERVAL_MS}",
        f"  transmit-interval {BFD_INTERVAL_MS}",
        " exit",
        "exit",
        "!",
    ]


def _router(bgp: BgpConfig, vips: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> list[str]:
    lines = [
        f"router bgp {bgp.asn}",
        f" bgp router-id {bgp.router_id}",
        " no bgp default ipv4-unicast",
        " no bgp network import-check",
        f" timers bgp {KEEPALIVE} {HOLD}",
    ]
    for neighbor in bgp.neighbors:
        lines += _neighbor(neighbor)
    for family in PREFIX_LISTS:
        peers = [n for n in bgp.neighbors if n.address.version == family]
        mine = [v for v in vips if v.version == family]
        if not peers:
            continue
        lines += [
            f" address-family ipv{family} unicast",
            *(f"  network {_prefix(v)}" for v in mine),
        ]
        for peer in peers:
            lines += [
                f"  neighbor {peer.address} activate",
                f"  neighbor {peer.address} route-map {IMPORT_MAP} in",
                f"  neighbor {peer.address} route-map {EXPORT_MAP} out",
            ]
        lines.append(" exit-address-family")
    return [*lines, "exit"]


def _neighbor(neighbor: Neighbor) -> list[str]:
    address = neighbor.address
    lines = [f" neighbor {address} remote-as {neighbor.remote_asn}"]
    if neighbor.description is not None:
        lines.append(f" neighbor {address} description {neighbor.description}")
    if neighbor.password is not None:
        lines.append(f" neighbor {address} password {neighbor.password}")
    if neighbor.timers is not None:
        lines.append(f" neighbor {address} timers {neighbor.timers.keepalive} {neighbor.timers.hold}")
    if neighbor.bfd:
        # Both lines, as FRR's running configuration has them: frr-reload.py would otherwise
        # remove the first on every reload.
        lines += [f" neighbor {address} bfd", f" neighbor {address} bfd profile {BFD_PROFILE}"]
    return lines
