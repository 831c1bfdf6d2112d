"""Business rules for editing services and backends in the candidate configuration."""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.config import snapshot as spec
from fulcrum.config.bgp import BgpConfig
from fulcrum.config.cluster import check_problem, service_problem
from fulcrum.errors import ConfigInvalid, Conflict, NotFound, split_path
from fulcrum.models import Backend, Service
from fulcrum.services import audit
from fulcrum.services.candidate import (
    backend_spec,
    bgp_settings,
    check_service_fits,
    service_spec,
    write_backend,
    write_service,
)
from fulcrum.services.validation import validated


def get_service(session: Session, service_id: int) -> Service:
    service = session.get(Service, service_id)
    if service is None:
        raise NotFound(f"service {service_id} does not exist")
    return service


def get_backend(session: Session, service_id: int, backend_id: int) -> Backend:
    backend = session.get(Backend, backend_id)
    if backend is None or backend.service_id != service_id:
        raise NotFound(f"backend {backend_id} of service {service_id} does not exist")
    return backend


def list_services(session: Session, search: str | None = None) -> list[Service]:
    query = select(Service).order_by(Service.name)
    if search:
        like = f"%{search}%"
        query = query.where(
            Service.name.ilike(like) | Service.address.ilike(like) | Service.description.ilike(like)
        )
    return list(session.scalars(query))


def _free_fwmark(session: Session, keep: int | None) -> int:
    used = set(session.scalars(select(Service.fwmark).where(Service.fwmark.is_not(None))))
    if keep is not None:
        return keep
    mark = 1
    while mark in used:
        mark += 1
    return mark


def _with_fwmark(session: Session, data: dict[str, Any], current: int | None) -> dict[str, Any]:
    """Multi-port services get a firewall mark, allocated once and kept while they stay multi-port."""
    data["fwmark"] = _free_fwmark(session, current) if len(data.get("ports") or []) > 1 else None
    return data


def _name_is_free(session: Session, name: str, own_id: int | None) -> None:
    existing = session.scalar(select(Service.id).where(Service.name == name))
    if existing is not None and existing != own_id:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "name"],
                    "msg": f"a service named {name!r} exists already",
                    "type": "value_error",
                }
            ]
        )


def create_service(session: Session, actor: audit.Actor, request: BaseModel) -> Service:
    data = _with_fwmark(session, request.model_dump(mode="json"), None)
    service = validated(lambda: spec.Service.model_validate(data))
    _name_is_free(session, service.name, None)
    check_service_fits(session, service, None)
    _agrees_across_nodes(session, service)
    row = Service()
    write_service(row, service)
    session.add(row)
    session.flush()
    for backend in service.backends:
        backend_row = Backend()
        write_backend(backend_row, backend)
        row.backends.append(backend_row)
    session.flush()
    audit.record(session, actor, "service.create", service.name, {"after": service.model_dump(mode="json")})
    return row


def update_service(session: Session, actor: audit.Actor, service_id: int, request: BaseModel) -> Service:
    row = get_service(session, service_id)
    before = service_spec(row)
    data = {**before.model_dump(mode="json"), **request.model_dump(mode="json", exclude_unset=True)}
    data = _with_fwmark(session, data, row.fwmark)
    service = validated(lambda: spec.Service.model_validate(data))
    _name_is_free(session, service.name, row.id)
    check_service_fits(session, service, row.id)
    _agrees_across_nodes(session, service)
    write_service(row, service)
    session.flush()
    if _announced_without_service(session, before):
        raise ConfigInvalid(
            [{"loc": ["body", "address"], "msg": _still_announced(before), "type": "value_error"}]
        )
    audit.record(
        session, actor, "service.update", service.name, _changes(before.model_dump(mode="json"), data)
    )
    return row


def delete_service(session: Session, actor: audit.Actor, service_id: int) -> None:
    row = get_service(session, service_id)
    before = service_spec(row)
    session.delete(row)
    session.flush()
    if _announced_without_service(session, before):
        raise Conflict(_still_announced(before))
    audit.record(session, actor, "service.delete", before.name, {"before": before.model_dump(mode="json")})


def _announced_here(session: Session, address: str, enabled: bool) -> bool:
    """Whether this node's BGP announces the VIP of a service (as ConfigSnapshot.clustered_services)."""
    data = bgp_settings(session)
    if not enabled or data is None:
        return False
    return BgpConfig.model_validate(data).announces(ipaddress.ip_address(address))


