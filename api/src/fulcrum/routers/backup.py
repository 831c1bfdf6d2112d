"""Backups: export one (admin), restore one on a running appliance as a candidate to review, or
on a fresh one from its first-run page (before any account exists, like first-run setup).

An upload is the encrypted backup itself as the body (application/octet-stream, streamed to a
temporary file), with the passphrase in the X-Fulcrum-Backup-Passphrase header, percent-encoded
UTF-8 (the API has no multipart parser, and a header is never written to the access log)."""

from __future__ import annotations

import tempfile
from typing import Annotated, Any
from urllib.parse import unquote

import anyio
from fastapi import APIRouter, BackgroundTasks, Header, Query, Request, status
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from fulcrum.backup import export, restore
from fulcrum.db import SessionDep, writes_late
from fulcrum.deps import ActorDep, Admin, ApplierDep, HaRuntimeDep, SettingsDep, client_address
from fulcrum.errors import ConfigInvalid
from fulcrum.openapi import STANDBY_REFUSAL, error
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import MiB
from fulcrum.schemas.backup import MAX_PASSPHRASE, BackupRequest, RestoreResult
from fulcrum.services import revisions

router = APIRouter(tags=["backup"])

MAX_BACKUP = 256 * MiB
PASSPHRASE_HEADER = "X-Fulcrum-Backup-Passphrase"  # noqa: S105  (a header's name)
_UPLOAD: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The backup file as exported",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
_REJECTED: dict[int | str, dict[str, Any]] = {
    400: error(
        "The backup cannot be restored; code says why: wrong_passphrase, truncated, tampered, "
        "newer_format, not_a_backup or invalid. Nothing was changed."
    )
}
Passphrase = Annotated[
    str,
    Header(
        alias=PASSPHRASE_HEADER,
        min_length=1,
        max_length=3 * MAX_PASSPHRASE,
        description="The backup's passphrase, percent-encoded UTF-8",
    ),
]


def _passphrase(encoded: str) -> str:
    try:
        return unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise ConfigInvalid(
            [
                {
                    "loc": ["header", PASSPHRASE_HEADER],
                    "msg": "the passphrase must be percent-encoded UTF-8",
                    "type": "value_error",
                }
            ]
        ) from None


async def _spool(request: Request) -> tuple[Any, int]:
    """The request body in a temporary file (rewound) and its length."""
    # Handed to the caller, who closes it.
    upload = anyio.wrap_file(tempfile.TemporaryFile(prefix="fulcrum-upload-"))  # noqa: SIM115
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            await upload.write(chunk)
        await upload.seek(0)
    except BaseException:
        await upload.aclose()
        raise
    return upload.wrapped, size


@router.post(
    "/backup",
    summary="Export an encrypted backup of this appliance (download)",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The encrypted backup",
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
@any_node  # a copy of this node, changing nothing but the audit log
def export_backup(
    body: BackupRequest,
    session: SessionDep,
    settings: SettingsDep,
    applier: ApplierDep,
    _: Admin,
    actor: ActorDep,
) -> StreamingResponse:
    filename, chunks = export.export(session, actor, settings, applier, body)
    return StreamingResponse(
        chunks,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


@router.post(
    "/backup/restore",
    summary="Restore a backup's configuration as the candidate (then review and commit it); "
    "accounts, the TLS certificate and the SSH host keys only if asked",
    max_body_size=MAX_BACKUP,
    openapi_extra=_UPLOAD,
    responses={**_REJECTED, **STANDBY_REFUSAL},
)
@writes_late  # nothing is locked while the upload arrives and is decrypted
async def restore_backup(
    request: Request,
    passphrase: Passphrase,
    session: SessionDep,
    settings: SettingsDep,
    ha: HaRuntimeDep,
    applier: ApplierDep,
    _: Admin,
    actor: ActorDep,
    users: Annotated[
        bool, Query(description="Replace the accounts and API tokens (ends every session)")
    ] = False,
    tls: Annotated[bool, Query(description="Install the backup's TLS certificate and key")] = False,
    ssh: Annotated[
        bool,
        Query(description="Install the backup's SSH host keys (clients then see the backed-up host's keys)"),
    ] = False,
) -> RestoreResult:
    secret = _passphrase(passphrase)
    upload, size = await _spool(request)

    def run() -> RestoreResult:
        with upload, restore.opened(upload, size, secret) as opened:
            choices = restore.Replaced(users=users, tls=tls, ssh=ssh)
            outcome = restore.restore_as_candidate(session, actor, settings, ha, applier, opened, choices)
            return RestoreResult(
                manifest=outcome.manifest,
                notes=outcome.notes,
                changes=revisions.pending_changes(session),
                sessions_ended=users,
            )

    return await run_in_threadpool(run)


@router.post(
    "/setup/restore",
    status_code=status.HTTP_201_CREATED,
    summary="First-run restore from a backup (only while no account exists): its accounts replace setup",
    max_body_size=MAX_BACKUP,
    openapi_extra=_UPLOAD,
    responses={**_REJECTED, 409: error("An account exists already")},
)
@writes_late
@any_node  # like first-run setup
async def restore_first_run(
    request: Request,
    passphrase: Passphrase,
    session: SessionDep,
    settings: SettingsDep,
    ha: HaRuntimeDep,
    applier: ApplierDep,
    background: BackgroundTasks,
) -> RestoreResult:
    secret = _passphrase(passphrase)
    upload, size = await _spool(request)

    def run() -> RestoreResult:
        with upload, restore.opened(upload, size, secret) as opened:
            outcome = restore.restore_fresh(session, client_address(request), settings, ha, applier, opened)
            return RestoreResult(manifest=outcome.manifest, notes=outcome.notes)

    result = await run_in_threadpool(run)
    # The restored running revision is applied once the restore has committed.
    background.add_task(restore.apply_restored, request.app.state.sessionmaker, applier)
    return result
