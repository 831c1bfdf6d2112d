"""Console access: whether the console menu asks for a password (node-local, never replicated)."""

from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, SettingsDep, Viewer
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.console import ConsoleAccess, ConsoleAccessUpdate
from fulcrum.services import console_access

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
