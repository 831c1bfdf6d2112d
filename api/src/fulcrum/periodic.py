"""A background thread that runs one round of work every so often until stopped.

The alert dispatcher and the storage watch share this shape: a round that fails is logged and
the next one runs as usual, so one bad round never stops the housekeeping; `stop` ends the wait
at once and joins the thread. Subclasses implement `run_once` and say how long to wait."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class PeriodicWorker:
    thread_name = "periodic"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> None:
        raise NotImplementedError

    def seconds_between_rounds(self) -> float:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:
                log.exception("%s: a round failed; trying again", self.thread_name)
            self._stop.wait(self.seconds_between_rounds())
