"""Which configuration a pair shares, and how far two nodes' histories agree.

A revision's *shared part* is everything but the node-local settings; its `shared_hash` says
whether two nodes run the same shared configuration. Content hashes alone cannot tell who is
ahead (rolling back to an older configuration brings back an older hash), so every revision
also carries a `lineage` id: a hash chain over the shared hashes committed one after another,
like a commit id without timestamps. A commit that leaves the shared part unchanged (a node-local
change) keeps its parent's lineage; a replicated revision takes the sender's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.models import Revision, RevisionState

SHARED_KEYS = ("format", "services", "vip_groups", "firewall")
# The head is the newest revision in force for good: an unconfirmed commit does not replicate
# until it is confirmed, so a commit-confirmed rollback never reaches the peer.
HEAD_STATES = (RevisionState.APPLIED.value, RevisionState.VALIDATED.value)
HISTORY_LENGTH = 50


def shared_part(snapshot: ConfigSnapshot) -> dict[str, Any]:
    data = snapshot.model_dump(mode="json")
    return {key: data[key] for key in SHARED_KEYS}


def hash_shared(shared: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(shared, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def shared_hash(snapshot: ConfigSnapshot) -> str:
    return hash_shared(shared_part(snapshot))


def next_lineage(parent: str | None, shared: str) -> str:
    return hashlib.sha256(f"{parent or ''}\n{shared}".encode()).hexdigest()


def head(session: Session) -> Revision | None:
    return session.scalar(
        select(Revision).where(Revision.state.in_(HEAD_STATES)).order_by(Revision.number.desc()).limit(1)
    )


def history(session: Session, limit: int = HISTORY_LENGTH) -> list[str]:
    """The lineage ids of the last good revisions, newest (the head) first, without repeats."""
    ids: list[str] = []
    rows = session.scalars(
        select(Revision.lineage)
        .where(Revision.state.in_(HEAD_STATES), Revision.lineage.is_not(None))
        .order_by(Revision.number.desc())
    )
    for lineage in rows:
        if lineage is not None and lineage not in ids:
            ids.append(lineage)
            if len(ids) == limit:
                break
    return ids


def stamp(session: Session, snapshot: ConfigSnapshot, lineage: str | None = None) -> dict[str, str | None]:
    """The lineage columns of a new revision of `snapshot` (`lineage` given: a replicated one)."""
    parent = head(session)
    shared = shared_hash(snapshot)
    if lineage is None:
        if parent is not None and parent.shared_hash == shared:
            lineage = parent.lineage
        else:
            lineage = next_lineage(parent.lineage if parent else None, shared)
    return {
        "shared_hash": shared,
        "parent_shared_hash": parent.shared_hash if parent else None,
        "lineage": lineage,
    }
