"""Recording changes in the audit log, inside the same transaction as the change itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from fulcrum.models import AuditEntry


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
