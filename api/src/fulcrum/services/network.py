"""Business rules for the appliance's own network (node-local: never replicated to the peer)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy.orm import Session

from fulcrum.config.network import DOMAIN_PATTERN, HASHING_MODES, NTP_SERVERS_MAX, Bond, NetworkConfig, Vlan
from fulcrum.dataplane.clock import read_clock
from fulcrum.dataplane.links import read_routes
from fulcrum.dataplane.nics import read_nics
from fulcrum.errors import ConfigInvalid, NotFound, Unavailable
from fulcrum.render.network import TIMESYNCD
from fulcrum.schemas.network import ClockStatus, KernelInterface, KernelRoute
from fulcrum.services import audit, revisions
from fulcrum.services.candidate import candidate_snapshot, network_settings, store_network
from fulcrum.services.validation import validated

_DOMAIN = re.compile(DOMAIN_PATTERN)
NOT_MANAGED = "this node's network is not managed by Fulcrum yet; PUT /network to take it over"


def get_network(session: Session) -> NetworkConfig | None:
    """None while Fulcrum does not manage this node's network."""
    data = network_settings(session)
    return NetworkConfig.model_validate(data) if data is not None else None


def set_network(session: Session, actor: audit.Actor, request: BaseModel) -> NetworkConfig:
    before = network_settings(session)
    network = validated(lambda: NetworkConfig.model_validate(request.model_dump(mode="json")))
    _refuse_netdev_changes_in_place(session, network)
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


def _refuse_netdev_changes_in_place(session: Session, network: NetworkConfig) -> None:
    """systemd-networkd never changes a bond or VLAN that exists (the .netdev file of a running one is
    read once, when the link is made; tests/kernel/test_network.py shows each such commit failing at
    read-back and rolling back): say so now, with the way that works. A VLAN's id and parent, and a
    bond's mode, link monitoring and hash policy, change by adding the bond or VLAN under another
    name and removing the old one in the same commit."""
    running = revisions.network_of(revisions.running(session))
    if running is None:
        return
    errors = []
    kinds: list[tuple[str, Sequence[Vlan | Bond], Sequence[Vlan | Bond]]] = [
        ("vlans", network.vlans, running.vlans),
        ("bonds", network.bonds, running.bonds),
    ]
    for kind, items, runs in kinds:
        before = {item.name: item for item in runs}
        for index, item in enumerate(items):
            old = before.get(item.name)
            if old is None:
                continue
            for field, label, was, wanted in _netdev_settings(old, item):
                if was != wanted:
                    errors.append(
                        {
                            "loc": ["body", kind, index, field],
                            "msg": _CHANGED_IN_PLACE[kind].format(
                                name=item.name, label=label, old=was, new=wanted
                            ),
                            "type": f"{kind[:-1]}_changed_in_place",
                        }
                    )
    if errors:
        raise ConfigInvalid(errors)


_CHANGED_IN_PLACE = {
    "vlans": "VLAN {name} runs with {label} {old}, and a VLAN's {label} cannot change in place: add the "
    "new VLAN under another name and remove this one",
    "bonds": "bond {name} runs with {label} {old}, and a running bond's {label} cannot change in place: "
    "add a bond under another name with {label} {new} (its members, and its VLANs under new names) "
    "and remove this one in the same commit",
}


def _netdev_settings(old: Vlan | Bond, new: Vlan | Bond) -> list[tuple[str, str, object, object]]:
    """(field, label, running value, wanted value) of what the kernel fixes when the link is made."""
    if isinstance(old, Vlan) and isinstance(new, Vlan):
        return [("vlan_id", "id", old.vlan_id, new.vlan_id), ("parent", "parent", old.parent, new.parent)]
    assert isinstance(old, Bond) and isinstance(new, Bond)
    settings: list[tuple[str, str, object, object]] = [
        ("mode", "mode", old.mode.value, new.mode.value),
        ("miimon", "link monitoring interval (miimon, ms)", old.miimon, new.miimon),
    ]
    if old.mode in HASHING_MODES and new.mode == old.mode:  # the policy is rendered for these only
        settings.append(
            ("xmit_hash_policy", "hash policy", old.xmit_hash_policy.value, new.xmit_hash_policy.value)
        )
    return settings


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


def ntp_servers_in_use(network_dir: Path | None) -> list[str]:
    """The NTP servers of timesyncd's configuration in `network_dir` (the image's own until the
    network is managed, then the rendered one): what a take-over keeps, and what the clock shows
    while Fulcrum does not manage the network. Names the model would refuse are left out."""
    try:
        text = (network_dir / TIMESYNCD).read_text() if network_dir is not None else ""
    except OSError:
        return []
    servers = [
        server
        for line in text.splitlines()
        if line.strip().startswith("NTP=")
        for server in line.split("=", 1)[1].split()
        if _DOMAIN.fullmatch(server)
    ]
    return servers[:NTP_SERVERS_MAX]


def clock(session: Session, network_dir: Path | None) -> ClockStatus:
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
        ntp_servers=network.ntp_servers if network else ntp_servers_in_use(network_dir),
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
