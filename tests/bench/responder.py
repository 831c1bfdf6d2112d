"""The benchmark's backends: HAProxy answering every HTTP request itself (`http-request return`).

Why not lab.servers' HTTP server: it is a ThreadingHTTPServer with socketserver's listen backlog of
5, so under load the kernel drops SYNs and clients wait out 1 s retransmissions, and a thread per
connection is slow in the emulated VM. A small asyncio server was no better here (its per-connection
cost put the median at ~300 ms at 20 conn/s, where this answers in ~10 ms at 120 conn/s). HAProxy
is already on the machine for part 3, is C and event-driven, and can model a slower backend:

    maxconn W                    at most W requests in service; the rest wait in the listen backlog
                                 (4,096, set on the bind: it would default to maxconn)
    http-request lua.bench_delay each request is held D ms (core.msleep: the stream waits, the
                                 process does not) before it is answered

so a slow backend's capacity is W / D requests per second. (`tcp-request inspect-delay` with
`accept if WAIT_END`, the manual's way to delay a connection, does not delay an HTTP-mode
frontend: measured on HAProxy 2.6, 11,000 req/s where 6.5 were expected.)

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
{lua}defaults
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
    http-request lua.bench_delay {delay_ms}
"""
DELAY_LUA = """\
core.register_action("bench_delay", {"http-req"}, function(txn, ms)
  core.msleep(tonumber(ms))
end, 1)
"""


class Responder(Exec):
    def __init__(self, host, port: int = 80, *, delay: float = 0.0, workers: int = 1):
        self.host, self.port, self.name, self.delay, self.workers = host, port, host.role, delay, workers
        self.conf = host.workdir / f"responder-{port}.cfg"
        slow = SLOW.format(workers=workers, delay_ms=max(1, round(delay * 1000))) if delay > 0 else ""
        lua = ""
        if delay > 0:
            script = host.workdir / "bench-delay.lua"
            script.write_text(DELAY_LUA)
            lua = f"    lua-load {script}\n"
        self.conf.write_text(CONFIG.format(port=port, name=self.name, slow=slow, lua=lua))
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
