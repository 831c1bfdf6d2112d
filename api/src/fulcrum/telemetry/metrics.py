"""Prometheus text exposition of the IPVS layer, health checks, VRRP and applies.

keepalived users today need third-party exporters for this; one scrape of /metrics covers it.
"""

from __future__ import annotations

from collections.abc import Iterable

from fulcrum.schemas.telemetry import BackendState, StatsSnapshot
from fulcrum.telemetry.hub import Telemetry

_VRRP_STATES = {"INIT": 0, "BACKUP": 1, "MASTER": 2, "FAULT": 3, "STOP": 4, "DELETED": 5}

# (metric suffix, counter field, type, help)
_IPVS = [
    ("connections_total", "conns", "counter", "Connections scheduled since the entry was added"),
    ("active_connections", "activeconns", "gauge", "Established connections"),
    ("inactive_connections", "inactconns", "gauge", "Connections in other TCP states, or UDP flows"),
    ("in_packets_total", "inpkts", "counter", "Packets from clients"),
    ("out_packets_total", "outpkts", "counter", "Packets to clients"),
    ("in_bytes_total", "inbytes", "counter", "Bytes from clients"),
    ("out_bytes_total", "outbytes", "counter", "Bytes to clients"),
    ("connections_per_second", "cps", "gauge", "Kernel rate estimate"),
    ("in_bytes_per_second", "inbps", "gauge", "Kernel rate estimate"),
    ("out_bytes_per_second", "outbps", "gauge", "Kernel rate estimate"),
]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(
    name: str, kind: str, help_text: str, samples: Iterable[tuple[dict[str, str], float]]
) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        rendered = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{rendered}}} {value:g}" if rendered else f"{name} {value:g}")
    return lines


def render(telemetry: Telemetry, revisions_by_state: dict[str, int], applied_revision: int | None) -> str:
    stats: StatsSnapshot | None = telemetry.latest
    lines: list[str] = []
    lines += _family(
        "fulcrum_dataplane_available",
        "gauge",
        "1 when the kernel has IPVS",
        [({}, 1.0 if stats and stats.ipvs_available else 0.0)],
    )
    services = stats.services if stats else []
    for suffix, field, kind, help_text in _IPVS:
        lines += _family(
            f"fulcrum_ipvs_service_{suffix}",
            kind,
            help_text,
            [({"service": s.name}, float(getattr(s.counters, field))) for s in services if s.counters],
        )
        lines += _family(
            f"fulcrum_ipvs_backend_{suffix}",
            kind,
            help_text,
            [
                ({"service": s.name, "backend": b.endpoint}, float(getattr(b.counters, field)))
                for s in services
                for b in s.backends
                if b.counters
            ],
        )
    lines += _family(
        "fulcrum_backend_up",
        "gauge",
        "1 when the backend is in IPVS with its weight; 0 when its health check failed",
        [
            (
                {"service": s.name, "backend": b.endpoint, "state": b.state.value},
                1.0 if b.state == BackendState.UP else 0.0,
            )
            for s in services
            for b in s.backends
            if b.state != BackendState.DISABLED
        ],
    )
    lines += _family(
        "fulcrum_health_check_up",
        "gauge",
        "The last result keepalived reported for a backend's health check",
        [
            ({"service": svc, "backend": be}, 1.0 if up else 0.0)
            for (svc, be), up in sorted(telemetry.checker_up.items())
        ],
    )
    lines += _family(
        "fulcrum_vrrp_state",
        "gauge",
        "VRRP state: 0 init, 1 backup, 2 master, 3 fault, 4 stop, 5 deleted",
        [
            ({"instance": n.name, "scope": n.scope.lower()}, float(_VRRP_STATES.get(n.state, -1)))
            for n in sorted(telemetry.vrrp.values(), key=lambda n: n.name)
        ],
    )
    lines += _family(
        "fulcrum_vrrp_transitions_total",
        "counter",
        "VRRP state changes seen by this API process",
        [({"instance": name}, float(count)) for name, count in sorted(telemetry.vrrp_transitions.items())],
    )
    lines += _family(
        "fulcrum_revisions",
        "gauge",
        "Revisions by outcome of their apply",
        [({"state": state}, float(count)) for state, count in sorted(revisions_by_state.items())],
    )
    lines += _family(
        "fulcrum_applied_revision",
        "gauge",
        "The revision the data plane runs",
        [({}, float(applied_revision or 0))],
    )
    return "\n".join(lines) + "\n"
