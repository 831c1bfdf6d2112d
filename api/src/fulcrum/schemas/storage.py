"""The data disk's usage and what is kept on it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class DiskStage(StrEnum):
    OK = "ok"
    WARNING = "warning"  # at or above the warning percentage
    CRITICAL = "critical"  # at or above the critical percentage


class StorageUsage(BaseModel):
    path: str  # the database's directory: its file system is the one measured
    total_bytes: int
    used_bytes: int
    free_bytes: int  # what the API's (unprivileged) process can still write
    used_percent: float  # like df: of what unprivileged writers can use
    stage: DiskStage
    warning_percent: float
    critical_percent: float
    database_bytes: int
    wal_bytes: int
    statistics_history_bytes: int  # the statistics' day of minutes (its file and WAL)


class RetentionPolicy(BaseModel):
    days: int
    rows: int


class Retention(BaseModel):
    """Events and the audit log are pruned by age and by count; revisions are never pruned."""

    events: RetentionPolicy
    audit: RetentionPolicy
    interval_seconds: float  # 0: pruning is off


class StorageStatus(BaseModel):
    disk: StorageUsage | None  # None: the database is not a SQLite file
    retention: Retention
