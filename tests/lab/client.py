"""Client traffic from a lab namespace: HTTP requests, long-lived TCP connections, UDP requests.

Sockets are created inside the client's namespace (lab.netns.socket) and used from the test
itself, one new connection per request, optionally from a chosen source address.
"""

from __future__ import annotations

import http.client
import selectors
import socket
import time
from collections import Counter
from dataclasses import dataclass, field

from lab import netns
from lab.defer import defer


@dataclass
class Tally:
    """What a batch of requests got: answers (2xx) per backend name, and everything else."""

    counts: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Response:
    status: int
    backend: str  # the body, i.e. the answering backend's name
    headers: dict[str, str]


def _family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def connect_tcp(ns, address: str, port: int, *, source: str | None = None, timeout: float = 5) -> socket.socket:
    """A TCP connection from namespace `ns` (from address `source` if given)."""
    sock = netns.socket(ns, _family(address), socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        if source:
            sock.bind((source, 0))
        sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


class _NamespacedConnection(http.client.HTTPConnection):
    def __init__(self, ns, address: str, port: int, source: str | None, timeout: float):
        super().__init__(address, port, timeout=timeout)
        self._ns = ns
        self._source = source

    def connect(self) -> None:
        self.sock = connect_tcp(self._ns, self.host, self.port, source=self._source, timeout=self.timeout)


def http_get(ns, address: str, port: int = 80, path: str = "/", *, source: str | None = None, timeout: float = 5) -> Response:
    """One GET on a new connection, which the client closes (see lab.servers on why)."""
    conn = _NamespacedConnection(ns, address, port, source, timeout)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        body = reply.read().decode().strip()
        return Response(reply.status, body, dict(reply.getheaders()))
    finally:
        conn.close()


def http_requests(
    ns, address: str, port: int = 80, count: int = 10, *, path: str = "/", source: str | None = None, timeout: float = 5
) -> Tally:
    """`count` sequential GETs, each on a new connection; never raises for a failed request."""
    tally = Tally()
    for i in range(count):
        try:
            reply = http_get(ns, address, port, path, source=source, timeout=timeout)
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, garbled
            tally.failures.append(f"request {i}: {type(exc).__name__}: {exc}")
            continue
        if 200 <= reply.status < 300:
            tally.counts[reply.backend] += 1
        else:
            tally.failures.append(f"request {i}: {reply.backend or '?'} answered {reply.status}")
    return tally


def hold_tcp(ns, address: str, port: int, *, source: str | None = None, timeout: float = 5) -> socket.socket:
    """An open TCP connection (an active connection for IPVS), closed when the cleanup scope ends."""
    sock = connect_tcp(ns, address, port, source=source, timeout=timeout)
    defer(sock.close)
    return sock


def exchange(sock: socket.socket, payload: bytes) -> bytes:
    """Send payload on an open connection and return what comes back (as much as was sent, less
    if the peer closes first)."""
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload) and (chunk := sock.recv(65536)):
        received += chunk
    return received


def tcp_echo(ns, address: str, port: int, payload: bytes = b"ping", *, source: str | None = None, timeout: float = 5) -> bytes:
    """Send payload on a new connection and return what comes back (as much as was sent)."""
    with connect_tcp(ns, address, port, source=source, timeout=timeout) as sock:
        return exchange(sock, payload)


def udp_request(ns, address: str, port: int, payload: bytes = b"ping", *, source: str | None = None, timeout: float = 5) -> str:
    """One datagram from a new socket (so a new source port: IPVS schedules it afresh); the answer."""
    with netns.socket(ns, _family(address), socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.bind((source or "", 0))
        sock.sendto(payload, (address, port))
        data, _ = sock.recvfrom(65536)
        return data.decode()


ANSWERED = "answered"


def send_on_each(socks: list[socket.socket], payload: bytes = b"ping") -> list[str]:
    """Send `payload` on every held connection at once, without waiting for anything: for each,
    ANSWERED so far, or "send failed" (`answers` takes these as its `sent`)."""
    outcome = [ANSWERED] * len(socks)
    for index, sock in enumerate(socks):
        try:
            sock.sendall(payload)
        except OSError:
            outcome[index] = "send failed"
    return outcome


def answers(
    socks: list[socket.socket], payload: bytes = b"ping", *, timeout: float = 10, sent: list[str] | None = None
) -> list[str]:
    """Send `payload` on every held connection at once (unless `sent`: `send_on_each` did, earlier),
    then wait (until `timeout` in all) for each echo: for each connection, ANSWERED, or why not:
    "reset" (by a host that never saw it), "closed", "no answer" (in time), "send failed" or
    "failed: <the error>"."""
    outcome = list(sent) if sent is not None else send_on_each(socks, payload)
    waiting: dict[int, bytes] = {}
    selector = selectors.DefaultSelector()
    for index, sock in enumerate(socks):
        if outcome[index] != ANSWERED:
            continue
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, index)
        waiting[index] = b""
    deadline = time.monotonic() + timeout
    while waiting and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            index = key.data
            try:
                chunk = socks[index].recv(65536)
            except ConnectionResetError:
                outcome[index], chunk = "reset", b""
            except OSError as error:
                outcome[index], chunk = f"failed: {error.strerror}", b""
            if not chunk:
                if outcome[index] == ANSWERED:
                    outcome[index] = "closed"
            else:
                waiting[index] += chunk
                if len(waiting[index]) < len(payload):
                    continue
            selector.unregister(socks[index])
            del waiting[index]
    for index in waiting:
        outcome[index] = "no answer"
    selector.close()
    for sock in socks:
        sock.setblocking(True)
    return outcome


def still_answer(socks: list[socket.socket], payload: bytes = b"ping", *, timeout: float = 10) -> list[bool]:
    """Which held connections still reach a backend that knows them (`answers`, as yes or no)."""
    return [outcome == ANSWERED for outcome in answers(socks, payload, timeout=timeout)]
