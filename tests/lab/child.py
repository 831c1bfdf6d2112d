"""Forked children that live in a lab host's namespace: the lab's servers and traffic loops.

Forking from pytest costs milliseconds where starting a Python program in the emulated VM costs
seconds; the child still is a real process of its own in the host's namespace.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from lab.netns import enter


def fork_into(host, log_path: Path, body: Callable[[], object]) -> int:  # type: ignore[no-untyped-def]
    """Fork a child that logs to `log_path`, joins `host`'s namespace and runs `body`; return its
    pid. The child never returns into pytest: it exits when `body` ends or a signal stops it."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        # Drop every descriptor inherited from the test (client sockets above all: a copy here
        # would keep a connection open after the test closes it).
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        enter(host)  # the child is single-threaded: the whole process moves
        body()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(1)
