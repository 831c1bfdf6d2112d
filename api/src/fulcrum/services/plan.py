"""What applying one configuration over another does to the running system, in operators' terms.

Pure: computed from two snapshots. Services are matched by name and backends by address and
port, so a renamed VIP shows as the disruptive replacement it is for IPVS.
"""

from __future__ import annotations

import ipaddress

from fulcrum.config.snapshot import Backend, ConfigSnapshot, Service
from fulcrum.schemas.revisions import Plan, PlanAction, PlanItem
from fulcrum.services.bgp_plan import bgp_changes
from fulcrum.services.network_plan import network_changes

# Fields whose change makes IPVS delete and re-create the virtual service.
_IDENTITY = ("address", "ports", "protocol", "fwmark")
_NODE_VRRP = ("vrrp_interface", "priority", "unicast_source", "peer_address", "multicast")


def plan(before: ConfigSnapshot | None, after: ConfigSnapshot) -> Plan:
    before = before or ConfigSnapshot()
    items: list[PlanItem] = []
    old = {s.name: s for s in before.services if s.enabled}
    new = {s.name: s for s in after.services if s.enabled}
    for name in sorted(new.keys() - old.keys()):
        s = new[name]
        items.append(PlanItem(kind="service", action=PlanAction.ADD, target=_label(s), detail=_describe(s)))
    for name in sorted(old.keys() - new.keys()):
        items.append(
            PlanItem(
                kind="service",
                action=PlanAction.REMOVE,
                target=_label(old[name]),
                detail="the IPVS service is deleted: established connections through it are cut",
                disruptive=True,
            )
        )
    for name in sorted(old.keys() & new.keys()):
        items += _service_changes(old[name], new[name])
    items += _vip_changes(before, after)
    items += _node_changes(before, after)
    if before.firewall != after.firewall:
        items.append(_firewall_change(before, after))
    items += network_changes(before, after)
    items += bgp_changes(before, after)
    return Plan(items=items, disruptive=any(i.disruptive for i in items), warnings=warnings(after))


def _service_changes(a: Service, b: Service) -> list[PlanItem]:
    if any(getattr(a, f) != getattr(b, f) for f in _IDENTITY):
        return [
            PlanItem(
                kind="service",
                action=PlanAction.CHANGE,
                target=b.name,
                detail=f"{_endpoint_text(a)} becomes {_endpoint_text(b)}: the IPVS service is replaced "
                "and established connections through it are cut",
                disruptive=True,
            )
        ]
    items: list[PlanItem] = []
    notes: list[str] = []
    disruptive = False
    if a.scheduler != b.scheduler:
        notes.append(
            f"scheduler {a.scheduler.value} → {b.scheduler.value} (existing connections keep their backend)"
        )
    if a.forwarding != b.forwarding or a.tunnel_type != b.tunnel_type:
        notes.append(f"forwarding {_method(a)} → {_method(b)}: established connections may break")
        disruptive = True
    if (a.persistence_timeout, a.persistence_prefix) != (b.persistence_timeout, b.persistence_prefix):
        notes.append("persistence changes: clients may be sent to a different backend")
    if a.one_arm != b.one_arm or a.snat_address != b.snat_address:
        notes.append("one-arm source NAT changes: established connections may break")
        disruptive = True
    if a.health_check != b.health_check:
        notes.append("health check changes: backends are re-checked")
    rest = {"quorum", "sorry_server", "scheduler_fallback", "scheduler_port", "one_packet_scheduling"}
    changed_rest = sorted(f for f in rest if getattr(a, f) != getattr(b, f))
    if changed_rest:
        notes.append("changes " + ", ".join(changed_rest))
    if notes:
        items.append(
            PlanItem(
                kind="service",
                action=PlanAction.CHANGE,
                target=b.name,
                detail="; ".join(notes),
                disruptive=disruptive,
            )
        )
    items += _backend_changes(a, b)
    return items


