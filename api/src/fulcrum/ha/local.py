"""This node's own HA state: its VRRP groups as keepalived last reported them, the maintenance
file, and the connections IPVS holds.

VRRP states come from keepalived's notify FIFO, which the telemetry hub stores as `vrrp_state`
events; reading the newest stored event per instance keeps the state across API restarts
(keepalived reports transitions only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.models import Event
from fulcrum.render.keepalived import instance_name
from fulcrum.schemas.telemetry import StatsSnapshot

TRANSITIONS_SHOWN = 20


@dataclass(frozen=True)
class GroupState:
    name: str
    state: str  # MASTER, BACKUP, FAULT, UNKNOWN
    since: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "since": self.since.isoformat() if self.since else None}


def group_states(session: Session, running: ConfigSnapshot | None) -> list[GroupState]:
    """The VRRP state of every VIP group of the running configuration."""
    states = []
    for group in sorted(running.vip_groups if running else [], key=lambda g: g.name):
        event = session.scalar(
            select(Event)
            .where(Event.kind == "vrrp_state", Event.detail["name"].as_string() == instance_name(group))
            .order_by(Event.id.desc())
            .limit(1)
        )
        if event is None:
            states.append(GroupState(group.name, "UNKNOWN", None))
        else:
            state = str(event.detail.get("state"))
            states.append(GroupState(group.name, state if state in ("MASTER", "BACKUP", "FAULT") else "UNKNOWN", event.at))
    return states


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
        session.scalars(select(Event).where(Event.kind == "ha.maintenance").order_by(Event.id.desc()).limit(limit))
    )
    result = []
    for row in rows:
        name = str(row.detail.get("name", ""))
        cause = next((a for a in actions if a.at <= row.at and (row.at - a.at).total_seconds() <= 10), None)
        result.append(
            {
                "time": row.at.isoformat(),
                "node": node,
                "group": name.removeprefix("VG_"),
                "from": row.detail.get("previous"),
                "to": row.detail.get("state"),
                "reason": cause.message if cause else "reported by keepalived",
            }
        )
    return result


# --- maintenance ------------------------------------------------------------------------------


def in_maintenance(path: Path) -> bool:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return False
    try:
        return int(text or "0") != 0
    except ValueError:
        return True  # not written by us: say maintenance rather than promise the node is live


def set_maintenance(path: Path, enabled: bool) -> None:
    """Write keepalived's track file atomically; keepalived watches it with inotify."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".new")
    tmp.write_text("1\n" if enabled else "0\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# --- connections ------------------------------------------------------------------------------


def connections(stats: StatsSnapshot | None) -> int | None:
    """Connection entries IPVS holds for the configured services (active + inactive); None
    without statistics or without IPVS."""
    if stats is None or not stats.ipvs_available:
        return None
    return sum(s.counters.activeconns + s.counters.inactconns for s in stats.services if s.counters)
