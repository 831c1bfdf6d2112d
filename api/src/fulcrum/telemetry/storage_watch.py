"""The data disk's housekeeping, in the background: measure it and raise its alarm, then prune
the events and the audit log to their retention (fulcrum.services.retention)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from fulcrum.db import begin_write
from fulcrum.periodic import PeriodicWorker
from fulcrum.services import retention, storage
from fulcrum.settings import Settings
from fulcrum.telemetry.hub import Telemetry

log = logging.getLogger(__name__)


class StorageWatch(PeriodicWorker):
    thread_name = "storage-watch"

    def __init__(self, telemetry: Telemetry, settings: Settings) -> None:
        super().__init__()
        self.telemetry = telemetry
        self.settings = settings

    def seconds_between_rounds(self) -> float:
        return self.settings.storage_check_seconds

    def run_once(self, now: datetime | None = None) -> None:
        self.check_disk()
        self.prune(now or datetime.now(UTC))

    def check_disk(self) -> None:
        with self.telemetry.session_scope() as session:
            begin_write(session)  # read the last alarm and write the next one in one transaction
            usage = storage.usage(
                session,
                self.settings.disk_warning_percent,
                self.settings.disk_critical_percent,
                self.settings.statistics_history_file,
            )
            if usage is not None:
                storage.raise_alarm_if_due(session, self.telemetry, usage)

    def prune(self, now: datetime) -> None:
        s = self.settings
        scope = self.telemetry.session_scope
        events = retention.prune_events(
            scope, retention.Limits(s.events_retention_days, s.events_retention_rows),
            s.retention_batch_rows, now, self._stop,
        )  # fmt: skip
        audit = retention.prune_audit(
            scope, retention.Limits(s.audit_retention_days, s.audit_retention_rows),
            s.retention_batch_rows, now, self._stop,
        )  # fmt: skip
        for name, pruned in (("events", events), ("audit entries", audit)):
            if pruned.rows:
                log.info(
                    "retention: pruned %d %s in %d batches (longest write lock %.3f s)",
                    pruned.rows, name, pruned.batches, pruned.longest_hold,
                )  # fmt: skip
