"""The one-writer rule at the API's door: on a paired node that is not the writer, requests that
change the shared configuration are answered 409 standby_read_only, naming the active node."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Depends, Request

from fulcrum.db import SAFE_METHODS, SessionDep
from fulcrum.deps import CurrentUser
from fulcrum.errors import ConfigInvalid, Conflict
from fulcrum.ha import lineage
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import LocalView, local_view
from fulcrum.services.candidate import candidate_snapshot


class StandbyReadOnly(Conflict):
    pass


def _refuse(view: LocalView, runtime: HaRuntime, extra: str = "") -> StandbyReadOnly:
    assert view.pairing is not None
    peer = runtime.peer.status
    name = peer.name if peer else view.pairing.peer_name
    role = "standby" if view.role in ("standby", "unknown") else view.role
    return StandbyReadOnly(
        f"this node is {role}; make changes on the active node {name} at {view.pairing.peer_url}{extra}",
        code="standby_read_only",
        active_url=view.pairing.peer_url,
    )


def require_writer(request: Request, session: SessionDep, background: BackgroundTasks, _: CurrentUser) -> None:
    """For routers whose every change is shared configuration (services, backends, VIP groups,
    firewall, users). After a change, the watcher looks at the peer at once. Authentication comes
    first: who is active is not told to anonymous callers."""
    if request.method in SAFE_METHODS:
        return
    runtime: HaRuntime = request.app.state.ha
    view = local_view(session, runtime)
    if not view.writer:
        raise _refuse(view, runtime)
    background.add_task(runtime.wake)


def allow_commit(request: Request, session: SessionDep, background: BackgroundTasks, _: CurrentUser) -> None:
    """A commit: on the writer anything; elsewhere only node-local changes (the candidate's
    shared part equals the head's), so a standby can still apply its own priority or interface."""
    runtime: HaRuntime = request.app.state.ha
    view = local_view(session, runtime)
    background.add_task(runtime.wake)
    if view.writer:
        return
    try:
        pending = lineage.shared_hash(candidate_snapshot(session))
    except ConfigInvalid:
        pending = None
    if view.head is None or pending != view.head.shared_hash:
        raise _refuse(view, runtime, "; only node-local settings can be committed here")


Writer = Annotated[None, Depends(require_writer)]
CommitAllowed = Annotated[None, Depends(allow_commit)]
