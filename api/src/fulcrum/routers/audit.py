from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import func, select

from fulcrum.db import SessionDep
from fulcrum.deps import Viewer
from fulcrum.models import AuditEntry
from fulcrum.routers.params import MAX_SQL_INT, Offset, Since
from fulcrum.schemas.audit import AuditList, AuditRead

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
    query = select(AuditEntry)
    if action:
        query = query.where(AuditEntry.action.startswith(action, autoescape=True))
    if username:
        query = query.where(AuditEntry.username == username)
    if revision is not None:
        query = query.where(AuditEntry.revision == revision)
    if since is not None:
        query = query.where(AuditEntry.at >= since)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(AuditEntry.id.desc()).limit(limit).offset(offset))
    return AuditList(data=[AuditRead.model_validate(r) for r in rows], count=total)
