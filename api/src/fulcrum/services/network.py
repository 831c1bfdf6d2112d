"""Business rules for the appliance's own network (node-local: never replicated to the peer)."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel
from sqlalchemy.orm import Session

from fulcrum.config.network import NetworkConfig
from fulcrum.dataplane.clock import read_clock
from fulcrum.dataplane.links import read_routes
from fulcrum.dataplane.nics import read_nics
from fulcrum.errors import ConfigInvalid, NotFound, Unavailable
from fulcrum.schemas.network import ClockStatus, KernelInterface, KernelRoute
from fulcrum.services import audit, revisions
from fulcrum.services.candidate import candidate_snapshot, network_settings, store_network
from fulcrum.services.validation import validated

NOT_MANAGED = "this node's network is not managed by Fulcrum yet; PUT /network to take it over"


def get_network(session: Session) -> NetworkConfig | None:
    """None while Fulcrum does not manage this node's network."""
    data = network_settings(session)
    return NetworkConfig.model_validate(data) if data is not None else None


def set_network(session: Session, actor: audit.Actor, request: BaseModel) -> NetworkConfig:
    before = network_settings(session)
    network = validated(lambda: NetworkConfig.model_validate(request.model_dump(mode="json")))
    _refuse_vlan_changes_in_place(session, network)
    store_network(session, network)
    try:
        candidate_snapshot(session)
    except ConfigInvalid as exc:
        # The body is the network itself: an error in it is located there, not under "network".
        raise ConfigInvalid([_unnest(error) for error in exc.errors]) from exc
    audit.record(
        session,
        actor,
        "network.update",
        network.hostname,
        {"before": before, "after": network.model_dump(mode="json")},
    )
    return network


def _refuse_vlan_changes_in_place(session: Session, network: NetworkConfig) -> None:
    """systemd-networkd never changes an existing VLAN's id or parent (the kernel fixes both when
    the link is made): such a commit would fail at read-back and roll back. Say so now, with the way
    that works: a new VLAN under a new name (the old one goes with its own removal)."""
    running = revisions.snapshot_of(revisions.running(session))
    if running is None or running.network is None:
        return
    applied = {vlan.name: vlan for vlan in running.network.vlans}
    errors = []
    for index, vlan in enumerate(network.vlans):
        before = applied.get(vlan.name)
        if before is None:
            continue
        for field, label, old, new in (
            ("vlan_id", "id", before.vlan_id, vlan.vlan_id),
            ("parent", "parent", before.parent, vlan.parent),
        ):
            if old != new:
                errors.append(
                    {
                        "loc": ["body", "vlans", index, field],
                        "msg": f"VLAN {vlan.name} runs with {label} {old}, and a VLAN's {label} cannot "
                        "change in place: add the new VLAN under another name and remove this one",
                        "type": "vlan_changed_in_place",
                    }
                )
    if errors:
        raise ConfigInvalid(errors)


def stop_managing(session: Session, actor: audit.Actor) -> None:
    before = network_settings(session)
    if before is None:
        raise NotFound(NOT_MANAGED)
    store_network(session, None)
    candidate_snapshot(session)
    audit.record(session, actor, "network.delete", "", {"before": before})


def kernel_interfaces(session: Session) -> list[KernelInterface]:
    try:
        nics = read_nics()
    except OSError as exc:
        raise Unavailable(f"cannot read this node's interfaces: {exc}") from exc
    data = network_settings(session)
    network = NetworkConfig.model_validate(data) if data is not None else None
    return [
        KernelInterface(**dataclasses.asdict(nic), configured=_configured(network, nic.name, nic.mac))
        for nic in nics
    ]


def kernel_routes() -> list[KernelRoute]:
    """The kernel's routes now: what taking the network over keeps (its default gateways)."""
    try:
        routes = read_routes()
    except OSError as exc:
        raise Unavailable(f"cannot read this node's routes: {exc}") from exc
    return [KernelRoute(**dataclasses.asdict(route)) for route in routes]


def kernel_interface(session: Session, name: str) -> KernelInterface:
    found = next((i for i in kernel_interfaces(session) if i.name == name), None)
    if found is None:
        raise NotFound(f"this node has no interface {name!r}")
    return found


def clock(session: Session) -> ClockStatus:
    try:
        state = read_clock()
    except OSError as exc:
        raise Unavailable(f"cannot read this node's clock: {exc}") from exc
    network = get_network(session)
    return ClockStatus(
        synchronised=state.synchronised,
        state=state.state,
        offset_us=state.offset_us,
        max_error_us=state.max_error_us,
        estimated_error_us=state.estimated_error_us,
        ntp_servers=network.ntp_servers if network else [],
    )


def _configured(network: NetworkConfig | None, name: str, mac: str) -> bool:
    if network is None:
        return False
    return network.interface(name) is not None or any(nic.mac == mac.lower() for nic in network.nics)


def _unnest(error: dict[str, Any]) -> dict[str, Any]:
    loc = list(error["loc"])
    if loc[:2] == ["body", "network"]:
        loc = ["body", *loc[2:]]
    return {**error, "loc": loc}
