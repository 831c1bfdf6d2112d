"""Backups: what an export is asked for, and what a backup holds and a restore did."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, StrictBool

from fulcrum.schemas.revisions import PendingChanges

MIN_PASSPHRASE = 12
MAX_PASSPHRASE = 1024


class BackupRequest(BaseModel):
    passphrase: str = Field(
        min_length=MIN_PASSPHRASE,
        max_length=MAX_PASSPHRASE,
        description="Encrypts the backup; never stored or logged. Needed again to restore it.",
    )
    include_pair_key: StrictBool = Field(
        default=False,
        description="Also the HA pair key: whoever has the backup and passphrase can pose as the peer",
    )


class BackupIncludes(BaseModel):
    configuration: bool = True
    revisions: int = 0
    users: int = 0
    api_tokens: int = 0
    tls: bool = False
    ssh_host_keys: list[str] = []
    pair_key: bool = False


class BackupManifest(BaseModel):
    format: int
    fulcrum_version: str
    schema_revision: str
    node_name: str
    created_at: datetime
    includes: BackupIncludes
    skipped: list[str] = Field(
        default=[], description="What the node has but the backup could not read, and why"
    )


class RestoreResult(BaseModel):
    manifest: BackupManifest
    notes: list[str] = Field(description="What was not restored, and why")
    changes: PendingChanges | None = Field(
        default=None,
        description="On a running appliance: the candidate now, against the running revision; commit it "
        "(POST /revisions) to apply the backup's configuration",
    )
    sessions_ended: bool = Field(default=False, description="The accounts were replaced: log in again")
