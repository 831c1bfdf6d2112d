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

import time
from collections import Counter

from lab import client
from lab.cmd import Background
from lab.child import fork_into

REPORT_SECONDS = 5


class Traffic(Background):
    def __init__(self, host, address: str, port: int = 80, *, rate: float = 25, path: str = "/", timeout: float = 2):
        self.host, self.address, self.port = host, address, port
        self.rate, self.path, self.timeout = rate, path, timeout
        super().__init__(f"HTTP load from {host.role} to {address}:{port} at {rate:g}/s",
                         host.workdir / f"traffic-{port}.log")

    def _launch(self) -> int:
        return fork_into(self.host, self.log_path, self._loop)

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
