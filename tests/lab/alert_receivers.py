"""Real local servers the alert tests deliver to: an SMTP sink (aiosmtpd), an HTTP receiver
that checks the HMAC signature, and syslog receivers on UDP and TCP sockets. Given a server-side
ssl.SSLContext, each speaks TLS: the SMTP sink with STARTTLS (required) or implicit TLS, the
webhook receiver HTTPS, the TCP syslog receiver RFC 5425 syslog over TLS.

Used by the host tests (tests/api) and the VM lab (tests/kernel), where they are started from a
thread inside the LB's namespace (lab.netns.run_in): the threads they start stay in it."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from lab.serving import serving


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class SmtpSink:
    port: int
    messages: list[Message] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd's hook
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.messages.append(message_from_bytes(envelope.original_content))
        return "250 OK queued as test-1"


@contextmanager
def smtp_sink(
    username: str | None = None,
    password: str | None = None,
    host: str = "127.0.0.1",
    tls: ssl.SSLContext | None = None,
    implicit_tls: bool = False,
) -> Iterator[SmtpSink]:
    """With `tls`: STARTTLS, required before anything else (and before AUTH), or with
    `implicit_tls` TLS from the first byte (port-465 style)."""
    sink = SmtpSink(free_port(host))

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login.decode(), data.password.decode()) == (
            username,
            password,
        )
        if ok:
            sink.logins.append((data.login.decode(), data.password.decode()))
        return AuthResult(success=ok, handled=False)

    starttls = tls is not None and not implicit_tls
    # aiosmtpd counts only STARTTLS as TLS for AUTH: without it (plain or implicit TLS) the check is off.
    options: dict[str, Any] = {"auth_require_tls": starttls}
    if username:
        options.update(authenticator=authenticate, auth_required=starttls)
    if starttls:
        options.update(tls_context=tls, require_starttls=True)
    controller = Controller(
        sink, hostname=host, port=sink.port, ssl_context=tls if implicit_tls else None, **options
    )
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


@dataclass
class WebhookReceiver:
    url: str
    secret: str
    status: int = 200
    bodies: list[dict[str, Any]] = field(default_factory=list)
    bad_signatures: int = 0
    # Cleared, the receiver holds each request until it is set again: a slow server.
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)


@contextmanager
def webhook_receiver(
    secret: str, status: int = 200, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
) -> Iterator[WebhookReceiver]:
    port = free_port(host)
    receiver = WebhookReceiver(f"{'https' if tls else 'http'}://{host}:{port}/hook", secret, status)
    receiver.release.set()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            receiver.arrived.set()
            receiver.release.wait(30)
            expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            if hmac.compare_digest(self.headers.get("X-Fulcrum-Signature", ""), expected):
                if 200 <= receiver.status < 300:  # kept only when accepted: what was delivered
                    receiver.bodies.append(json.loads(body))
                self.send_response(receiver.status)
            else:
                receiver.bad_signatures += 1
                self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    if tls:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    with serving(server):
        yield receiver


@dataclass
class SyslogReceiver:
    port: int
    lines: list[bytes] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    resets: int = 0  # TCP: connections that ended in a reset, not in the sender's close


@contextmanager
def syslog_receiver(
    transport: str, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None, after_handshake: bytes = b""
) -> Iterator[SyslogReceiver]:
    """UDP: one datagram per record. TCP: octet-counted records (RFC 6587), parsed strictly; with
    `tls`, over TLS (RFC 5425, the same framing). A refused handshake is dropped. `after_handshake`
    is sent to every client once connected, as a TLS 1.3 server sends its session tickets: what a
    sender must read before it closes, or its kernel answers with a reset."""
    kind = socket.SOCK_DGRAM if transport == "udp" else socket.SOCK_STREAM
    sock = socket.socket(socket.AF_INET, kind)
    sock.bind((host, 0))
    receiver = SyslogReceiver(sock.getsockname()[1])
    stop = threading.Event()

    def keep(record: bytes) -> None:
        receiver.lines.append(record)
        receiver.received.set()

    def serve_udp() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                keep(sock.recv(65535))
            except TimeoutError:
                continue

    def serve_tcp() -> None:
        sock.listen()
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            try:
                stream = tls.wrap_socket(conn, server_side=True) if tls else conn
            except OSError:  # the client refused the certificate: nothing was sent
                conn.close()
                continue
            with stream:
                data = b""
                try:
                    if after_handshake:
                        stream.sendall(after_handshake)
                    while chunk := stream.recv(65535):
                        data += chunk
                except ConnectionResetError:
                    receiver.resets += 1
            while data:
                length, _, rest = data.partition(b" ")
                keep(rest[: int(length)])
                data = rest[int(length) :]

    thread = threading.Thread(target=serve_udp if transport == "udp" else serve_tcp, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        stop.set()
        thread.join()
        sock.close()
