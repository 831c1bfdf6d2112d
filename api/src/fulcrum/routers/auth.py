from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.security import HTTPAuthorizationCredentials

from fulcrum.db import SessionDep, writes_late
from fulcrum.deps import (
    SESSION_COOKIE,
    ActorDep,
    CurrentToken,
    CurrentUser,
    SettingsDep,
    bearer,
    client_address,
    presented_token,
)
from fulcrum.models import AuthToken, User
from fulcrum.openapi import STANDBY_REFUSAL, error
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.auth import (
    LoginRequest,
    LoginResponse,
    Me,
    PasswordChange,
    SetupRequest,
    SetupStatus,
    UserRead,
)
from fulcrum.services import auth, users
from fulcrum.settings import Settings

router = APIRouter(tags=["auth"])


def _start_session(
    settings: Settings, response: Response, user: User, token: AuthToken, secret: str
) -> LoginResponse:
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(settings.session_hours * 3600),
        httponly=True,
        secure=settings.cookie_secure,
        samesite="strict",
        path="/",
    )
    return LoginResponse(token=secret, expires_at=auth.expires(token), user=UserRead.model_validate(user))


@router.get("/setup", summary="Whether first-run setup is still needed")
def setup_status(session: SessionDep) -> SetupStatus:
    return SetupStatus(needs_setup=auth.needs_setup(session))


@router.post(
    "/setup",
    status_code=status.HTTP_201_CREATED,
    summary="Create the first admin (only while no account exists)",
    responses={409: {"description": "An account exists already"}},
)
@writes_late
@any_node
async def setup(
    body: SetupRequest, request: Request, response: Response, session: SessionDep, settings: SettingsDep
) -> LoginResponse:
    lifetime = timedelta(hours=settings.session_hours)
    user, token, secret = await auth.create_first_admin(
        session, client_address(request), body.username, body.password, lifetime
    )
    return _start_session(settings, response, user, token, secret)


@router.post(
    "/auth/login",
    summary="Log in; sets a session cookie and returns the same token",
    responses={
        401: error("Wrong username or password"),
        429: error(
            "Too many failed logins for this account or from this address; the message says how long to wait"
        ),
    },
)
@writes_late
@any_node
async def login(
    body: LoginRequest, request: Request, response: Response, session: SessionDep, settings: SettingsDep
) -> LoginResponse:
    lifetime = timedelta(hours=settings.session_hours)
    user, token, secret = await auth.login(
        session, client_address(request), body.username, body.password, lifetime
    )
    return _start_session(settings, response, user, token, secret)


@router.post("/auth/logout", status_code=status.HTTP_204_NO_CONTENT, summary="End this session")
@any_node
def logout(
    request: Request,
    response: Response,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    _: CurrentUser,
) -> None:
    secret = presented_token(request, credentials)
    if secret and secret.startswith(
        auth.TOKEN_PREFIX[auth.TokenKind.SESSION]
    ):  # API tokens are revoked explicitly
        auth.revoke_token(session, secret)
    response.delete_cookie(SESSION_COOKIE, path="/")


@router.get("/auth/me", summary="The logged-in user, and the address the appliance sees them at")
def me(request: Request, user: CurrentUser) -> Me:
    return Me(**UserRead.model_validate(user).model_dump(), client_address=client_address(request))


@router.post(
    "/auth/password",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Change your own password; your other sessions and your API tokens are revoked",
    responses={
        **STANDBY_REFUSAL,
        429: error(
            "Too many wrong passwords for this account or from this address; "
            "the message says how long to wait"
        ),
    },
)
@writes_late
async def change_password(
    body: PasswordChange, session: SessionDep, token: CurrentToken, actor: ActorDep
) -> None:
    await users.change_own_password(session, actor, token, body)
