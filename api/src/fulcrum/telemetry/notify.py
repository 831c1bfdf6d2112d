"""keepalived's notify FIFOs: one line per event, read without blocking shutdown.

Lines (keepalived.conf(5), doc/samples/sample_notify_fifo.sh):
    INSTANCE "VG_front" MASTER 100        VRRP instance state and priority
    GROUP "fulcrum" BACKUP 100            VRRP sync group state
    VS [192.0.2.10]:tcp:80 UP             virtual service quorum up/down
    RS [198.51.100.1]:tcp:80 [192.0.2.10]:tcp:80 DOWN     real server check result
"""

from __future__ import annotations

import errno
import logging
import os
import re
import select
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_VRRP = re.compile(r'^(INSTANCE|GROUP) "([^"]+)" ([A-Z_]+)(?: (\d+))?$')
_VS = re.compile(r"^VS (\S+) (UP|DOWN)$")
_RS = re.compile(r"^RS (\S+) (\S+) (UP|DOWN)$")
# "[198.51.100.1]:tcp:80", "[2001:db8::1]:tcp:80", "FWM 1" styles; we keep address and port.
_ENDPOINT = re.compile(r"^\[([0-9A-Fa-f:.]+)\]:(?:[a-z]+:)?(\d+)$")


@dataclass(frozen=True)
class VrrpNotice:
    scope: str  # INSTANCE or GROUP
    name: str
    state: str  # MASTER, BACKUP, FAULT, STOP, DELETED, ...
    priority: int | None


@dataclass(frozen=True)
class CheckerNotice:
    real_server: str | None  # "198.51.100.1:80"; None for a virtual-service (quorum) notice
    virtual_server: str  # as keepalived wrote it
    up: bool


Notice = VrrpNotice | CheckerNotice


def _endpoint(text: str) -> str:
    match = _ENDPOINT.match(text)
    if not match:
        return text
    address, port = match.groups()
    host = f"[{address}]" if ":" in address else address
    return host if port == "0" else f"{host}:{port}"


_FWMARK = re.compile(r"^FWM (\d+)")


def virtual_server_parts(text: str) -> tuple[str | None, int | None, int | None]:
    """(address, port, fwmark) of a virtual server as keepalived writes it."""
    if match := _FWMARK.match(text):
        return None, None, int(match.group(1))
    if match := _ENDPOINT.match(text):
        return match.group(1), int(match.group(2)), None
    return None, None, None


def parse(line: str) -> Notice | None:
    line = line.strip()
    if match := _VRRP.match(line):
        scope, name, state, priority = match.groups()
        return VrrpNotice(scope, name, state, int(priority) if priority else None)
    if match := _RS.match(line):
        rs, vs, state = match.groups()
        return CheckerNotice(_endpoint(rs), vs, state == "UP")
    if match := _VS.match(line):
        vs, state = match.groups()
        return CheckerNotice(None, vs, state == "UP")
    return None


class FifoReader(threading.Thread):
    """Reads one FIFO line by line, reopening it whenever keepalived closes or recreates it.

    keepalived (2.2.7, lib/notify.c) closes its FIFOs on every reload and opens them again; one
    it created itself it also unlinks and creates anew, so a reader still holding the old one
    would wait forever: the path is checked against the open FIFO while idle. A line that cannot
    be handled (the database busy beyond its timeout, say) is retried, then logged and skipped:
    the reader itself never stops before `stop()`.
    """

    def __init__(
        self, path: Path, on_line: Callable[[str], None], poll_seconds: float = 0.5, attempts: int = 3
    ) -> None:
        super().__init__(name=f"fifo-{path.name}", daemon=True)
        self.path = path
        self.on_line = on_line
        self.poll_seconds = poll_seconds
        self.attempts = attempts
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._ensure_fifo()
                self._read_until_closed()
            except OSError as exc:
                log.warning("notify FIFO %s: %s", self.path, exc)
                self._stopping.wait(self.poll_seconds)

    def _ensure_fifo(self) -> None:
        try:
            if stat.S_ISFIFO(os.stat(self.path).st_mode):
                return
            raise OSError(errno.EEXIST, f"{self.path} exists and is not a FIFO")
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(self.path, 0o660)

    def _replaced(self, fd: int) -> bool:
        """Whether the path no longer names the FIFO open on `fd` (unlinked, or created anew)."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return True
        mine = os.fstat(fd)
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def _read_until_closed(self) -> None:
        # Opened read-write: the reader is then also a writer, so the FIFO never reaches "no
        # writers" while it is open. Read-only, it saw EOF whenever keepalived closed its end, and
        # in the moment between closing and reopening the pipe had no reader: a writer that opened
        # then got EPIPE, and lines written and closed then were dropped with the pipe's buffer.
        fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)
        buffer = b""
        try:
            while not self._stopping.is_set():
                ready, _, _ = select.select([fd], [], [], self.poll_seconds)
                if not ready:
                    if self._replaced(fd):
                        return  # keepalived unlinked it and made a new one: move to that
                    continue
                chunk = os.read(fd, 65536)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._handle(line.decode("utf-8", "replace"))
        finally:
            os.close(fd)

    def _handle(self, line: str) -> None:
        for attempt in range(1, self.attempts + 1):
            try:
                self.on_line(line)
                return
            except Exception:
                if attempt == self.attempts or self._stopping.is_set():
                    log.exception(
                        "notify FIFO %s: line %r not handled after %d attempts", self.path, line, attempt
                    )
                    return
                self._stopping.wait(self.poll_seconds)
