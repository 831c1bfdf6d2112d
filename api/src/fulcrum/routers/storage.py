from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import SettingsDep, Viewer
from fulcrum.schemas.storage import Retention, RetentionPolicy, StorageStatus
from fulcrum.services import storage

router = APIRouter(tags=["storage"])


@router.get("/system/storage", summary="The data disk's usage, the database's size, and what is kept")
def get_storage(session: SessionDep, _: Viewer, settings: SettingsDep) -> StorageStatus:
    return StorageStatus(
        disk=storage.usage(
            session,
            settings.disk_warning_percent,
            settings.disk_critical_percent,
            settings.statistics_history_file,
        ),
        retention=Retention(
            events=RetentionPolicy(days=settings.events_retention_days, rows=settings.events_retention_rows),
            audit=RetentionPolicy(days=settings.audit_retention_days, rows=settings.audit_retention_rows),
            interval_seconds=settings.storage_check_seconds,
        ),
    )
