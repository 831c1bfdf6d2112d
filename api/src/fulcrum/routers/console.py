"""The console menu's routes: whether it asks for a password, and the management address it sets
(node-local, never replicated)."""

from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import (
    ActorDep,
    Admin,
    ApplierDep,
    CommitLock,
    ConsoleActorDep,
    SettingsDep,
    TelemetryDep,
    Viewer,
)
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.revisions import APPLY_ERRORS
from fulcrum.schemas.console import (
    ConsoleAccess,
    ConsoleAccessUpdate,
    ConsoleManagementChange,
    ConsoleManagementResult,
)
from fulcrum.schemas.revisions import RevisionRead
from fulcrum.services import console_access, console_network

router = APIRouter(prefix="/node/console", tags=["node"])


@router.get("", summary="Whether this node's console menu (tty1, serial) asks for a password")
def get_console_access(settings: SettingsDep, _: Viewer) -> ConsoleAccess:
    assert settings.console_password_file is not None
    return console_access.get_console_access(settings.console_password_file)


@router.put("", summary="Require a password on this node's console menu, or not (takes effect at once)")
@any_node
def put_console_access(
    body: ConsoleAccessUpdate, settings: SettingsDep, session: SessionDep, _: Admin, actor: ActorDep
) -> ConsoleAccess:
    assert settings.console_password_file is not None
    return console_access.set_console_access(session, actor, settings.console_password_file, body)


@router.put(
    "/management",
    summary="The console menu sets the management address: committed at once (the console's token only)",
    responses={**APPLY_ERRORS, 401: {"description": "Not the console menu's token"}},
)
@any_node  # the revision's shared part is the running one: only this node's network changes
def put_console_management(
    _lock: CommitLock,
    body: ConsoleManagementChange,
    session: SessionDep,
    actor: ConsoleActorDep,
    applier: ApplierDep,
    telemetry: TelemetryDep,
    settings: SettingsDep,
) -> ConsoleManagementResult:
    revision, interface = console_network.change_management_address(
        session, actor, applier, telemetry, body, settings.network_dir
    )
    return ConsoleManagementResult(interface=interface, revision=RevisionRead.model_validate(revision))
