from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, ApplierDep, CommitLock, Operator, TelemetryDep, Viewer
from fulcrum.openapi import error
from fulcrum.routers.one_writer import any_node, node_local_commit
from fulcrum.routers.params import MAX_SQL_INT, Offset, RevisionNumber
from fulcrum.schemas.revisions import (
    CommitRequest,
    Diff,
    PendingChanges,
    RevisionDetail,
    RevisionRead,
    RevisionsList,
    RollbackRequest,
)
from fulcrum.services import revisions

router = APIRouter(tags=["revisions"])

APPLY_ERRORS: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "Nothing to commit, a confirmation is pending, applying failed and was rolled back, "
        "or this node is a standby (code standby_read_only)"
    },
    422: {"description": "keepalived or nft rejected the rendered configuration; nothing changed"},
    507: {"description": "The data disk is full (cause disk_full): nothing was applied or recorded"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: error("No such revision")}


@router.get("/changes", summary="Uncommitted changes and what applying them would do")
def pending(session: SessionDep, _: Viewer) -> PendingChanges:
    return revisions.pending_changes(session)


@router.get("/revisions", summary="List revisions, newest first")
def list_revisions(
    session: SessionDep,
    _: Viewer,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> RevisionsList:
    rows, total = revisions.list_revisions(session, limit, offset)
    return RevisionsList(data=[RevisionRead.model_validate(r) for r in rows], count=total)


@router.post(
    "/revisions",
    status_code=status.HTTP_201_CREATED,
    summary="Commit the candidate: validate, apply, read back",
    responses=APPLY_ERRORS,
)
@node_local_commit
def commit(
    _lock: CommitLock,
    body: CommitRequest,
    session: SessionDep,
    _: Operator,
    actor: ActorDep,
    applier: ApplierDep,
    telemetry: TelemetryDep,
) -> RevisionRead:
    return RevisionRead.model_validate(
        revisions.commit(session, actor, applier, telemetry, body.message, body.confirm_within)
    )


@router.get(
    "/revisions/diff",
    summary="Diff two revisions (omit `to` for the candidate, `from` for empty)",
    responses=_NOT_FOUND,
)
def diff(
    session: SessionDep,
    _: Viewer,
    from_: Annotated[int | None, Query(alias="from", ge=1, le=MAX_SQL_INT)] = None,
    to: Annotated[int | None, Query(ge=1, le=MAX_SQL_INT)] = None,
) -> Diff:
    return revisions.diff(session, from_, to)


@router.get("/revisions/{number}", summary="Show a revision with its snapshot", responses=_NOT_FOUND)
def get_revision(number: RevisionNumber, session: SessionDep, _: Viewer) -> RevisionDetail:
    row = revisions.get_revision(session, number)
    snapshot = revisions.snapshot_of(row)
    assert snapshot is not None
    return RevisionDetail(**RevisionRead.model_validate(row).model_dump(), snapshot=revisions.shown(snapshot))


@router.post(
    "/revisions/{number}/rollback",
    status_code=status.HTTP_201_CREATED,
    summary="Commit revision N's configuration again as a new revision",
    responses={**APPLY_ERRORS, **_NOT_FOUND},
)
def rollback(
    _lock: CommitLock,
    number: RevisionNumber,
    body: RollbackRequest,
    session: SessionDep,
    _: Operator,
    actor: ActorDep,
    applier: ApplierDep,
    telemetry: TelemetryDep,
) -> RevisionRead:
    revision = revisions.rollback(
        session, actor, applier, telemetry, number, body.message, body.confirm_within, body.discard_changes
    )
    return RevisionRead.model_validate(revision)


@router.post(
    "/revisions/{number}/confirm",
    summary="Confirm a commit-confirmed revision so it stays",
    responses={**_NOT_FOUND, 409: error("The revision is not awaiting confirmation")},
)
@any_node
def confirm(
    _lock: CommitLock, number: RevisionNumber, session: SessionDep, _: Operator, actor: ActorDep
) -> RevisionRead:
    return RevisionRead.model_validate(revisions.confirm(session, actor, number))
