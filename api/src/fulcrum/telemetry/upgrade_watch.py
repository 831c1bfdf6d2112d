"""The end of a firmware upgrade as an event (`upgrade.result`), so that alert rules reach the admin:
the outcome is decided at boot by fulcrum-boot-check, outside the API, which only finds it in the
upgrade record (fulcrum.services.firmware_upgrade) and raises each outcome once."""

from __future__ import annotations

from fulcrum.db import begin_write
from fulcrum.periodic import PeriodicWorker
from fulcrum.services import firmware_upgrade
from fulcrum.settings import Settings
from fulcrum.telemetry.hub import Telemetry


class UpgradeWatch(PeriodicWorker):
    thread_name = "upgrade-watch"

    def __init__(self, telemetry: Telemetry, settings: Settings) -> None:
        super().__init__()
        self.telemetry = telemetry
        self.settings = settings
        self._settled: tuple[str, str, str] | None = None  # the outcome known to be announced

    def seconds_between_rounds(self) -> float:
        return self.settings.upgrade_watch_seconds

    def run_once(self) -> None:
        # Almost every round finds no new outcome: a file read then, not a write transaction that
        # would wait on (and hold up) a commit for nothing.
        outcome = firmware_upgrade.outcome_key(self.settings)
        if outcome is None or outcome == self._settled:
            return
        with self.telemetry.session_scope() as session:
            begin_write(session)  # read the last announcement and write the next in one transaction
            firmware_upgrade.announce_outcome(session, self.telemetry, self.settings)
        self._settled = outcome  # announced now, or found announced before
