"""Committed configurations, numbered 1, 2, 3, ... with the canonical snapshot each one applied."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base
from fulcrum.models._types import UTCDateTime, utcnow


class RevisionState(StrEnum):
    APPLIED = "applied"  # the kernel matches it
    VALIDATED = "validated"  # valid, but this machine has no data plane to apply it to
    AWAITING_CONFIRM = "awaiting_confirm"  # applied; rolled back unless confirmed by the deadline
    FAILED = "failed"  # apply failed; the previous configuration was restored
    REVERTED = "reverted"  # applied, then rolled back because it was not confirmed in time


# Revisions whose configuration is (or, without a data plane, would be) the one running.
GOOD_STATES = (
    RevisionState.APPLIED.value,
    RevisionState.VALIDATED.value,
    RevisionState.AWAITING_CONFIRM.value,
)


class Revision(Base):
    __tablename__ = "revisions"

    number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    author: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text, default="")
    digest: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(24))
    # The revision that was running when this one was committed: what a failed or unconfirmed
    # commit goes back to.
    previous: Mapped[int | None] = mapped_column(Integer)
    rollback_of: Mapped[int | None] = mapped_column(Integer)  # set on "roll back to N" commits
    confirm_deadline: Mapped[datetime | None] = mapped_column(UTCDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # HA lineage (fulcrum.services.lineage): the hash of the part both nodes of a pair share, the shared
    # hash of the head this revision was built on, and the id of the shared history it extends.
    shared_hash: Mapped[str | None] = mapped_column(String(64))
    parent_shared_hash: Mapped[str | None] = mapped_column(String(64))
    lineage: Mapped[str | None] = mapped_column(String(64), index=True)
    # The large columns last, as in the table (migration 0011): SQLite reaches a column stored after
    # a large one only through that one's overflow pages, and the ones above are filtered on often.
    apply_result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    snapshot: Mapped[str] = mapped_column(Text)  # ConfigSnapshot.canonical_json()
