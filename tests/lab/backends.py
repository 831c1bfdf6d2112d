"""Handles on the lab's backend servers (lab.servers): processes in a namespace, ready when listening.

A server is a real process, killed like a crashing backend, but it is forked from the test
process rather than started as `python -m lab.servers`: a fresh Python needs several seconds
(http.server alone about 9 s) to start in the emulated VM, a fork a few milliseconds.

Each handle can be stopped and started again (a health check sees the backend go and come
back), and is stopped when the cleanup scope ends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lab import servers
from lab.cmd import Background
from lab.child import fork_into
from lab.netns import listening
from lab.wait import wait_until

READY_TIMEOUT = 30


class Server(Background):
    kind = ""
    proto = "tcp"

    def __init__(self, host, port: int, **options):
        self.host = host
        self.port = port
        self.options = options
        super().__init__(f"{self.kind} server in {host.role} on port {port}", host.workdir / f"{self.kind}-{port}.log")

    def _launch(self) -> int:
        return fork_into(self.host, self.log_path, self._serve)

    def _serve(self) -> None:
        server = servers.make_server(self.kind, port=self.port, **self.options)
        print(f"{self.description}: listening", flush=True)
        server.serve_forever()  # serving only ends by a signal

    def start(self) -> Server:
        super().start()

        def ready() -> bool:
            self.check_running()  # fail at once, with its log, if it died
            return listening(self.host, self.port, self.proto)

        wait_until(ready, READY_TIMEOUT, what=f"{self.description} to listen")
        return self


class HttpServer(Server):
    """Answers with `name`; set() changes its behaviour while it runs."""

    kind = "http"

    def __init__(self, host, port: int = 80, *, name: str, status: int = 200, delay: float = 0, hold: bool = False, bind: str = "0.0.0.0"):
        self.name = name
        self.control = host.workdir / f"http-{port}.json"
        super().__init__(host, port, name=name, control=self.control, bind=bind)
        self.set(status=status, delay=delay, hold=hold)

    def set(self, *, status: int = 200, delay: float = 0, hold: bool = False, paths: list[str] | None = None) -> None:
        """Answer with `status` after `delay` seconds; with hold, leave requests unanswered until
        set again; with paths, serve only those paths and answer 404 elsewhere."""
        _write_atomically(self.control, json.dumps({"status": status, "delay": delay, "hold": hold, "paths": paths}))


class TcpEchoServer(Server):
    kind = "tcp-echo"


class UdpEchoServer(Server):
    """Answers each datagram with `name`."""

    kind = "udp-echo"
    proto = "udp"

    def __init__(self, host, port: int = 53, *, name: str):
        self.name = name
        super().__init__(host, port, name=name)


class DnsServer(Server):
    """Answers DNS queries (an A record for any name): what keepalived's DNS_CHECK expects."""

    kind = "dns"
    proto = "udp"


def _write_atomically(path: Path, text: str) -> None:
    # The server may read at any moment: never let it see a half-written file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class NtpServer(Server):
    """An SNTP server with this host's clock, for the appliances' timesyncd (lab.servers)."""

    kind = "ntp"
    proto = "udp"
