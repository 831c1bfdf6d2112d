"""Commit, roll back and confirm: turning the candidate into numbered, applied revisions.

Revision numbers only grow. Rolling back to revision K commits K's snapshot as a new revision, so
history is never rewritten. Commits are serialised by `commit_lock`, held by the caller until its
transaction is committed (see routers/revisions.py and the confirm watcher in main.py).
"""

from __future__ import annotations

import difflib
import functools
import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier
from fulcrum.apply.result import ApplyOutcome, ApplyResult, ApplyStep
from fulcrum.config.network import NetworkConfig
from fulcrum.config.snapshot import ConfigSnapshot, VrrpPart, digest_of, parsed_snapshot, parsed_vrrp_part
from fulcrum.db import begin_write, end_read
from fulcrum.errors import ApplyDiskFull, ApplyFailed, ApplyRejected, Conflict, NotFound
from fulcrum.models import GOOD_STATES, Revision, RevisionState
from fulcrum.models._types import utcnow
from fulcrum.schemas.revisions import Diff, PendingChanges
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, storage
from fulcrum.services import lineage as ha_lineage
from fulcrum.services.candidate import candidate_snapshot, load_snapshot
from fulcrum.services.events import EventRecorder
from fulcrum.services.network_plan import MANAGEMENT_CONFIRM_SECONDS, management_network_moves
from fulcrum.services.paging import page
from fulcrum.services.plan import plan

commit_lock = threading.Lock()
# Set while a commit runs (commit_lock is also held by the confirm watcher's checks each second):
# the statistics collector sits its rounds out (fulcrum.telemetry.hub).
committing = threading.Event()

P = ParamSpec("P")
R = TypeVar("R")


