"""From the kernel's IPVS table to per-service and per-backend statistics, named as configured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from fulcrum.config.snapshot import Backend, ConfigSnapshot, Service
from fulcrum.dataplane.ipvs_table import Counters, IpvsTable, ServiceKey, VirtualService, endpoint
from fulcrum.dataplane.vip_guard import BackendWarning
from fulcrum.schemas.telemetry import (
    BackendIssue,
    BackendState,
    BackendStats,
    Rates,
    ServiceStats,
    StatsSnapshot,
)
from fulcrum.telemetry.series import METRICS


def service_keys(service: Service) -> list[ServiceKey]:
    """The IPVS keys keepalived creates for a service: one per port, or one fwmark."""
    family = service.address.version
    if service.is_fwmark:
        return [ServiceKey(family=family, fwmark=service.fwmark)]
    return [
        ServiceKey(family=family, protocol=service.protocol.value, address=str(service.address), port=p)
        for p in service.ports
    ]


def _rates(counters: Counters | None) -> Rates | None:
    return Rates(**asdict(counters)) if counters is not None else None


def summarize(
    snapshot: ConfigSnapshot | None,
    table: IpvsTable | None,
    *,
    at: datetime,
    ipvs_available: bool,
    detail: str,
    revision: int | None,
    warnings: Sequence[BackendWarning] = (),
) -> StatsSnapshot:
    """Join the running configuration with what the kernel holds (and the guardrail found). Pure."""
    issues: dict[tuple[str, str], list[BackendIssue]] = {}
    for warning in warnings:
        issues.setdefault((warning.service, warning.backend), []).append(
            BackendIssue(code=warning.code, message=warning.message)
        )
    services = []
    for service in snapshot.services if snapshot else []:
        if not service.enabled:
            continue
        key = service_keys(service)[0]
        kernel = table.service(key) if table else None
        backends = [_backend(service, b, kernel, ipvs_available) for b in service.backends]
        for backend in backends:
            backend.warnings = issues.get((service.name, backend.endpoint), [])
        enabled = [b for b in backends if b.state != BackendState.DISABLED]
        services.append(
            ServiceStats(
                name=service.name,
                key=str(key),
                in_kernel=kernel is not None,
                counters=_rates(kernel.counters) if kernel else None,
                backends=backends,
                backends_up=sum(1 for b in enabled if b.state == BackendState.UP),
                backends_total=len(enabled),
            )
        )
    return StatsSnapshot(
        at=at, ipvs_available=ipvs_available, detail=detail, revision=revision, services=services
    )


def _backend(
    service: Service, backend: Backend, kernel: VirtualService | None, available: bool
) -> BackendStats:
    port = backend.port if backend.port is not None else (None if service.is_fwmark else service.ports[0])
    real = kernel.real_server(str(backend.address), port or 0) if kernel else None
    if not backend.enabled:
        state = BackendState.DISABLED
    elif not available:
        state = BackendState.UNKNOWN
    elif real is None:
        state = BackendState.DOWN if kernel is not None else BackendState.UNKNOWN
    elif real.weight == 0 and backend.weight > 0:
        state = BackendState.DOWN  # a failed check holds it at weight 0 (on_failure: weight_zero)
    elif real.weight == 0:
        state = BackendState.DRAINED
    else:
        state = BackendState.UP
    return BackendStats(
        address=str(backend.address),
        port=port,
        endpoint=endpoint(str(backend.address), port or 0),
        configured_weight=backend.weight,
        kernel_weight=real.weight if real else None,
        state=state,
        counters=_rates(real.counters) if real else None,
    )


def history_samples(stats: StatsSnapshot) -> list[tuple[tuple[str, str | None], tuple[float, ...]]]:
    """The values history keeps, per service and per backend present in the kernel."""
    samples: list[tuple[tuple[str, str | None], tuple[float, ...]]] = []
    for service in stats.services:
        if service.counters is not None:
            samples.append(
                ((service.name, None), tuple(float(getattr(service.counters, m)) for m in METRICS))
            )
        for backend in service.backends:
            if backend.counters is not None:
                samples.append(
                    (
                        (service.name, backend.endpoint),
                        tuple(float(getattr(backend.counters, m)) for m in METRICS),
                    )
                )
    return samples
