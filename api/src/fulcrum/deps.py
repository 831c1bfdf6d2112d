"""Request dependencies: the current user, role checks, the acting identity, and the app's parts
(settings, applier, HA runtime, telemetry) as `Annotated` aliases, so routers never reach into
`app.state`."""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable, Iterator
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from fulcrum.apply.client import Applier
from fulcrum.db import SAFE_METHODS, SessionDep
from fulcrum.errors import Forbidden, Unauthorized
from fulcrum.ha.runtime import HaRuntime
from fulcrum.models import AuthToken, Role, User
from fulcrum.services import audit, auth, console_token
from fulcrum.services.revisions import commit_lock
from fulcrum.settings import Settings
from fulcrum.telemetry.hub import Telemetry

SESSION_COOKIE = "fulcrum_session"

bearer = HTTPBearer(auto_error=False, description="A session token from /auth/login or an API token")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number
        port = None
    return scheme, (parts.hostname or "").lower(), port


def refuse_cross_site(request: Request) -> None:
    """CSRF: a change made with the session cookie must come from the dashboard's own origin.
    Called where a request is authenticated by the cookie (`get_current_token`), so it covers
    every route that needs a login and no other (login itself uses no cookie).

    The cookie is SameSite=Strict, but that alone leaves out browsers that ignore SameSite and
    sibling sites (same-site is not same-origin). So for every state-changing request
    authenticated by the cookie, `Sec-Fetch-Site` (set by the browser; a page cannot forge it)
    must say same-origin when present, and `Origin` must be this server as the browser reached
    it: the scheme uvicorn serves (https on the appliance, http in the demo and the dashboard
    tests) and the Host header (which carries the port the browser used, e.g. a forwarded 8443).
    A missing Origin is refused too, unless Sec-Fetch-Site vouches for the request: browsers
    send Origin on every POST, PUT, PATCH and DELETE (the Fetch standard), so a cookie request
    without it is either a very old browser, which is exactly the one to distrust, or not a
    browser at all, and scripts authenticate with a bearer token. Requests with a bearer token
    in Authorization are not CSRF-able (a page cannot make a browser attach one to another
    site) and never get here: scripts, fulcrumctl and the HA peer link."""
    if request.method in SAFE_METHODS:
        return
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        raise Forbidden(f"cross-site request refused: the browser marked it Sec-Fetch-Site: {fetch_site}")
    origin = request.headers.get("origin")
    if origin is None:
        if fetch_site == "same-origin":
            return
        raise Forbidden(
            "a change made with the session cookie must carry an Origin header; scripts should use "
            "an API token (Authorization: Bearer)"
        )
    if _origin_of(origin) != _origin_of(str(request.base_url)):
        raise Forbidden(
            f"cross-site request refused: Origin {origin[:200]} is not this appliance ({request.base_url.scheme}://{request.base_url.netloc})"
        )


def client_address(request: Request) -> str:
    """The peer's address; an IPv4 client of the appliance's dual-stack listener (fulcrum.serve)
    arrives as ::ffff:192.0.2.1 and is named 192.0.2.1, as the firewall and the audit log know it."""
    if request.client is None:
        return "unknown"
    host = request.client.host
    with contextlib.suppress(ValueError):
        mapped = ipaddress.IPv6Address(host).ipv4_mapped
        if mapped is not None:
            return str(mapped)
    return host


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
    if secret is not None and credentials is None:
        refuse_cross_site(request)
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


def get_console_actor(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> audit.Actor:
    """The console menu, known by the token the API wrote for it at start (services.console_token)."""
    presented = credentials.credentials if credentials is not None else None
    if not console_token.matches(presented, getattr(request.app.state, "console_token", None)):
        raise Unauthorized(
            "this is the console menu's route: it needs the token the API wrote for the console"
        )
    return audit.Actor(username="console", source="console")


ConsoleActorDep = Annotated[audit.Actor, Depends(get_console_actor)]


def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def get_applier(request: Request) -> Applier:
    return request.app.state.applier


ApplierDep = Annotated[Applier, Depends(get_applier)]


def get_ha_runtime(request: Request) -> HaRuntime:
    return request.app.state.ha


HaRuntimeDep = Annotated[HaRuntime, Depends(get_ha_runtime)]


def get_telemetry(request: Request) -> Telemetry:
    return request.app.state.telemetry


TelemetryDep = Annotated[Telemetry, Depends(get_telemetry)]


def hold_commit_lock() -> Iterator[None]:
    """Serialises commits; declared before SessionDep so it is released after the DB commit."""
    with commit_lock:
        yield


CommitLock = Annotated[None, Depends(hold_commit_lock, scope="function")]
