"""The data disk: how full it is, the alarm before it fills, and the room a commit needs.

The database's own file system is the one measured (the SQLite file's directory: /data on the
appliance), found from the session's engine, so every caller measures the disk it writes to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.errors import DiskFull
from fulcrum.models import Event
from fulcrum.schemas.storage import DiskStage, StorageUsage
from fulcrum.schemas.telemetry import Severity
from fulcrum.services.events import EventRecorder

# What a commit needs free before it touches the data plane, besides its snapshot (written as the
# revision, as the candidate and through the WAL: three times): room for the audit row and events
# written meanwhile. Checked first so that a full disk stops a commit before anything changes, not
# after the data plane took a revision the database cannot record.
COMMIT_RESERVE_BYTES = 1024 * 1024
SNAPSHOT_COPIES = 3


def database_path(session: Session) -> Path | None:
    """The SQLite file behind the session (None: not SQLite on a file)."""
    url = session.get_bind().engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def usage(
    session: Session, warning_percent: float, critical_percent: float, statistics_history: Path | None
) -> StorageUsage | None:
    database = database_path(session)
    if database is None:
        return None
    disk = os.statvfs(database.parent)
    total = disk.f_blocks * disk.f_frsize
    free = disk.f_bavail * disk.f_frsize  # what this unprivileged process may still use
    used = total - disk.f_bfree * disk.f_frsize
    # Like df: the share of what unprivileged writers can use (root's reserve left out).
    usable = used + free
    percent = round(100.0 * used / usable, 1) if usable else 100.0
    stage = (
        DiskStage.CRITICAL
        if percent >= critical_percent
        else DiskStage.WARNING
        if percent >= warning_percent
        else DiskStage.OK
    )
    return StorageUsage(
        path=str(database.parent),
        total_bytes=total,
        used_bytes=used,
        free_bytes=free,
        used_percent=percent,
        stage=stage,
        warning_percent=warning_percent,
        critical_percent=critical_percent,
        database_bytes=_size(database),
        wal_bytes=_size(database.with_name(database.name + "-wal")),
        statistics_history_bytes=sum(_size(Path(f"{statistics_history}{suffix}")) for suffix in ("", "-wal")),
    )


def require_room_for_commit(session: Session, snapshot_bytes: int) -> None:
    """Raise DiskFull (507) unless the data disk has room to record a commit of this size."""
    database = database_path(session)
    if database is None:
        return
    disk = os.statvfs(database.parent)
    free = disk.f_bavail * disk.f_frsize
    needed = COMMIT_RESERVE_BYTES + SNAPSHOT_COPIES * snapshot_bytes
    if free < needed:
        raise DiskFull(
            f"{free // 1024} KiB free on {database.parent}, a commit needs {needed // 1024} KiB; nothing "
            "was applied and the running configuration is unchanged. Free space (or lower the retention "
            "of events and audit) and commit again",
            free_bytes=free,
            needed_bytes=needed,
        )


_RANK = {DiskStage.OK: 0, DiskStage.WARNING: 1, DiskStage.CRITICAL: 2}


@dataclass(frozen=True)
class _Alarm:
    severity: Severity
    text: str


def raise_alarm_if_due(session: Session, events: EventRecorder, current: StorageUsage) -> bool:
    """Record a `disk.filling` event when the disk enters a higher stage than the last one raised,
    and one (info) when it has room again; each stage once, across restarts (the last event of the
    kind says which stage was raised). True when an event was recorded."""
    last = session.scalars(
        select(Event).where(Event.kind == "disk.filling").order_by(Event.id.desc()).limit(1)
    ).first()
    raised = DiskStage(last.detail.get("stage", DiskStage.OK)) if last is not None else DiskStage.OK
    rising = _RANK[current.stage] > _RANK[raised]
    cleared = current.stage == DiskStage.OK and raised != DiskStage.OK
    if not (rising or cleared):
        return False
    alarm = _alarm(current)
    events.record(
        "disk.filling",
        alarm.severity,
        alarm.text,
        detail={
            "stage": current.stage.value,
            "used_percent": current.used_percent,
            "free_bytes": current.free_bytes,
            "path": current.path,
        },
        session=session,
    )
    return True


def _alarm(current: StorageUsage) -> _Alarm:
    where = f"the data disk ({current.path})"
    free = f"{current.free_bytes / 1024**2:.1f} MiB free"
    if current.stage == DiskStage.OK:
        return _Alarm(Severity.INFO, f"{where} has room again: {current.used_percent}% used, {free}")
    severity = Severity.CRITICAL if current.stage == DiskStage.CRITICAL else Severity.WARNING
    return _Alarm(
        severity,
        f"{where} is {current.used_percent}% full ({free}): commits stop when it is full; "
        "lower the retention of events and audit or free space",
    )
