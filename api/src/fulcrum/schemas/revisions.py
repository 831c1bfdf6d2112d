from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from fulcrum.config.types import JsonInteger
from fulcrum.models.revision import RevisionState


class CommitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(default="", max_length=500)
    # Commit-confirmed: roll back automatically unless confirmed within this many seconds.
    confirm_within: Annotated[int, Field(ge=10, le=3600), JsonInteger] | None = None


class RollbackRequest(CommitRequest):
    # Rolling back replaces the candidate configuration; uncommitted edits are lost.
    discard_changes: StrictBool = False


class RevisionRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    number: int
    created_at: datetime
    author: str
    message: str
    digest: str
    state: RevisionState
    previous: int | None
    rollback_of: int | None
    confirm_deadline: datetime | None
    confirmed_at: datetime | None
    apply_result: dict[str, Any]


class RevisionDetail(RevisionRead):
    snapshot: dict[str, Any]


class RevisionsList(BaseModel):
    data: list[RevisionRead]
    count: int


class PlanAction(StrEnum):
    ADD = "add"
    REMOVE = "remove"
    CHANGE = "change"


class PlanItem(BaseModel):
    """One effect on the running system, in an operator's terms."""

    kind: str  # service | backend | vip | firewall | node | vip_group | network | bgp
    action: PlanAction
    target: str  # e.g. "web (10.0.0.10:80/tcp)" or "web → 10.0.1.2:80"
    detail: str = ""
    disruptive: bool = False  # cuts established connections or moves traffic


class Plan(BaseModel):
    items: list[PlanItem]
    disruptive: bool
    warnings: list[str]


class Diff(BaseModel):
    from_revision: int | None  # None: the empty configuration
    to_revision: int | None  # None: the candidate (uncommitted) configuration
    text: str  # unified diff of the two snapshots, pretty-printed
    plan: Plan


class PendingChanges(Diff):
    has_changes: bool
