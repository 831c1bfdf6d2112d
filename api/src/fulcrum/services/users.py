"""Accounts and API tokens."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from fulcrum.db import begin_write
from fulcrum.errors import Conflict, Forbidden, NotFound, WrongCurrentPassword
from fulcrum.models import AuthToken, Role, TokenKind, User
from fulcrum.schemas.auth import PasswordChange, TokenCreate, UserCreate, UserUpdate
from fulcrum.services import audit, login_throttle
from fulcrum.services.auth import check_password_off_lock, hash_password, hash_password_off_lock, issue_token


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.username)))


def lockouts(session: Session, users: list[User]) -> dict[str, login_throttle.Lockout]:
    """Failed logins and lock state per username (only those with failures)."""
    return login_throttle.account_lockouts(session, [u.username for u in users])


def unlock_user(session: Session, actor: audit.Actor, user_id: int) -> User:
    user = get_user(session, user_id)
    login_throttle.unlock(session, user.username)
    audit.record(session, actor, "user.unlock", user.username)
    return user


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} does not exist")
    return user


def create_user(session: Session, actor: audit.Actor, request: UserCreate) -> User:
    if session.scalar(select(User).where(User.username == request.username)):
        raise Conflict(f"username {request.username!r} is taken")
    user = User(
        username=request.username, password_hash=hash_password(request.password), role=request.role.value
    )
    session.add(user)
    session.flush()
    audit.record(session, actor, "user.create", user.username, {"role": user.role})
    return user


def update_user(session: Session, actor: audit.Actor, user_id: int, request: UserUpdate) -> User:
    user = get_user(session, user_id)
    changes = request.model_dump(exclude_unset=True)
    demoting = (changes.get("role") not in (None, Role.ADMIN)) or changes.get("disabled") is True
    if user.role == Role.ADMIN and demoting:
        _keep_an_admin(session, user)
    if "role" in changes and changes["role"] is not None:
        user.role = Role(changes["role"]).value
    if changes.get("disabled") is not None:
        user.disabled = changes["disabled"]
        if user.disabled:
            user.tokens.clear()  # a disabled account loses its sessions and tokens at once
    if changes.get("password"):
        user.password_hash = hash_password(changes["password"])
        user.tokens.clear()  # a reset means the old password may be known: its sessions and tokens end
    session.flush()
    logged = {k: v for k, v in changes.items() if k != "password"}
    if "password" in changes:
        logged["password"] = "changed"  # noqa: S105  (the audit says that it changed, never what to)
    audit.record(session, actor, "user.update", user.username, logged)
    return user


def delete_user(session: Session, actor: audit.Actor, user_id: int) -> None:
    user = get_user(session, user_id)
    if user.id == actor.user_id:
        raise Forbidden("you cannot delete your own account; another admin can")
    if user.role == Role.ADMIN:
        _keep_an_admin(session, user)
    session.delete(user)
    session.flush()
    audit.record(session, actor, "user.delete", user.username)


async def change_own_password(
    session: Session, actor: audit.Actor, current: AuthToken, request: PasswordChange
) -> None:
    """For an endpoint marked `writes_late`: both argon2 steps run holding no lock. Every other
    session and API token of the user is revoked (whoever changes a password may fear it leaked),
    and the one this request came with too unless `keep_this_session`."""
    user_id, verified_hash, current_id = current.user_id, current.user.password_hash, current.id
    username = current.user.username
    await run_in_threadpool(login_throttle.check, session, actor.source, username)
    if not await check_password_off_lock(session, verified_hash, request.current_password):
        await run_in_threadpool(_wrong_current_password, session, actor, username)
        raise WrongCurrentPassword()
    new_hash = await hash_password_off_lock(request.new_password)
    keep = current_id if request.keep_this_session else None
    await run_in_threadpool(_store_own_password, session, actor, user_id, verified_hash, new_hash, keep)


def _wrong_current_password(session: Session, actor: audit.Actor, username: str) -> None:
    begin_write(session)
    # Re-checked under the write lock, as a login is: concurrent guesses get no more answers.
    login_throttle.check(session, actor.source, username)
    login_throttle.failed(session, actor.source, username)
    audit.record(session, actor, "user.password", username, success=False)


def _store_own_password(
    session: Session,
    actor: audit.Actor,
    user_id: int,
    verified_hash: str,
    new_hash: str,
    keep_token: int | None,
) -> None:
    begin_write(session)
    user = get_user(session, user_id)
    if user.password_hash != verified_hash:
        raise Conflict(
            "your password was changed by another request meanwhile; sign in again with the new one"
        )
    user.password_hash = new_hash
    revoked = [t for t in user.tokens if t.id != keep_token]
    user.tokens[:] = [t for t in user.tokens if t.id == keep_token]
    session.flush()
    audit.record(
        session,
        actor,
        "user.password",
        user.username,
        {"revoked_tokens": len(revoked), "kept_this_session": keep_token is not None},
    )


def _keep_an_admin(session: Session, user: User) -> None:
    admins = session.scalar(
        select(func.count()).select_from(User).where(User.role == Role.ADMIN.value, User.disabled.is_(False))
    )
    if (admins or 0) <= 1 and not user.disabled:
        raise Forbidden("this is the last active admin; create another admin first")


def list_tokens(user: User) -> list[AuthToken]:
    return [t for t in user.tokens if t.kind == TokenKind.API.value]


def create_token(
    session: Session, actor: audit.Actor, user: User, request: TokenCreate
) -> tuple[AuthToken, str]:
    lifetime = timedelta(days=request.expires_in_days) if request.expires_in_days else None
    token, secret = issue_token(session, user, TokenKind.API, request.name, lifetime)
    audit.record(session, actor, "token.create", f"{user.username}: {request.name}")
    return token, secret


def delete_token(session: Session, actor: audit.Actor, user: User, token_id: int) -> None:
    token = session.get(AuthToken, token_id)
    if token is None or token.user_id != user.id or token.kind != TokenKind.API.value:
        raise NotFound(f"token {token_id} does not exist")
    session.delete(token)
    session.flush()
    audit.record(session, actor, "token.delete", f"{user.username}: {token.name}")