def _backend_changes(a: Service, b: Service) -> list[PlanItem]:
    old = {_backend_key(a, x): x for x in a.backends if x.enabled}
    new = {_backend_key(b, x): x for x in b.backends if x.enabled}
    items: list[PlanItem] = []
    for key in sorted(new.keys() - old.keys()):
        items.append(
            PlanItem(
                kind="backend",
                action=PlanAction.ADD,
                target=f"{b.name} → {key}",
                detail=f"weight {new[key].weight}; receives traffic once its health check passes",
            )
        )
    for key in sorted(old.keys() - new.keys()):
        disabled = any(_backend_key(b, x) == key and not x.enabled for x in b.backends)
        items.append(
            PlanItem(
                kind="backend",
                action=PlanAction.REMOVE,
                target=f"{b.name} → {key}",
                detail=("disabled for maintenance: " if disabled else "")
                + "removed from IPVS; its established connections are cut (set weight 0 first to drain)",
                disruptive=True,
            )
        )
    for key in sorted(old.keys() & new.keys()):
        x, y = old[key], new[key]
        notes = []
        if x.weight != y.weight:
            if y.weight == 0:
                notes.append(f"weight {x.weight} → 0: drains (existing connections finish, no new ones)")
            else:
                notes.append(f"weight {x.weight} → {y.weight}")
        if (x.upper_threshold, x.lower_threshold) != (y.upper_threshold, y.lower_threshold):
            notes.append("connection thresholds change")
        if x.health_check != y.health_check:
            notes.append("health check changes")
        if notes:
            items.append(
                PlanItem(
                    kind="backend",
                    action=PlanAction.CHANGE,
                    target=f"{b.name} → {key}",
                    detail="; ".join(notes),
                )
            )
    return items


def _vip_changes(before: ConfigSnapshot, after: ConfigSnapshot) -> list[PlanItem]:
    old = {addr: g.name for g in before.vip_groups for addr in g.addresses}
    new = {addr: g.name for g in after.vip_groups for addr in g.addresses}
    items = [
        PlanItem(kind="vip", action=PlanAction.ADD, target=addr, detail=f"appears in VIP group {new[addr]}")
        for addr in sorted(new.keys() - old.keys())
    ]
    items += [
        PlanItem(
            kind="vip",
            action=PlanAction.REMOVE,
            target=addr,
            detail=f"leaves VIP group {old[addr]}: this node stops answering for it",
            disruptive=True,
        )
        for addr in sorted(old.keys() - new.keys())
    ]
    items += [
        PlanItem(
            kind="vip",
            action=PlanAction.CHANGE,
            target=addr,
            detail=f"moves from VIP group {old[addr]} to {new[addr]}: it may move to the other node",
            disruptive=True,
        )
        for addr in sorted(old.keys() & new.keys())
        if old[addr] != new[addr]
    ]
    old_groups = {g.name: g for g in before.vip_groups}
    for group in after.vip_groups:
        previous = old_groups.get(group.name)
        if previous is None or previous == group:
            continue
        if previous.virtual_router_id != group.virtual_router_id:
            detail, disruptive = (
                f"VRID {previous.virtual_router_id} → {group.virtual_router_id}: VRRP restarts and the "
                "VIPs may move",
                True,
            )
        else:
            detail, disruptive = "VRRP timing or preemption changes", False
        items.append(
            PlanItem(
                kind="vip_group",
                action=PlanAction.CHANGE,
                target=group.name,
                detail=detail,
                disruptive=disruptive,
            )
        )
    return items


def _node_changes(before: ConfigSnapshot, after: ConfigSnapshot) -> list[PlanItem]:
    changed = [f for f in _NODE_VRRP if getattr(before.node, f) != getattr(after.node, f)]
    items = []
    if changed and after.vip_groups:
        items.append(
            PlanItem(
                kind="node",
                action=PlanAction.CHANGE,
                target=after.node.name,
                detail="VRRP settings change ("
                + ", ".join(changed)
                + "): VRRP instances restart and VIPs may move",
                disruptive=True,
            )
        )
    if before.node.vip_interfaces != after.node.vip_interfaces:
        items.append(_vip_interface_change(before, after))
    if before.node.track_interfaces != after.node.track_interfaces:
        items.append(_track_interface_change(before, after))
    if before.node.sync_interface != after.node.sync_interface:
        items.append(
            PlanItem(
                kind="node",
                action=PlanAction.CHANGE,
                target=after.node.name,
                detail=f"connection sync interface {before.node.sync_interface or 'off'} → "
                f"{after.node.sync_interface or 'off'}",
            )
        )
    return items


def _vip_interface_change(before: ConfigSnapshot, after: ConfigSnapshot) -> PlanItem:
    """Which NIC holds each VIP group's addresses: a move takes them off one NIC onto another."""
    old, new = before.node.vip_interfaces, after.node.vip_interfaces
    groups = {g.name for g in after.vip_groups}
    moves: list[str] = []
    moves_a_group = False
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) == new.get(name):
            continue
        was = old.get(name) or f"{before.node.vrrp_interface} (the VRRP interface)"
        becomes = new.get(name) or f"{after.node.vrrp_interface} (the VRRP interface)"
        moves.append(
            f"{name} {was} → {becomes}" + ("" if name in groups else " (no such VIP group: ignored)")
        )
        moves_a_group = moves_a_group or name in groups
    return PlanItem(
        kind="node",
        action=PlanAction.CHANGE,
        target=after.node.name,
        detail="VIP interfaces change: "
        + "; ".join(moves)
        + ". A group's addresses move to its new interface, which is tracked",
        disruptive=moves_a_group,
    )