def _agrees_across_nodes(session: Session, service: spec.Service) -> None:
    """A service whose VIP BGP announces follows the rules that let every node pick the same backend
    (fulcrum.config.cluster): refused as it is written, naming the field, not at the next commit."""
    announced = _announced_here(session, str(service.address), service.enabled)
    problem = service_problem(service) if announced else None
    if problem is not None:
        field, message = problem
        raise ConfigInvalid([{"loc": ["body", *split_path(field)], "msg": message, "type": "value_error"}])


def _backend_agrees_across_nodes(session: Session, service: Service, backend: spec.Backend) -> None:
    announced = _announced_here(session, service.address, service.enabled)
    problem = check_problem(backend.health_check) if announced else None
    if problem is not None:
        field, message = problem
        raise ConfigInvalid([{"loc": ["body", "health_check", field], "msg": message, "type": "value_error"}])


def _announced_without_service(session: Session, before: spec.Service) -> bool:
    """Whether BGP's own list of VIPs to announce names `before`'s address, and no service (after
    the change being made) has that address any more: the commit would be refused for it, and the
    announcement would draw traffic to an address that nothing serves."""
    listed: list[str] = (bgp_settings(session) or {}).get("announce") or []
    address = str(before.address)
    if address not in listed:
        return False
    return session.scalar(select(Service.id).where(Service.address == address).limit(1)) is None


def _still_announced(before: spec.Service) -> str:
    return (
        f"BGP announces {before.address}, the address of service {before.name!r}, by its own list "
        "(bgp.announce): take the address out of that list first (PUT /bgp), or give another "
        "service this address"
    )


def add_backend(session: Session, actor: audit.Actor, service_id: int, request: BaseModel) -> Backend:
    service = get_service(session, service_id)
    backend = validated(lambda: spec.Backend.model_validate(request.model_dump(mode="json")))
    backends = [*service_spec(service).backends, backend]
    _check_backends(service, backends, index=len(backends) - 1)
    _backend_agrees_across_nodes(session, service, backend)
    row = Backend()
    write_backend(row, backend)
    service.backends.append(row)
    session.flush()
    audit.record(
        session,
        actor,
        "backend.create",
        _backend_target(service, row),
        {"after": backend.model_dump(mode="json")},
    )
    return row


def update_backend(
    session: Session, actor: audit.Actor, service_id: int, backend_id: int, request: BaseModel
) -> Backend:
    service = get_service(session, service_id)
    row = get_backend(session, service_id, backend_id)
    before = backend_spec(row).model_dump(mode="json")
    data = {**before, **request.model_dump(mode="json", exclude_unset=True)}
    backend = validated(lambda: spec.Backend.model_validate(data))
    index = service.backends.index(row)
    backends = service_spec(service).backends
    backends[index] = backend
    _check_backends(service, backends, index)
    _backend_agrees_across_nodes(session, service, backend)
    write_backend(row, backend)
    session.flush()
    audit.record(session, actor, "backend.update", _backend_target(service, row), _changes(before, data))
    return row


def delete_backend(session: Session, actor: audit.Actor, service_id: int, backend_id: int) -> None:
    service = get_service(session, service_id)
    row = get_backend(session, service_id, backend_id)
    target = _backend_target(service, row)
    before = backend_spec(row).model_dump(mode="json")
    service.backends.remove(row)
    session.flush()
    audit.record(session, actor, "backend.delete", target, {"before": before})


def _check_backends(service: Service, backends: list[spec.Backend], index: int) -> None:
    """Validate the service with `backends` before any row changes; errors point at backend `index`.

    Every rule about a backend is its service's, so nothing else in the candidate needs a look."""
    data = {
        **service_spec(service).model_dump(mode="json"),
        "backends": [b.model_dump(mode="json") for b in backends],
    }
    validated(lambda: spec.Service.model_validate(data), strip=("backends", index))


def _backend_target(service: Service, backend: Backend) -> str:
    host = f"[{backend.address}]" if ":" in backend.address else backend.address
    return f"{service.name} → {host}" + (f":{backend.port}" if backend.port else "")


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    changed = {k: {"from": before.get(k), "to": v} for k, v in after.items() if before.get(k) != v}
    return {"changed": changed}
