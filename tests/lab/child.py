"""Forked children that live in a lab host's namespace: the lab's servers, its traffic loops and
the appliances' APIs.

Forking from pytest costs milliseconds where starting a Python program in the emulated VM costs
seconds (and `import fulcrum.main` alone about a minute of CPU there); the child still is a real
process of its own, set up as `ip netns exec NAME env K=V... python ...` set up the process it
replaces: a session of its own, stdin from /dev/null, stdout and stderr to its log, the signal
dispositions and logging of a fresh interpreter, the environment given, and inside namespace NAME
with a /sys of that namespace (iproute2's netns_switch: setns, a mount namespace whose mounts do
not propagate back, sysfs mounted again).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from lab.netns import switch_process

# Handlers pytest and its plugins install (pytest-timeout's SIGALRM above all) that a fresh
# interpreter does not have.
_RESET_SIGNALS = (signal.SIGALRM, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def fork_into(host, log_path: Path, body: Callable[[], object], *,  # type: ignore[no-untyped-def]
              env: dict[str, str] | None = None, keep_fd: int | None = None) -> int:
    """Fork a child that logs to `log_path`, joins `host`'s namespace and runs `body`; return its
    pid. The child never returns into pytest: it exits when `body` ends (0; a SystemExit's code;
    1 with the traceback in the log if it raised) or when a signal stops it. `env` replaces its
    environment; `keep_fd` stays open in it, every other descriptor above 2 is closed."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(log)
        return pid
    status = 1
    try:
        _become_fresh_process(log, keep_fd, env)
        switch_process(host)
        body()
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _become_fresh_process(log: int, keep_fd: int | None, env: dict[str, str] | None) -> None:
    os.setsid()
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    # Drop every descriptor inherited from the test (client sockets above all: a copy here
    # would keep a connection open after the test closes it).
    end = os.sysconf("SC_OPEN_MAX")
    if keep_fd is None:
        os.closerange(3, end)
    else:
        os.closerange(3, keep_fd)
        os.closerange(keep_fd + 1, end)
    # pytest replaced sys.stdout and sys.stderr with its capture.
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - as long as the process
    signal.setitimer(signal.ITIMER_REAL, 0)
    for sig in _RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # pytest's log capture handlers sit on the root logger; a fresh interpreter has none.
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)

