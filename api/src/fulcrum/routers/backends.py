from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from fulcrum.config.snapshot import HealthCheck
from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Operator, Viewer
from fulcrum.models import Backend
from fulcrum.openapi import STANDBY_REFUSAL
from fulcrum.routers.params import RowId
from fulcrum.schemas.services import BackendCreate, BackendRead, BackendsList, BackendUpdate
from fulcrum.services import service_config
from fulcrum.services.candidate import backend_spec

router = APIRouter(prefix="/services/{service_id}/backends", tags=["backends"], responses=STANDBY_REFUSAL)

_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such service or backend"}}


def read(row: Backend) -> BackendRead:
    return BackendRead.model_validate(
        {**backend_spec(row).model_dump(), "id": row.id, "service_id": row.service_id}
    )


@router.get("", summary="List a service's backends", responses=_NOT_FOUND)
def list_backends(service_id: RowId, session: SessionDep, _: Viewer) -> BackendsList:
    rows = service_config.get_service(session, service_id).backends
    return BackendsList(data=[read(r) for r in rows], count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, summary="Add a backend", responses=_NOT_FOUND)
def add_backend(
    service_id: RowId, body: BackendCreate, session: SessionDep, _: Operator, actor: ActorDep
) -> BackendRead:
    return read(service_config.add_backend(session, actor, service_id, body))


@router.get("/{backend_id}", summary="Show a backend", responses=_NOT_FOUND)
def get_backend(service_id: RowId, backend_id: RowId, session: SessionDep, _: Viewer) -> BackendRead:
    return read(service_config.get_backend(session, service_id, backend_id))


@router.patch(
    "/{backend_id}",
    summary="Change a backend: weight 0 drains it, enabled=false takes it out for maintenance",
    responses=_NOT_FOUND,
)
def update_backend(
    service_id: RowId,
    backend_id: RowId,
    body: BackendUpdate,
    session: SessionDep,
    _: Operator,
    actor: ActorDep,
) -> BackendRead:
    return read(service_config.update_backend(session, actor, service_id, backend_id, body))


@router.delete(
    "/{backend_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Remove a backend", responses=_NOT_FOUND
)
def delete_backend(
    service_id: RowId, backend_id: RowId, session: SessionDep, _: Operator, actor: ActorDep
) -> None:
    service_config.delete_backend(session, actor, service_id, backend_id)


@router.put(
    "/{backend_id}/health-check",
    summary="Override the service's health check for this backend",
    responses=_NOT_FOUND,
)
def put_health_check(
    service_id: RowId, backend_id: RowId, body: HealthCheck, session: SessionDep, _: Operator, actor: ActorDep
) -> HealthCheck:
    update = BackendUpdate.model_validate({"health_check": body.model_dump(mode="json")})
    row = service_config.update_backend(session, actor, service_id, backend_id, update)
    check = backend_spec(row).health_check
    assert check is not None
    return check


@router.delete(
    "/{backend_id}/health-check",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Use the service's health check again",
    responses=_NOT_FOUND,
)
def delete_health_check(
    service_id: RowId, backend_id: RowId, session: SessionDep, _: Operator, actor: ActorDep
) -> None:
    update = BackendUpdate.model_validate({"health_check": None})
    service_config.update_backend(session, actor, service_id, backend_id, update)
