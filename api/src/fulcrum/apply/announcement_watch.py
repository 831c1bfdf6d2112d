"""Withdraw this node's VIPs when it stops being fit between applies, and announce them again when
it is fit once more.

An apply decides once whether the node announces (fulcrum.apply.fitness); keepalived may die, or
the node go into maintenance, long after. Every `interval` seconds the watch asks the FRR daemon's
fitness and, when the answer differs from what the loaded file does, runs the FRR daemon's own
steps on the live configuration (render, `vtysh -C`, install, reload, read back), holding the
engine's apply lock so that it never interleaves with an apply. Only FRR's file changes; a failed
step puts the previous file back, as an apply would, and the watch tries again after `retry`.

The live configuration is kept in `keep` (root's only: it holds the neighbors' passwords) so that
a restarted applyd, or a rebooted node, watches from its start rather than from its first apply:
FRR starts announcing from its own file whether or not keepalived came up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from pathlib import Path

from pydantic import ValidationError

from fulcrum.apply.daemons.frr import FrrDaemon
from fulcrum.apply.files import write_atomic
from fulcrum.apply.tools import ToolError
from fulcrum.config.snapshot import ConfigSnapshot

log = logging.getLogger(__name__)


class AnnouncementWatch:
    def __init__(
        self,
        frr: FrrDaemon,
        exclusive: Callable[[], AbstractContextManager[None]],
        keep: Path | None = None,
        interval: float = 1.0,
        retry: float = 30.0,
    ) -> None:
        self.frr = frr
        self.keep = keep
        self.exclusive = exclusive
        self.interval = interval
        self.retry = retry
        self._live: ConfigSnapshot | None = None
        self._failed_at: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, snapshot: ConfigSnapshot) -> None:
        """`snapshot` is live now (an apply just verified it): watch its announcements from here."""
        if self.keep is not None:
            try:
                if snapshot.announced_vips():
                    write_atomic(self.keep, snapshot.model_dump_json().encode(), 0o600)
                else:
                    self.keep.unlink(missing_ok=True)
            except OSError as error:  # the apply stands; only a restart would find nothing to watch
                log.error("could not keep the live configuration for the announcement watch: %s", error)
        self._start(snapshot)

    def resume(self, digest: str) -> bool:
        """At start-up: watch the kept configuration if it is the live one (`digest`, the engine's
        record of the last applied revision). Its first round brings FRR in line with the fitness."""
        if self.keep is None:
            return False
        kept = None
        with suppress(OSError, ValidationError):
            kept = ConfigSnapshot.model_validate_json(self.keep.read_bytes())
        if kept is None or kept.digest() != digest:
            return False
        self._start(kept)
        return True

    def _start(self, snapshot: ConfigSnapshot) -> None:
        with self._lock:
            self._live = snapshot
            self._failed_at = None
        if self._thread is None and snapshot.announced_vips():
            self._thread = threading.Thread(target=self._run, name="announcement-watch", daemon=True)
            self._thread.start()

    def view(self) -> tuple[bool | None, str | None]:
        """Whether the loaded file announces the live VIPs, and the node's fitness now (None, None:
        nothing live announces VIPs)."""
        with self._lock:
            live = self._live
        if live is None or not live.announced_vips():
            return None, None
        return self.frr.announced, self.frr.announcing().reason

    def close(self) -> None:
        """Stop watching (the round under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def check_once(self) -> str | None:
        """One round: what was done (None: nothing was due). Raises ToolError when a step failed."""
        with self._lock:
            live, failed_at = self._live, self._failed_at
        if live is None or not live.announced_vips():
            return None
        if failed_at is not None and time.monotonic() - failed_at < self.retry:
            return None
        if self.frr.announcing().fit == self.frr.announced:
            return None
        with self.exclusive():
            with self._lock:
                if self._live is not live:
                    return None  # an apply went live meanwhile, with its own verdict
            try:
                done = self._announce_as_fit(live)
            except ToolError:
                with self._lock:
                    self._failed_at = time.monotonic()
                raise
        return done

    def _announce_as_fit(self, live: ConfigSnapshot) -> str:
        rendered = self.frr.render(live)
        try:
            self.frr.validate()
        except ToolError:
            self.frr.reject()
            raise
        self.frr.install()
        try:
            self.frr.load(live)
            verified = self.frr.verify(live).detail
        except ToolError as error:
            undone = self.frr.undo(loaded=True)
            raise ToolError(f"{error} (undone: {undone})") from error
        return f"{rendered}; {verified}"

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                done = self.check_once()
            except ToolError as error:
                log.error("BGP announcements could not follow this node's fitness: %s", error)
                continue
            except Exception:  # the watch must never die (logged with its traceback); the next round retries
                log.exception("BGP announcement watch round failed")
                continue
            if done is not None:
                log.warning("BGP announcements changed between applies: %s", done)