def _marks_committing(function: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(function)
    def marked(*args: P.args, **kwargs: P.kwargs) -> R:
        committing.set()
        try:
            return function(*args, **kwargs)
        finally:
            committing.clear()

    return marked


# A failure in these steps means the configuration itself was rejected: nothing is recorded.
_REJECTED_STEPS = {ApplyStep.RENDER, ApplyStep.VALIDATE}
REDACTED = "[redacted]"  # what a read shows for a stored secret


def get_revision(session: Session, number: int) -> Revision:
    revision = session.get(Revision, number)
    if revision is None:
        raise NotFound(f"revision {number} does not exist")
    return revision


def list_revisions(session: Session, limit: int, offset: int) -> tuple[list[Revision], int]:
    return page(session, select(Revision), Revision.number.desc(), limit, offset)


def count_by_state(session: Session) -> dict[str, int]:
    rows = session.execute(select(Revision.state, func.count()).group_by(Revision.state))
    return dict(rows.all())  # a Result has keys(): dict() would take it for a mapping


def latest(session: Session) -> Revision | None:
    return session.scalar(select(Revision).order_by(Revision.number.desc()).limit(1))


def running(session: Session) -> Revision | None:
    """The newest revision whose configuration is in force."""
    return session.scalar(
        select(Revision).where(Revision.state.in_(GOOD_STATES)).order_by(Revision.number.desc()).limit(1)
    )


def awaiting_confirm(session: Session) -> Revision | None:
    return session.scalar(select(Revision).where(Revision.state == RevisionState.AWAITING_CONFIRM.value))


def snapshot_of(revision: Revision | None) -> ConfigSnapshot | None:
    return parsed_snapshot(revision.snapshot) if revision else None


def vrrp_part_of(revision: Revision | None) -> VrrpPart | None:
    """The node and VIP groups of `revision` alone (config.snapshot.VrrpPart)."""
    return parsed_vrrp_part(revision.snapshot) if revision else None


def network_of(revision: Revision | None) -> NetworkConfig | None:
    """The managed network of `revision` alone: a commit needs only that of the running one, not
    every backend of it validated again (thousands at size)."""
    network = json.loads(revision.snapshot).get("network") if revision else None
    return NetworkConfig.model_validate(network) if network is not None else None


def pending_changes(session: Session) -> PendingChanges:
    current = running(session)
    candidate = candidate_snapshot(session)
    diff = _diff(snapshot_of(current), candidate, current.number if current else None, None)
    return PendingChanges(**diff.model_dump(), has_changes=differs_from_running(current, candidate))


def differs_from_running(current: Revision | None, candidate: ConfigSnapshot) -> bool:
    """Whether the candidate is not what runs. Before the first commit nothing is loaded, which
    is what the factory settings amount to (no services, no VIPs, the box's firewall accepting
    management from anywhere), so a fresh node that nobody has edited has nothing pending."""
    running_digest = current.digest if current is not None else _FACTORY_DIGEST
    return candidate.digest() != running_digest


_FACTORY_DIGEST = ConfigSnapshot().digest()


def diff(session: Session, from_number: int | None, to_number: int | None) -> Diff:
    """Diff two revisions; None for `to_number` means the candidate, for `from_number` the empty config."""
    before = snapshot_of(get_revision(session, from_number)) if from_number is not None else None
    after = (
        snapshot_of(get_revision(session, to_number))
        if to_number is not None
        else candidate_snapshot(session)
    )
    assert after is not None
    return _diff(before, after, from_number, to_number)


def shown(snapshot: ConfigSnapshot) -> dict[str, Any]:
    """A snapshot as the API shows it to every role: BGP neighbors' TCP-MD5 passwords are replaced
    by "[redacted]" (revisions keep them: the applier renders frr.conf from the snapshot)."""
    data = snapshot.model_dump(mode="json")
    for neighbor in (data.get("bgp") or {}).get("neighbors", []):
        if neighbor["password"] is not None:
            neighbor["password"] = REDACTED
    return data


def _diff(before: ConfigSnapshot | None, after: ConfigSnapshot, a: int | None, b: int | None) -> Diff:
    def pretty(s: ConfigSnapshot | None) -> list[str]:
        if s is None:
            return []
        return json.dumps(shown(s), indent=2, sort_keys=True).splitlines(keepends=True)

    text = "".join(
        difflib.unified_diff(
            pretty(before),
            pretty(after),
            fromfile=f"revision {a}" if a is not None else "empty",
            tofile=f"revision {b}" if b is not None else "candidate",
        )
    )
    return Diff(from_revision=a, to_revision=b, text=text, plan=plan(before, after))


@_marks_committing
def commit(
    session: Session,
    actor: audit.Actor,
    applier: Applier,
    events: EventRecorder,
    message: str,
    confirm_within: int | None,
    *,
    snapshot: ConfigSnapshot | None = None,
    rollback_of: int | None = None,
    supersedes: Revision | None = None,
    lineage: str | None = None,
    candidate_follows: bool = True,
) -> Revision:
    """Apply the candidate (or `snapshot`) as the next revision. The caller holds `commit_lock`.

    No database transaction is held while the data plane applies (that takes seconds and the
    event recorder writes meanwhile). A configuration the validators reject raises ApplyRejected
    and records nothing. A failure after that (reload, read-back) is recorded as a FAILED
    revision, raised as ApplyFailed and recorded as an `apply.failed` event (for the alerts); the
    engine has restored the previous configuration. A data disk without room for the commit raises
    DiskFull (507) before anything is applied; rendered files that find it full, ApplyDiskFull.
    Applying an explicit `snapshot` (a rollback) also makes it the candidate, once it applied,
    unless `candidate_follows` is False (the caller has put its change into the candidate itself).
    `lineage` is given for a revision replicated from the HA peer: it continues the peer's history.
    """
    explicit = snapshot is not None
    snapshot = snapshot or candidate_snapshot(session)
    canonical = snapshot.canonical_json()
    digest = digest_of(canonical)
    previous = running(session)
    previous_number = previous.number if previous else None
    if previous is not None and previous.digest == digest and rollback_of is None:
        raise Conflict(
            f"nothing to commit: the configuration equals revision {previous.number}, which is running"
        )
    waiting = awaiting_confirm(session)
    if waiting is not None and (supersedes is None or waiting.number != supersedes.number):
        raise Conflict(
            f"revision {waiting.number} awaits confirmation until {waiting.confirm_deadline:%H:%M:%S} UTC; "
            "confirm it, or let it roll back, before committing again"
        )
    if (
        confirm_within is None
        and supersedes is None
        and management_network_moves(network_of(previous), snapshot.network)
    ):
        # The classic lock-out: unless the admin confirms from the new address, it comes back.
        confirm_within = MANAGEMENT_CONFIRM_SECONDS
    superseded = supersedes.number if supersedes else None
    number = (session.scalar(select(func.max(Revision.number))) or 0) + 1
    stamp = ha_lineage.stamp(session, snapshot, lineage)
    storage.require_room_for_commit(session, len(canonical))
    end_read(session)
    result = applier.apply(snapshot, number)
    begin_write(session)
    origin = (
        "replication" if lineage is not None
        else "confirm_revert" if superseded is not None
        else "rollback" if rollback_of is not None
        else "commit"
    )  # fmt: skip
    if result.disk_full:
        _record_failure(session, events, actor, result, number, origin, result.message)
        raise ApplyDiskFull(
            f"revision {number} was not applied: {result.message}; the running configuration is unchanged",
            failed_step=result.failed_step.value if result.failed_step else None,
            apply_result=result.model_dump(mode="json"),
        )
    if result.outcome == ApplyOutcome.FAILED and result.failed_step in _REJECTED_STEPS:
        raise ApplyRejected(
            f"the configuration was rejected at step {result.failed_step.value}: {result.message}",
            failed_step=result.failed_step.value,
            failed_daemon=result.failed_daemon,
            apply_result=result.model_dump(mode="json"),
        )
    if superseded is not None:
        get_revision(session, superseded).state = RevisionState.REVERTED.value
    if explicit and candidate_follows and result.ok:
        load_snapshot(session, snapshot)
    revision = Revision(
        number=number,
        author=actor.username,
        message=message,
        snapshot=canonical,
        digest=digest,
        state=_state_for(result, confirm_within),
        previous=previous_number,
        rollback_of=rollback_of,
        confirm_deadline=utcnow() + timedelta(seconds=confirm_within)
        if confirm_within and result.ok
        else None,
        apply_result=result.model_dump(mode="json"),
        **stamp,
    )
    session.add(revision)
    session.flush()
    audit.record(
        session,
        actor,
        "revision.rollback" if rollback_of is not None or superseded is not None else "revision.commit",
        f"revision {number}",
        {
            "message": message,
            "outcome": result.outcome.value,
            "failed_step": result.failed_step.value if result.failed_step else None,
            "failed_daemon": result.failed_daemon,
            "rollback_of": rollback_of,
            "reverts": superseded,
            "confirm_within": confirm_within,
            "previous": previous_number,
        },
        revision=number,
        success=result.ok,
    )
    if not result.ok:
        failure = (
            f"revision {number} failed at step {result.failed_step.value if result.failed_step else '?'}: "
            f"{result.message}; the previous configuration is running"
        )
        _record_failure(session, events, actor, result, number, origin, failure)
        raise ApplyFailed(
            failure,
            revision=number,
            failed_step=result.failed_step.value if result.failed_step else None,
            failed_daemon=result.failed_daemon,
            apply_result=result.model_dump(mode="json"),
        )
    return revision


def _record_failure(
    session: Session,
    events: EventRecorder,
    actor: audit.Actor,
    result: ApplyResult,
    number: int,
    origin: str,
    message: str,
) -> None:
    """An `apply.failed` event, for the alerts: which revision, from where, the step and the error."""
    events.record(
        "apply.failed",
        Severity.CRITICAL,
        message,
        detail={
            "revision": number,
            "origin": origin,  # commit, rollback, confirm_revert or replication
            "author": actor.username,
            "failed_step": result.failed_step.value if result.failed_step else None,
            "failed_daemon": result.failed_daemon,
            "error": result.message,
            "disk_full": result.disk_full,
        },
        session=session,
    )


def _state_for(result: ApplyResult, confirm_within: int | None) -> str:
    if not result.ok:
        return RevisionState.FAILED.value
    if confirm_within:
        return RevisionState.AWAITING_CONFIRM.value
    return (
        RevisionState.APPLIED.value
        if result.outcome == ApplyOutcome.APPLIED
        else RevisionState.VALIDATED.value
    )


def rollback(
    session: Session,
    actor: audit.Actor,
    applier: Applier,
    events: EventRecorder,
    number: int,
    message: str,
    confirm_within: int | None,
    discard_changes: bool,
) -> Revision:
    target = get_revision(session, number)
    current = running(session)
    if not discard_changes and (current is None or candidate_snapshot(session).digest() != current.digest):
        raise Conflict(
            "the candidate has uncommitted changes that a rollback would discard; "
            "commit them first or repeat with discard_changes=true"
        )
    if current is not None and current.digest == target.digest:
        raise Conflict(f"revision {number}'s configuration is already running (revision {current.number})")
    snapshot = snapshot_of(target)
    assert snapshot is not None
    return commit(
        session, actor, applier, events, message or f"roll back to revision {number}", confirm_within,
        snapshot=snapshot, rollback_of=number,
    )  # fmt: skip


def confirm(session: Session, actor: audit.Actor, number: int) -> Revision:
    revision = get_revision(session, number)
    if revision.state != RevisionState.AWAITING_CONFIRM.value:
        raise Conflict(f"revision {number} is {revision.state}, not awaiting confirmation")
    revision.confirmed_at = utcnow()
    outcome = revision.apply_result.get("outcome")
    revision.state = (
        RevisionState.APPLIED.value
        if outcome == ApplyOutcome.APPLIED.value
        else RevisionState.VALIDATED.value
    )
    session.flush()
    audit.record(session, actor, "revision.confirm", f"revision {number}", revision=number)
    return revision


def revert_unconfirmed(
    session: Session, applier: Applier, events: EventRecorder, now: datetime | None = None
) -> Revision | None:
    """Roll back a commit-confirmed revision whose deadline passed, and record it as a
    `revision.confirm_reverted` event (an admin who cut off their own access learns why it came
    back). The caller holds commit_lock."""
    waiting = awaiting_confirm(session)
    if waiting is None or waiting.confirm_deadline is None or waiting.confirm_deadline > (now or utcnow()):
        return None
    previous = get_revision(session, waiting.previous) if waiting.previous is not None else None
    target = snapshot_of(previous) or ConfigSnapshot()
    message = (
        f"automatic rollback: revision {waiting.number} was not confirmed by "
        f"{waiting.confirm_deadline:%Y-%m-%d %H:%M:%S} UTC"
    )
    reverted = commit(
        session, audit.SYSTEM, applier, events, message, None,
        snapshot=target, rollback_of=waiting.previous, supersedes=waiting,
    )  # fmt: skip
    events.record(
        "revision.confirm_reverted", Severity.WARNING,
        f"revision {waiting.number} ({waiting.author}: {waiting.message or 'no message'}) was not confirmed "
        f"by {waiting.confirm_deadline:%Y-%m-%d %H:%M:%S} UTC: rolled back to revision "
        f"{waiting.previous if waiting.previous is not None else 'none'} as revision {reverted.number}",
        detail={"revision": waiting.number, "author": waiting.author, "restored": waiting.previous,
                "as_revision": reverted.number, "deadline": waiting.confirm_deadline.isoformat()},
        session=session,
    )  # fmt: skip
    return reverted


def reapply_running(session: Session, applier: Applier) -> ApplyResult | None:
    """At start-up: make the data plane run the newest good revision again if it does not already.

    Covers a crash between the engine applying a revision and the database recording it: the
    engine's applied revision then differs from the database's, and the database wins.
    """
    current = running(session)
    if current is None:
        return None
    status = applier.status()
    if status.applied_revision == current.number and (status.keepalived_running or not status.ipvs_available):
        return None
    snapshot = snapshot_of(current)
    assert snapshot is not None
    result = applier.apply(snapshot, current.number)
    audit.record(
        session,
        audit.SYSTEM,
        "revision.reapply",
        f"revision {current.number}",
        {"outcome": result.outcome.value, "message": result.message},
        revision=current.number,
        success=result.ok,
    )
    return result
