"""The one-writer rule of an HA pair, enforced in one place for every route of the API.

On a paired node that is not the writer, every change is answered 409 standby_read_only, naming
the active node (on a cluster's member: cluster_member_read_only, naming the cluster's writer).
A route is exempt only if it says so with a mark on its endpoint: `any_node` (it changes this
node's own state, a session, or it is the peer link) or `node_local_commit` (a commit, allowed
when it changes only node-local settings). main.py puts `one_writer` on every
router, so a new route is refused on a standby until it is marked.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

from fastapi import BackgroundTasks, Request
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.orm import Session

from fulcrum.db import SAFE_METHODS, SessionDep
from fulcrum.deps import HaRuntimeDep, get_current_token
from fulcrum.errors import ConfigInvalid, Conflict
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import LocalView, local_view
from fulcrum.services import lineage
from fulcrum.services.candidate import candidate_snapshot

E = TypeVar("E", bound=Callable[..., object])

_MARK = "fulcrum_standby_rule"


class StandbyRule(StrEnum):
    REFUSED = "refused"  # shared configuration: the default
    ANY_NODE = "any_node"  # this node's own state, a session, or the peer link
    NODE_LOCAL_COMMIT = "node_local_commit"  # a commit whose shared part equals the head's


class StandbyReadOnly(Conflict):
    pass


def any_node(endpoint: E) -> E:
    """Mark an endpoint whose change a standby may make (it is this node's, not the pair's)."""
    setattr(endpoint, _MARK, StandbyRule.ANY_NODE)
    return endpoint


def node_local_commit(endpoint: E) -> E:
    """Mark the commit: a standby may still apply its own priority or interface."""
    setattr(endpoint, _MARK, StandbyRule.NODE_LOCAL_COMMIT)
    return endpoint


def standby_rule(endpoint: Callable[..., object] | None) -> StandbyRule:
    return getattr(endpoint, _MARK, StandbyRule.REFUSED)


def one_writer(
    request: Request, session: SessionDep, background: BackgroundTasks, runtime: HaRuntimeDep
) -> None:
    """The dependency on every router. Every route that changes anything has the request's session
    anyway; one that only reads never starts its transaction here."""
    rule = standby_rule(request.scope.get("endpoint"))
    if request.method in SAFE_METHODS or rule is StandbyRule.ANY_NODE:
        return
    _authenticate(request, session)  # who is active is not told to anonymous callers
    view = local_view(session, runtime)
    background.add_task(runtime.wake)  # after a change, the watcher looks at the peer at once
    if view.writer:
        return
    if rule is StandbyRule.NODE_LOCAL_COMMIT:
        if _only_node_local(session, view):
            return
        raise _refuse(view, runtime, "; only node-local settings can be committed here")
    raise _refuse(view, runtime)


def _authenticate(request: Request, session: Session) -> None:
    scheme, secret = get_authorization_scheme_param(request.headers.get("authorization"))
    # As fastapi's HTTPBearer reads it; declaring that dependency here would put every route,
    # login included, under bearer security in the OpenAPI schema.
    bearer = None
    if scheme.lower() == "bearer" and secret:
        bearer = HTTPAuthorizationCredentials(scheme=scheme, credentials=secret)
    get_current_token(request, session, bearer)


def _only_node_local(session: Session, view: LocalView) -> bool:
    try:
        pending = lineage.shared_hash(candidate_snapshot(session))
    except ConfigInvalid:
        return False
    return view.head is not None and pending == view.head.shared_hash


def _refuse(view: LocalView, runtime: HaRuntime, extra: str = "") -> StandbyReadOnly:
    assert view.pairing is not None
    peer = runtime.peer.status
    name = peer.name if peer else view.pairing.peer_name
    if view.pairing.cluster_writer:
        return StandbyReadOnly(
            f"this node is a member of the cluster led by {view.pairing.peer_name}; make changes on "
            f"{view.pairing.peer_name} at {view.pairing.peer_url}{extra}",
            code="cluster_member_read_only",
            active_url=view.pairing.peer_url,
        )
    role = "standby" if view.role in ("standby", "unknown") else view.role
    return StandbyReadOnly(
        f"this node is {role}; make changes on the active node {name} at {view.pairing.peer_url}{extra}",
        code="standby_read_only",
        active_url=view.pairing.peer_url,
    )
