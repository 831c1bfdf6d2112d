"""What a change of this node's BGP does, in operators' terms (part of the change plan).

Pure, like fulcrum.services.plan. What an operator must not miss: a VIP withdrawn or a session
closed moves that router's flows to the other nodes (with mh every node picks the same backend, so
held connections continue, but the traffic moves), and a change of the AS number, the router ID,
a neighbor's AS or its password restarts sessions. TCP-MD5 passwords are never named, only that
one changes.
"""

from __future__ import annotations

import ipaddress

from fulcrum.config.bgp import BgpConfig, Neighbor
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.schemas.revisions import PlanAction, PlanItem

KIND = "bgp"
MOVES_FLOWS = "the router sends this node's share of the flows to the other nodes announcing it"


def bgp_changes(before: ConfigSnapshot, after: ConfigSnapshot) -> list[PlanItem]:
    old, new = _running(before.bgp), _running(after.bgp)
    if old is None and new is None:
        return []
    if new is None:
        assert old is not None
        return [
            _item(
                PlanAction.REMOVE,
                target=f"BGP (AS {old.asn})",
                detail=f"FRR withdraws {_vips(before.announced_vips())} and closes its sessions: "
                f"{MOVES_FLOWS}",
                disruptive=bool(before.announced_vips()),
            )
        ]
    if old is None:
        return [
            _item(
                PlanAction.ADD,
                target=f"BGP (AS {new.asn}, router ID {new.router_id})",
                detail=f"FRR opens sessions to {_neighbors(new.neighbors)} and announces "
                f"{_vips(after.announced_vips())}",
            )
        ]
    items = []
    if (old.asn, old.router_id) != (new.asn, new.router_id):
        items.append(
            _item(
                PlanAction.CHANGE,
                target=f"BGP (AS {new.asn}, router ID {new.router_id})",
                detail=f"was AS {old.asn}, router ID {old.router_id}: every session restarts, and while "
                f"it does {MOVES_FLOWS}",
                disruptive=True,
            )
        )
    items += _announcement_changes(before.announced_vips(), after.announced_vips())
    items += _neighbor_changes(old.neighbors, new.neighbors)
    if (old.communities, old.large_communities) != (new.communities, new.large_communities):
        tags = [*new.communities, *new.large_communities]
        items.append(
            _item(
                PlanAction.CHANGE,
                target="communities",
                detail=f"the routes are announced again tagged {', '.join(tags) if tags else 'with none'}",
            )
        )
    return items


def _item(action: PlanAction, target: str, detail: str, disruptive: bool = False) -> PlanItem:
    return PlanItem(kind=KIND, action=action, target=target, detail=detail, disruptive=disruptive)


def _running(bgp: BgpConfig | None) -> BgpConfig | None:
    """BGP as FRR runs it: turned off is the same as none (no sessions, nothing announced)."""
    return bgp if bgp is not None and bgp.enabled else None


def _announcement_changes(
    old: list[ipaddress.IPv4Address | ipaddress.IPv6Address],
    new: list[ipaddress.IPv4Address | ipaddress.IPv6Address],
) -> list[PlanItem]:
    items = [
        _item(
            PlanAction.ADD,
            target=f"announce {_prefix(vip)}",
            detail="the routers add this node as a path to it",
        )
        for vip in new
        if vip not in old
    ]
    items += [
        _item(
            PlanAction.REMOVE,
            target=f"announce {_prefix(vip)}",
            detail=f"withdrawn: {MOVES_FLOWS}",
            disruptive=True,
        )
        for vip in old
        if vip not in new
    ]
    return items


def _neighbor_changes(old: list[Neighbor], new: list[Neighbor]) -> list[PlanItem]:
    before = {n.address: n for n in old}
    after = {n.address: n for n in new}
    items = [
        _item(
            PlanAction.ADD,
            target=f"neighbor {_neighbor(n)}",
            detail="a new session; the VIPs are announced to this router once it is up",
        )
        for address, n in after.items()
        if address not in before
    ]
    items += [
        _item(
            PlanAction.REMOVE,
            target=f"neighbor {_neighbor(n)}",
            detail=f"the session closes: {MOVES_FLOWS}",
            disruptive=True,
        )
        for address, n in before.items()
        if address not in after
    ]
    for address in after.keys() & before.keys():
        a, b = before[address], after[address]
        if a == b:
            continue
        resets = [
            what
            for what, changed in (
                ("AS", a.remote_asn != b.remote_asn),
                ("password", a.password != b.password),
            )
            if changed
        ]
        others = [
            what
            for what, changed in (
                ("BFD", a.bfd != b.bfd),
                ("timers", a.timers != b.timers),
                ("description", a.description != b.description),
            )
            if changed
        ]
        detail = ", ".join(resets + others) + " changed"
        if resets:
            detail += f": the session restarts, and while it does {MOVES_FLOWS}"
        items.append(
            _item(
                PlanAction.CHANGE,
                target=f"neighbor {_neighbor(b)}",
                detail=detail,
                disruptive=bool(resets),
            )
        )
    return items


def _neighbor(n: Neighbor) -> str:
    return f"{n.address} (AS {n.remote_asn})"


def _neighbors(neighbors: list[Neighbor]) -> str:
    return ", ".join(_neighbor(n) for n in neighbors) if neighbors else "no router yet"


def _prefix(vip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"{vip}/{vip.max_prefixlen}"


def _vips(vips: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> str:
    return ", ".join(_prefix(v) for v in vips) if vips else "no VIP"
