"""The benchmark's backends: HAProxy answering every HTTP request itself (`http-request return`).

Why not lab.servers' HTTP server: it is a ThreadingHTTPServer with socketserver's listen backlog of
5, so under load the kernel drops SYNs and clients wait out 1 s retransmissions, and a thread per
connection is slow in the emulated VM. A small asyncio server was no better here (its per-connection
cost put the median at ~300 ms at 20 conn/s, where this answers in ~10 ms at 120 conn/s). HAProxy
is already on the machine for part 3, is C and event-driven, and can model a slower backend:

    maxconn W                    at most W requests in service; the rest wait in the listen backlog
                                 (4,096, set on the bind: it would default to maxconn)
    tcp-request inspect-delay D  each accepted connection is held D before it is answered
    ... accept if WAIT_END

so a slow backend's capacity is W / D requests per second on new connections.

Every response is "HTTP/1.1 200", body = the host's role ("b1"), header X-Backend.
"""

from __future__ import annotations

import signal

from lab.cmd import Exec
from lab.netns import listening
from lab.wait import wait_until

CONFIG = """\
global
    maxconn 20000
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend web
    bind :{port} backlog 4096
{slow}    http-request return status 200 content-type text/plain string "{name}" hdr X-Backend {name}
"""
SLOW = """\
    maxconn {workers}
    tcp-request inspect-delay {delay_ms}ms
    tcp-request content accept if WAIT_END
"""


class Responder(Exec):
    def __init__(self, host, port: int = 80, *, delay: float = 0.0, workers: int = 1):
        self.host, self.port, self.name, self.delay, self.workers = host, port, host.role, delay, workers
        self.conf = host.workdir / f"responder-{port}.cfg"
        slow = SLOW.format(workers=workers, delay_ms=max(1, round(delay * 1000))) if delay > 0 else ""
        self.conf.write_text(CONFIG.format(port=port, name=self.name, slow=slow))
        super().__init__(["haproxy", "-db", "-f", self.conf], host, log_path=host.workdir / f"responder-{port}.log")
        self.description = f"HTTP responder (haproxy) in {host.role} on port {port}" + (
            f", {workers} at a time, {delay * 1000:g} ms each" if delay > 0 else "")

    def start(self) -> Responder:
        super().start()

        def ready() -> bool:
            self.check_running()
            return listening(self.host, self.port)

        wait_until(ready, 30, what=f"{self.description} to listen")
        return self

    def kill(self) -> None:
        """Die like a crashing server: SIGKILL, the listening socket goes with the process."""
        self.signal(signal.SIGKILL)


def start(host, port: int = 80, **behaviour) -> Responder:
    """A listening responder, stopped when the cleanup scope ends."""
    return Responder(host, port, **behaviour).start()
