"""Request dependencies: the current user, role checks, the acting identity, the applier."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from fulcrum.db import SessionDep
from fulcrum.errors import Forbidden, Unauthorized
from fulcrum.models import AuthToken, Role, User
from fulcrum.services import audit, auth
from fulcrum.apply.client import Applier
from fulcrum.services.revisions import commit_lock

SESSION_COOKIE = "fulcrum_session"

bearer = HTTPBearer(auto_error=False, description="A session token from /auth/login or an API token")


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def presented_token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is not None:
        return credentials.credentials
    return request.cookies.get(SESSION_COOKIE)


def get_current_token(
    request: Request,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> AuthToken:
    """The session or API token this request is made with."""
    secret = presented_token(request, credentials)
    token = auth.token_for(session, secret) if secret else None
    if token is None:
        raise Unauthorized("log in first: no valid session or API token was presented")
    request.app.state.token_usage.seen(token.id)
    return token


CurrentToken = Annotated[AuthToken, Depends(get_current_token)]


def get_current_user(token: CurrentToken) -> User:
    return token.user


CurrentUser = Annotated[User, Depends(get_current_user)]


def require(role: Role) -> Callable[[User], User]:
    def check(user: CurrentUser) -> User:
        if not user.has_role(role):
            raise Forbidden(f"this needs the {role.value} role; you are {user.role}")
        return user

    return check


Viewer = Annotated[User, Depends(require(Role.VIEWER))]
Operator = Annotated[User, Depends(require(Role.OPERATOR))]
Admin = Annotated[User, Depends(require(Role.ADMIN))]


def get_actor(request: Request, user: CurrentUser) -> audit.Actor:
    return audit.Actor(username=user.username, source=client_address(request), user_id=user.id)


ActorDep = Annotated[audit.Actor, Depends(get_actor)]


def get_applier(request: Request) -> Applier:
    return request.app.state.applier  # type: ignore[no-any-return]


ApplierDep = Annotated[Applier, Depends(get_applier)]


def hold_commit_lock() -> Iterator[None]:
    """Serialises commits; declared before SessionDep so it is released after the DB commit."""
    with commit_lock:
        yield


CommitLock = Annotated[None, Depends(hold_commit_lock, scope="function")]
