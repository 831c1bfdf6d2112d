"""Recording changes in the audit log, inside the same transaction as the change itself, and
reading it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.models import AuditEntry
from fulcrum.services.paging import page


@dataclass(frozen=True)
class Actor:
    """Who is acting and from where; built once per request."""

    username: str
    source: str
    user_id: int | None = None


SYSTEM = Actor(username="system", source="local")


def record(
    session: Session,
    actor: Actor,
    action: str,
    target: str = "",
    detail: dict[str, Any] | None = None,
    *,
    revision: int | None = None,
    success: bool = True,
) -> AuditEntry:
    entry = AuditEntry(
        username=actor.username,
        source=actor.source,
        action=action,
        target=target,
        detail=detail or {},
        revision=revision,
        success=success,
    )
    session.add(entry)
    session.flush()
    return entry


def list_entries(
    session: Session,
    action: str | None,
    username: str | None,
    revision: int | None,
    since: datetime | None,
    limit: int,
    offset: int,
) -> tuple[list[AuditEntry], int]:
    """Newest first; `action` is a prefix (e.g. "service.")."""
    query = select(AuditEntry)
    if action:
        query = query.where(AuditEntry.action.startswith(action, autoescape=True))
    if username:
        query = query.where(AuditEntry.username == username)
    if revision is not None:
        query = query.where(AuditEntry.revision == revision)
    if since is not None:
        query = query.where(AuditEntry.at >= since)
    return page(session, query, AuditEntry.id.desc(), limit, offset)
