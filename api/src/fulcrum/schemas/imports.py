"""Request and response shapes for importing keepalived.conf or ipvsadm rules."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from fulcrum.config.types import NAME_PATTERN
from fulcrum.importer import ImportFormat, Outcome
from fulcrum.importer.limits import MAX_INCLUDES, MAX_TEXT_CHARS
from fulcrum.schemas.revisions import Plan


class ImportMode(StrEnum):
    PREVIEW = "preview"  # the report and what would change; the candidate is not touched
    APPLY = "apply"  # write into the candidate configuration (never the kernel: commit does that)


class ConflictPolicy(StrEnum):
    REPLACE = "replace"  # the imported service takes the place of the existing one(s)
    SKIP = "skip"  # the existing service stays; the imported one is left out


IncludeName = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$")]
ImportText = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: ImportFormat = ImportFormat.AUTO
    text: ImportText = Field(
        description="keepalived.conf, or ipvsadm rules (ipvsadm -S -n, ipvsadm -R input)"
    )
    # Files that `include` directives may name; nothing else is read.
    includes: dict[IncludeName, ImportText] = Field(default_factory=dict, max_length=MAX_INCLUDES)
    mode: ImportMode = ImportMode.PREVIEW
    # What to do with an imported service whose VIP:port:protocol an existing service serves.
    on_conflict: ConflictPolicy = ConflictPolicy.SKIP
    # Per imported service (by the name the preview gives it), overriding on_conflict.
    conflicts: dict[Annotated[str, StringConstraints(pattern=NAME_PATTERN)], ConflictPolicy] = Field(
        default_factory=dict, max_length=10_000
    )


class ReportLineRead(BaseModel):
    file: str
    line: int
    text: str
    outcome: Outcome
    detail: str


class ImportAction(StrEnum):
    ADD = "add"
    REPLACE = "replace"
    SKIP = "skip"
    NEEDS_ADMIN = "needs_admin"  # VIP groups and node settings are the admin's


class ImportedObject(BaseModel):
    kind: str  # service, vip_group, node
    name: str
    summary: str
    action: ImportAction
    conflicts_with: list[str]  # existing objects it would replace (or was skipped for)


class ImportResponse(BaseModel):
    format: ImportFormat
    mode: ImportMode
    applied: bool  # True: the candidate now holds the import; GET /changes shows the plan
    objects: list[ImportedObject]
    report: list[ReportLineRead]
    # What the import does to the candidate configuration (preview: would do).
    changes: Plan
    counts: dict[str, Any]
