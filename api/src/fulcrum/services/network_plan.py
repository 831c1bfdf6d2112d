"""What a change of the appliance's own network does, in operators' terms (part of the change plan).

Pure, like fulcrum.services.plan. The item an operator must not miss is the management address
moving or disappearing: such a commit is confirmed within `MANAGEMENT_CONFIRM_SECONDS` by default,
or the previous network comes back by itself (fulcrum.services.revisions).
"""

from __future__ import annotations

from fulcrum.config.network import Addressing, NetworkConfig
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.schemas.revisions import PlanAction, PlanItem

MANAGEMENT_CONFIRM_SECONDS = 120


def management_moves(before: ConfigSnapshot | None, after: ConfigSnapshot) -> bool:
    """Whether `after` changes where the management interface is reached (or first takes it over)."""
    return management_network_moves(before.network if before else None, after.network)


def management_network_moves(old: NetworkConfig | None, new: NetworkConfig | None) -> bool:
    """`management_moves` given the two networks alone (None: not managed)."""
    if old is None or new is None:
        return old is not new  # taken over, or given back to the console's management network
    return _management(old) != _management(new)


def _management(network: NetworkConfig) -> tuple[object, ...]:
    interface = network.interface(network.management_interface)
    parent = getattr(interface, "parent", None)
    return (
        network.management_interface,
        tuple(network.management_addresses()),
        interface.enabled if interface else None,
        network.interface(parent) if parent else None,  # a VLAN's parent carries it too
        network.bond_of(parent or network.management_interface),
    )


def network_changes(before: ConfigSnapshot | None, after: ConfigSnapshot) -> list[PlanItem]:
    old, new = before.network if before else None, after.network
    if old == new:
        return []
    if new is None:
        detail = (
            "no longer managed by Fulcrum: its interface files are removed and the console's "
            "management network applies again; the commit must be confirmed within "
            f"{MANAGEMENT_CONFIRM_SECONDS} s unless confirm_within says otherwise"
        )
        return [_item(PlanAction.REMOVE, "network", detail, disruptive=True)]
    items: list[PlanItem] = []
    if old is None:
        items.append(
            _item(
                PlanAction.ADD,
                "network",
                "Fulcrum takes over this node's network: every interface below is configured as listed "
                "and interfaces not listed are left alone",
                disruptive=True,
            )
        )
        old = NetworkConfig.model_construct(nics=[], bonds=[], vlans=[], routes=[])
    if management_moves(before, after):
        items.append(_management_item(old, new))
    items += _interface_changes(old, new)
    items += _route_changes(old, new)
    for field, label in (
        ("hostname", "host name"),
        ("dns_servers", "DNS servers"),
        ("search_domains", "DNS search domains"),
        ("ntp_servers", "NTP servers"),
    ):
        was, becomes = getattr(old, field, None), getattr(new, field)
        if was != becomes:
            items.append(_item(PlanAction.CHANGE, label, f"{_text(was)} → {_text(becomes)}"))
    return items


def _management_item(old: NetworkConfig, new: NetworkConfig) -> PlanItem:
    was = f"{old.management_interface} {_text(old.management_addresses())}" if old.nics else "unmanaged"
    becomes = f"{new.management_interface} {_text(new.management_addresses())}"
    return _item(
        PlanAction.CHANGE,
        "management",
        f"the management address moves: {was} → {becomes}. The commit must be confirmed from the new "
        f"address within {MANAGEMENT_CONFIRM_SECONDS} s unless confirm_within says otherwise, or the "
        "previous network comes back by itself",
        disruptive=True,
    )


def _interfaces(network: NetworkConfig) -> dict[str, Addressing]:
    return {interface.name: interface for _, interface in network.interfaces()}


def _interface_changes(old: NetworkConfig, new: NetworkConfig) -> list[PlanItem]:
    a, b = _interfaces(old), _interfaces(new)
    items = [
        _item(PlanAction.ADD, f"interface {name}", _describe(b[name])) for name in sorted(b.keys() - a.keys())
    ]
    for name in sorted(a.keys() - b.keys()):
        addresses = _text(a[name].addresses)
        items.append(
            _item(
                PlanAction.REMOVE,
                f"interface {name}",
                f"no longer configured; its addresses {addresses} disappear"
                if a[name].addresses
                else "no longer configured",
                disruptive=bool(a[name].addresses) or name in {m for bond in old.bonds for m in bond.members},
            )
        )
    for name in sorted(a.keys() & b.keys()):
        if a[name] == b[name]:
            continue
        changed = [
            f"{field} {_text(getattr(a[name], field, None))} → {_text(getattr(b[name], field, None))}"
            for field in type(b[name]).model_fields
            if getattr(a[name], field, None) != getattr(b[name], field, None)
        ]
        gone = [address for address in a[name].addresses if address not in b[name].addresses]
        detail = "; ".join(changed)
        if gone:
            detail += f". Addresses that disappear: {', '.join(gone)}"
        disruptive = (
            bool(gone) or (a[name].enabled and not b[name].enabled) or type(a[name]) is not type(b[name])
        )
        items.append(_item(PlanAction.CHANGE, f"interface {name}", detail, disruptive=disruptive))
    return items


def _route_changes(old: NetworkConfig, new: NetworkConfig) -> list[PlanItem]:
    def label(route: object) -> str:
        destination, gateway, table = (getattr(route, f) for f in ("destination", "gateway", "table"))
        return f"{destination} via {gateway}" + (f" (table {table})" if table else "")

    a, b = {label(r) for r in old.routes}, {label(r) for r in new.routes}
    items = [_item(PlanAction.ADD, f"route {r}", "") for r in sorted(b - a)]
    items += [_item(PlanAction.REMOVE, f"route {r}", "", disruptive=True) for r in sorted(a - b)]
    for field in ("gateway4", "gateway6"):
        was, becomes = getattr(old, field, None), getattr(new, field)
        if was != becomes:
            items.append(
                _item(
                    PlanAction.CHANGE,
                    f"default gateway ({field})",
                    f"{_text(was)} → {_text(becomes)}",
                    disruptive=was is not None,
                )
            )
    return items


def _describe(interface: Addressing) -> str:
    kind = type(interface).__name__.lower()
    parts = [kind, f"addresses {_text(interface.addresses)}"]
    parts += ["DHCPv4"] * interface.dhcp4 + ["IPv6 autoconfiguration"] * interface.ipv6_autoconf
    if not interface.enabled:
        parts.append("down")
    return ", ".join(parts)


def _text(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def _item(action: PlanAction, target: str, detail: str, disruptive: bool = False) -> PlanItem:
    return PlanItem(kind="network", action=action, target=target, detail=detail, disruptive=disruptive)
