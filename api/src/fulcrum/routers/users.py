from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin
from fulcrum.models import User
from fulcrum.openapi import NOT_FOUND, STANDBY_REFUSAL
from fulcrum.routers.params import RowId
from fulcrum.schemas.auth import ManagedUser, UserCreate, UserRead, UsersList, UserUpdate
from fulcrum.services import users
from fulcrum.services.login_throttle import Lockout

router = APIRouter(prefix="/users", tags=["users"], responses={**NOT_FOUND, **STANDBY_REFUSAL})


def _managed(user: User, lockouts: dict[str, Lockout]) -> ManagedUser:
    lockout = lockouts.get(user.username, Lockout(0, None))
    return ManagedUser(
        **UserRead.model_validate(user).model_dump(),
        failed_logins=lockout.failures,
        locked_until=lockout.locked_until,
    )


@router.get("", summary="List users, with their failed logins and lock state")
def list_users(session: SessionDep, _: Admin) -> UsersList:
    rows = users.list_users(session)
    lockouts = users.lockouts(session, rows)
    return UsersList(data=[_managed(u, lockouts) for u in rows], count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, summary="Create a user")
def create_user(body: UserCreate, session: SessionDep, _: Admin, actor: ActorDep) -> UserRead:
    return UserRead.model_validate(users.create_user(session, actor, body))


@router.patch("/{user_id}", summary="Change a user's role, password or disabled flag")
def update_user(user_id: RowId, body: UserUpdate, session: SessionDep, _: Admin, actor: ActorDep) -> UserRead:
    return UserRead.model_validate(users.update_user(session, actor, user_id, body))


@router.post("/{user_id}/unlock", summary="Let a locked-out account try to log in again now")
def unlock_user(user_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> ManagedUser:
    user = users.unlock_user(session, actor, user_id)
    return _managed(user, users.lockouts(session, [user]))


@router.delete("/{user_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a user")
def delete_user(user_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    users.delete_user(session, actor, user_id)
