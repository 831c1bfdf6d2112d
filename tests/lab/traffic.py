"""Steady, bounded client load: a process in a client namespace making HTTP requests at a fixed rate.

    load = traffic.start(net.client, net.vip, 80, rate=25)   # requests per second, each a new connection
    ...
    load.stop()                                               # or left to the cleanup scope

Like the backend servers it is forked from the calling process (a fresh Python would take
seconds to start in the emulated VM), so it is a real process, killable and restartable. The
rate is an upper bound: one request at a time, paced on a fixed schedule that never bursts to
catch up after a slow or failed request. Every 5 s it logs how many requests each backend
answered and how many failed.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections import Counter

from lab import client
from lab.cmd import Background
from lab.netns import enter

REPORT_SECONDS = 5


class Traffic(Background):
    def __init__(self, host, address: str, port: int = 80, *, rate: float = 25, path: str = "/", timeout: float = 2):
        self.host, self.address, self.port = host, address, port
        self.rate, self.path, self.timeout = rate, path, timeout
        super().__init__(f"HTTP load from {host.role} to {address}:{port} at {rate:g}/s",
                         host.workdir / f"traffic-{port}.log")

    def _launch(self) -> int:
        pid = os.fork()
        if pid == 0:
            self._run_in_child()
        return pid

    def _run_in_child(self) -> None:
        try:
            os.setsid()
            log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            enter(self.host)  # this process is single-threaded: the whole process moves
            self._loop()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)

    def _loop(self) -> None:
        period = 1.0 / self.rate
        counts: Counter = Counter()
        next_at = time.monotonic()
        next_report = next_at + REPORT_SECONDS
        print(f"{self.description}: started", flush=True)
        while True:
            try:
                answer = client.http_get(self.host, self.address, self.port, self.path, timeout=self.timeout)
                counts[answer.backend if 200 <= answer.status < 300 else f"status {answer.status}"] += 1
            except Exception as exc:  # refused, reset, timed out: count it and carry on
                counts[f"error {type(exc).__name__}"] += 1
            now = time.monotonic()
            if now >= next_report:
                print(time.strftime("%H:%M:%S"), dict(sorted(counts.items())), flush=True)
                next_report = now + REPORT_SECONDS
            next_at = max(next_at + period, now)  # never burst to catch up
            time.sleep(max(0.0, next_at - time.monotonic()))


def start(host, address: str, port: int = 80, **options) -> Traffic:
    """Start the load; stopped when the cleanup scope ends."""
    return Traffic(host, address, port, **options).start()
