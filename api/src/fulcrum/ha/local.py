"""This node's own HA state: its VRRP groups as the data plane runs them, the maintenance file,
and the connections IPVS holds.

A group's state is read from the data plane (`read_state`): FAULT while keepalived's VRRP
process is not running; else MASTER on a node holding any of the group's addresses, whatever was
reported; else FAULT in maintenance or with a tracked interface down, and BACKUP otherwise (or
FAULT, if keepalived said so: its node-health check is invisible here).
keepalived's notify FIFO, stored by the telemetry hub as `vrrp_state` events, is the other input:
it says when a state began, and it is all there is where nothing is applied (no IPVS: the
host's tests). A notification that never came or was lost therefore cannot leave a group UNKNOWN.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.apply.files import write_atomic
from fulcrum.apply.result import VrrpView
from fulcrum.config.snapshot import Node, VipGroup, VrrpPart
from fulcrum.models import Event
from fulcrum.render.keepalived import INSTANCE_PREFIX, instance_name
from fulcrum.schemas.telemetry import StatsSnapshot

TRANSITIONS_SHOWN = 20
MAINTENANCE_MODE = 0o644  # keepalived and the unprivileged API both read it


VRRP_STATES = ("MASTER", "BACKUP", "FAULT")


@dataclass(frozen=True)
class GroupState:
    name: str
    state: str  # MASTER, BACKUP, FAULT, UNKNOWN
    since: datetime | None
    vips_held: tuple[str, ...] = ()  # the group's addresses this node holds (read from the data plane)


@dataclass(frozen=True)
class Reported:
    """keepalived's newest notification for a group: its state (UNKNOWN: none) and when."""

    state: str
    at: datetime | None


def reported_states(session: Session, running: VrrpPart | None) -> dict[str, Reported]:
    """keepalived's newest notification for every VIP group of the running configuration."""
    reported = {}
    for group in running.vip_groups if running else []:
        event = session.scalar(
            select(Event)
            .where(Event.kind == "vrrp_state", Event.detail["name"].as_string() == instance_name(group))
            .order_by(Event.id.desc())
            .limit(1)
        )
        state = str(event.detail.get("state")) if event is not None else "UNKNOWN"
        reported[group.name] = Reported(
            state if state in VRRP_STATES else "UNKNOWN", event.at if event is not None else None
        )
    return reported


def group_addresses(group: VipGroup) -> list[str]:
    return [str(ipaddress.ip_interface(address).ip) for address in group.addresses]


def read_state(
    group: VipGroup, node: Node, reported: str, view: VrrpView | None, maintenance: bool
) -> tuple[str, tuple[str, ...]]:
    """A group's state and the addresses of it this node holds, from the data plane where there
    is one (`view` with IPVS), else as keepalived reported it."""
    if view is None or not view.ipvs_available:
        return reported, ()
    held_here = {address for interface in view.interfaces for address in interface.addresses}
    held = tuple(address for address in group_addresses(group) if address in held_here)
    if not view.vrrp_running:
        # No VRRP here: addresses still held are what a killed keepalived could not remove; the
        # node cannot defend or hand them over, so it is not the group's MASTER (nor a split brain).
        return "FAULT", held
    if held:
        # keepalived adds the addresses on becoming MASTER and removes them on leaving.
        return "MASTER", held
    if maintenance:
        return "FAULT", held
    up = {interface.name: interface.up for interface in view.interfaces}
    tracked = {
        node.vrrp_interface,
        node.vip_interfaces.get(group.name, node.vrrp_interface),
        *node.track_interfaces,
    }
    if not all(up.get(name, False) for name in tracked):
        return "FAULT", held
    # FAULT from the node-health check holds no address either: only keepalived can tell it.
    return ("FAULT" if reported == "FAULT" else "BACKUP"), held


def role_of(groups: list[GroupState], maintenance: bool) -> str:
    """active, standby, fault, maintenance or unknown (a paired node; unpaired is "standalone")."""
    if maintenance:
        return "maintenance"
    states = {g.state for g in groups}
    if "FAULT" in states:
        return "fault"
    if "MASTER" in states:
        return "active"
    if states == {"BACKUP"}:
        return "standby"
    return "unknown"


def transitions(session: Session, node: str, limit: int = TRANSITIONS_SHOWN) -> list[dict[str, Any]]:
    """This node's recent VRRP instance transitions, newest first, with what caused them if an HA
    action of this node did (maintenance, make-active, drill, split-brain hold)."""
    rows = list(
        session.scalars(
            select(Event)
            .where(Event.kind == "vrrp_state", Event.detail["scope"].as_string() == "INSTANCE")
            .order_by(Event.id.desc())
            .limit(limit)
        )
    )
    actions = list(
        session.scalars(
            select(Event).where(Event.kind == "ha.maintenance").order_by(Event.id.desc()).limit(limit)
        )
    )
    result = []
    for row in rows:
        name = str(row.detail.get("name", ""))
        cause = next((a for a in actions if a.at <= row.at and (row.at - a.at).total_seconds() <= 10), None)
        result.append(
            {
                "time": row.at.isoformat(),
                "node": node,
                "group": name.removeprefix(INSTANCE_PREFIX),
                "from": row.detail.get("previous"),
                "to": row.detail.get("state"),
                "reason": cause.message if cause else _unexplained(row),
            }
        )
    return result


def _unexplained(event: Event) -> str:
    if event.detail.get("source") == "dataplane":
        return "read from the data plane: keepalived's notification did not arrive"
    return "reported by keepalived"


# --- maintenance ------------------------------------------------------------------------------


def set_maintenance(path: Path, enabled: bool) -> None:
    """Write keepalived's track file atomically and durably (a node that crashes right after
    stepping down must not come back live); keepalived watches it with inotify."""
    write_atomic(path, b"1\n" if enabled else b"0\n", MAINTENANCE_MODE)


# --- connections ------------------------------------------------------------------------------


def connections(stats: StatsSnapshot | None) -> int | None:
    """Connection entries IPVS holds for the configured services (active + inactive); None
    without statistics or without IPVS."""
    if stats is None or not stats.ipvs_available:
        return None
    return sum(s.counters.activeconns + s.counters.inactconns for s in stats.services if s.counters)


def established(stats: StatsSnapshot | None) -> int | None:
    """ESTABLISHED connection entries of the configured services: IPVS's active counters, which
    count the entries the sync daemon installed on a standby as well; None as above."""
    if stats is None or not stats.ipvs_available:
        return None
    return sum(s.counters.activeconns for s in stats.services if s.counters)
