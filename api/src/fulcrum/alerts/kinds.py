"""Which events can be alerted on, which of them the whole pair sees, and the conditions they
open and clear (for de-duplication and reminders)."""

from __future__ import annotations

from fulcrum.models.event_kinds import EventKind

# Every recorded kind can be routed to a channel: one list (fulcrum.models.event_kinds).
AlertKind = EventKind

# Both nodes of a pair run the same health checks, so both record these: only the active node
# (or a node that is not paired) sends them. Every other kind is about the node that saw it.
PAIR_WIDE = frozenset(
    {"backend_down", "backend_up", "backend_warning", "backend_warning_cleared", "service_down", "service_up"}
)

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}

# kind -> (condition, opens): an opening event already open on a channel is not sent again; the
# closing event is sent (as the recovery) only where the opening one was.
_CONDITIONS = {
    "backend_down": ("backend", True),
    "backend_up": ("backend", False),
    "service_down": ("service", True),
    "service_up": ("service", False),
    "backend_warning": ("warning", True),
    "backend_warning_cleared": ("warning", False),
    "ha.peer_unreachable": ("peer", True),
    "ha.peer_reachable": ("peer", False),
    "ha.role_unknown": ("role", True),
    "ha.role_known": ("role", False),
}


def condition_of(
    kind: str, service: str | None, backend: str | None, code: str | None
) -> tuple[str, bool] | None:
    """The condition key this event opens (True) or closes (False), or None for a one-off event."""
    found = _CONDITIONS.get(kind)
    if found is None:
        return None
    name, opens = found
    parts = [name]
    if name in ("backend", "service", "warning"):
        parts.append(service or "")
    if name in ("backend", "warning"):
        parts.append(backend or "")
    if name == "warning":
        parts.append(code or "")
    return ":".join(parts)[:255], opens