def _track_interface_change(before: ConfigSnapshot, after: ConfigSnapshot) -> PlanItem:
    added = [i for i in after.node.track_interfaces if i not in before.node.track_interfaces]
    removed = [i for i in before.node.track_interfaces if i not in after.node.track_interfaces]
    parts = ([f"tracks {', '.join(added)}"] if added else []) + (
        [f"stops tracking {', '.join(removed)}"] if removed else []
    )
    return PlanItem(
        kind="node",
        action=PlanAction.CHANGE,
        target=after.node.name,
        detail="tracked interfaces change: "
        + "; ".join(parts)
        + ". While a tracked interface is down this node is FAULT and the peer holds the VIPs",
    )


def _firewall_change(before: ConfigSnapshot, after: ConfigSnapshot) -> PlanItem:
    allow = ", ".join(after.firewall.management_allow) or "anywhere"
    ports = ", ".join(str(p) for p in after.firewall.management_ports)
    return PlanItem(
        kind="firewall",
        action=PlanAction.CHANGE,
        target="management access",
        detail=f"management ports {ports} will accept connections from {allow}; "
        "commit with a confirmation deadline so a lock-out undoes itself",
    )


def warnings(snapshot: ConfigSnapshot) -> list[str]:
    """Things that are valid but probably not what the operator wants."""
    found: list[str] = []
    vips = [ipaddress.ip_interface(a).ip for g in snapshot.vip_groups for a in g.addresses]
    # Addresses of the pair itself: traffic sent there reaches an appliance, not a backend.
    own = {
        address: what
        for address, what in [
            (snapshot.node.unicast_source, "this node's VRRP address"),
            (snapshot.node.peer_address, "the peer node's address"),
        ]
        if address is not None
    }
    own.update(dict.fromkeys(vips, "a VIP of this appliance"))
    # A VIP that BGP announces is brought up by FRR on the loopback (fulcrum.render.frr).
    announced = set(snapshot.announced_vips())
    for s in snapshot.services:
        if not s.enabled:
            continue
        live = [b for b in s.backends if b.enabled and b.weight > 0]
        if not any(b.enabled for b in s.backends):
            found.append(f"service {s.name}: no enabled backend, so it is not put into IPVS at all")
        elif not live and s.sorry_server is None:
            found.append(
                f"service {s.name}: every backend is drained (weight 0): it takes no new connections"
            )
        weight = sum(b.weight for b in s.backends if b.enabled)
        if live and s.quorum > weight:
            found.append(
                f"service {s.name}: quorum {s.quorum} exceeds the enabled weight {weight}; it acts as "
                f"{weight}"
            )
        for b in s.backends:
            if b.address == s.address:
                found.append(
                    f"service {s.name}: backend {b.address} is the service's own address; "
                    "it would balance to itself"
                )
            elif b.address in own:
                found.append(f"service {s.name}: backend {b.address} is {own[b.address]}, not a real server")
        if s.address not in vips and s.address not in announced:
            found.append(
                f"service {s.name}: {s.address} is in no VIP group, so this appliance does not bring it up; "
                "it must already be configured on an interface"
            )
    return found


def _backend_key(service: Service, backend: Backend) -> str:
    host = f"[{backend.address}]" if backend.address.version == 6 else str(backend.address)
    port = backend.port if backend.port is not None else (None if service.is_fwmark else service.ports[0])
    return host if port is None else f"{host}:{port}"


def _endpoint_text(s: Service) -> str:
    host = f"[{s.address}]" if s.address.version == 6 else str(s.address)
    ports = ",".join(str(p) for p in s.ports)
    return f"{host}:{ports}/{s.protocol.value}"


def _method(s: Service) -> str:
    return f"tun/{s.tunnel_type.value}" if s.forwarding.value == "tun" else s.forwarding.value


def _label(s: Service) -> str:
    return f"{s.name} ({_endpoint_text(s)})"


def _describe(s: Service) -> str:
    enabled = sum(1 for b in s.backends if b.enabled)
    return (
        f"{s.scheduler.value}, {_method(s)}, {enabled} backend(s), {s.health_check.type.value} health check"
    )
