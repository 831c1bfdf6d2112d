from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from fulcrum.db import SessionDep
from fulcrum.deps import Viewer
from fulcrum.routers.params import MAX_SQL_INT, Offset, Since
from fulcrum.schemas.audit import AuditList, AuditRead
from fulcrum.services import audit

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", summary="The audit log, newest first, filterable")
def list_audit(
    session: SessionDep,
    _: Viewer,
    action: Annotated[str | None, Query(max_length=64, description="prefix, e.g. 'service.'")] = None,
    username: Annotated[str | None, Query(max_length=64)] = None,
    revision: Annotated[int | None, Query(ge=1, le=MAX_SQL_INT)] = None,
    since: Since = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Offset = 0,
) -> AuditList:
    rows, total = audit.list_entries(session, action, username, revision, since, limit, offset)
    return AuditList(data=[AuditRead.model_validate(r) for r in rows], count=total)
