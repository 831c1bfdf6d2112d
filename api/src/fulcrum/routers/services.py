from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from fulcrum.config.snapshot import HealthCheck
from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Operator, Viewer
from fulcrum.models import Service
from fulcrum.openapi import STANDBY_REFUSAL
from fulcrum.routers.params import MiB, RowId
from fulcrum.schemas.services import ServiceCreate, ServiceRead, ServicesList, ServiceUpdate
from fulcrum.services import service_config
from fulcrum.services.candidate import service_spec

router = APIRouter(prefix="/services", tags=["services"], responses=STANDBY_REFUSAL)

_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such service"}}


def read(row: Service) -> ServiceRead:
    spec = service_spec(row).model_dump()
    spec["backends"] = [
        {**b, "id": r.id, "service_id": row.id} for b, r in zip(spec["backends"], row.backends, strict=True)
    ]
    return ServiceRead.model_validate({**spec, "id": row.id})


@router.get("", summary="List services (candidate configuration)")
def list_services(session: SessionDep, _: Viewer, search: str | None = None) -> ServicesList:
    rows = service_config.list_services(session, search)
    return ServicesList(data=[read(r) for r in rows], count=len(rows))


# A service may arrive with its 10,000 backends in one body.
@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    summary="Create a service, optionally with backends",
    max_body_size=16 * MiB,
)
def create_service(body: ServiceCreate, session: SessionDep, _: Operator, actor: ActorDep) -> ServiceRead:
    return read(service_config.create_service(session, actor, body))


@router.get("/{service_id}", summary="Show a service", responses=_NOT_FOUND)
def get_service(service_id: RowId, session: SessionDep, _: Viewer) -> ServiceRead:
    return read(service_config.get_service(session, service_id))


@router.patch("/{service_id}", summary="Change a service's settings", responses=_NOT_FOUND)
def update_service(
    service_id: RowId, body: ServiceUpdate, session: SessionDep, _: Operator, actor: ActorDep
) -> ServiceRead:
    return read(service_config.update_service(session, actor, service_id, body))


@router.delete(
    "/{service_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a service", responses=_NOT_FOUND
)
def delete_service(service_id: RowId, session: SessionDep, _: Operator, actor: ActorDep) -> None:
    service_config.delete_service(session, actor, service_id)


@router.get("/{service_id}/health-check", summary="The service's health check", responses=_NOT_FOUND)
def get_health_check(service_id: RowId, session: SessionDep, _: Viewer) -> HealthCheck:
    return service_spec(service_config.get_service(session, service_id)).health_check


@router.put("/{service_id}/health-check", summary="Replace the service's health check", responses=_NOT_FOUND)
def put_health_check(
    service_id: RowId, body: HealthCheck, session: SessionDep, _: Operator, actor: ActorDep
) -> HealthCheck:
    update = ServiceUpdate.model_validate({"health_check": body.model_dump(mode="json")})
    return service_spec(service_config.update_service(session, actor, service_id, update)).health_check
