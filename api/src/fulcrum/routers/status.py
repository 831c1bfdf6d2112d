from __future__ import annotations

from fastapi import APIRouter, Request

from fulcrum import __version__
from fulcrum.db import SessionDep
from fulcrum.deps import ApplierDep, Viewer
from fulcrum.schemas.status import Status
from fulcrum.services import revisions
from fulcrum.services.candidate import candidate_snapshot

router = APIRouter(tags=["status"])


@router.get("/status", summary="Data plane, versions, and desired vs applied revision")
def get_status(request: Request, session: SessionDep, _: Viewer, applier: ApplierDep) -> Status:
    dataplane, error = None, None
    try:
        dataplane = applier.status()
    except Exception as exc:  # noqa: BLE001  (the helper being down is a state to show, not a crash)
        error = str(exc)
    newest = revisions.latest(session)
    current = revisions.running(session)
    waiting = revisions.awaiting_confirm(session)
    candidate = candidate_snapshot(session)
    return Status(
        version=__version__,
        node=candidate.node.name,
        dataplane=dataplane,
        dataplane_error=error,
        desired_revision=newest.number if newest else None,
        applied_revision=current.number if current else None,
        pending_changes=revisions.differs_from_running(current, candidate),
        awaiting_confirm=waiting.number if waiting else None,
    )


@router.get("/health", summary="Liveness: the API answers and its database is readable", tags=["status"])
def health(session: SessionDep) -> dict[str, str]:
    revisions.latest(session)
    return {"status": "ok"}
