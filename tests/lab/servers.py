"""Backend servers, run inside a lab namespace: forked by lab.backends, or by hand with
python -m lab.servers {http,tcp-echo,udp-echo} ... (PYTHONPATH=tests); dns and ntp are forked only.

http      answers every GET/HEAD with its --name as the body (and an X-Backend header), so
          clients can count which backend served them. Its behaviour (status, delay before
          answering, hold: do not answer until released) comes from the JSON --control file,
          re-read on every request, so a test can change it while the server runs.
tcp-echo  echoes bytes until the client closes.
udp-echo  answers every datagram with its --name.
dns       answers any query with one A record (keepalived's DNS_CHECK).
ntp       a stratum-2 SNTP server (RFC 4330) with this host's clock: what timesyncd needs to sync.
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# paths: None serves every path; a list serves only those and answers 404 elsewhere.
DEFAULT_BEHAVIOUR = {"status": 200, "delay": 0.0, "hold": False, "paths": None}


def _family(bind: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in bind else socket.AF_INET


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, bind: str, port: int, name: str, control: Path | None):
        self.address_family = _family(bind)
        self.name = name
        self.control = control
        super().__init__((bind, port), _HttpHandler)

    def behaviour(self) -> dict:
        if self.control is None or not self.control.exists():
            return DEFAULT_BEHAVIOUR
        return {**DEFAULT_BEHAVIOUR, **json.loads(self.control.read_text())}


class _HttpHandler(BaseHTTPRequestHandler):
    # Keep-alive: the client closes first, so its port stays in TIME_WAIT and is not reused
    # for the next connection, which IPVS would then map to the same (old) connection.
    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, with_body: bool) -> None:
        behaviour = self.server.behaviour()
        time.sleep(float(behaviour["delay"]))
        while behaviour["hold"]:
            time.sleep(0.05)
            behaviour = self.server.behaviour()
        body = f"{self.server.name}\n".encode()
        served = behaviour["paths"] is None or self.path.split("?")[0] in behaviour["paths"]
        self.send_response(int(behaviour["status"]) if served else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Backend", self.server.name)
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        sys.stderr.write(f"{self.client_address[0]}:{self.client_address[1]} {format % args}\n")


class _TcpEchoServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # restartable on the same port despite TIME_WAIT connections
    daemon_threads = True

    def __init__(self, bind: str, port: int):
        self.address_family = _family(bind)
        super().__init__((bind, port), _TcpEchoHandler)


class _TcpEchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class _UdpNameServer(socketserver.UDPServer):
    def __init__(self, bind: str, port: int, name: str):
        self.address_family = _family(bind)
        self.name = name
        super().__init__((bind, port), _UdpNameHandler)


class _UdpNameHandler(socketserver.BaseRequestHandler):
    server: _UdpNameServer

    def handle(self) -> None:
        _, sock = self.request
        sock.sendto(self.server.name.encode(), self.client_address)


class _DnsServer(socketserver.UDPServer):
    def __init__(self, bind: str, port: int):
        self.address_family = _family(bind)
        super().__init__((bind, port), _DnsHandler)


class _DnsHandler(socketserver.BaseRequestHandler):
    """A minimal authoritative answer to any one-question query: NOERROR with one A record
    (192.0.2.53) and, for other types, NOERROR with no answers. Enough for keepalived's
    DNS_CHECK, which sends a query and checks the reply's id and response code."""

    def handle(self) -> None:
        query, sock = self.request
        if len(query) < 17:
            return
        end = 12
        while query[end] != 0:  # the question's name: length-prefixed labels, then a zero
            end += query[end] + 1
        question = query[12 : end + 5]
        qtype = struct.unpack("!H", query[end + 1 : end + 3])[0]
        answers = b""
        if qtype == 1:
            answers = struct.pack("!HHHIH4s", 0xC00C, 1, 1, 60, 4, bytes([192, 0, 2, 53]))
        header = struct.pack("!HHHHHH", struct.unpack("!H", query[:2])[0], 0x8580, 1, 1 if answers else 0, 0, 0)
        sock.sendto(header + question + answers, self.client_address)


class _NtpServer(socketserver.UDPServer):
    def __init__(self, bind: str, port: int):
        self.address_family = _family(bind)
        super().__init__((bind, port), _NtpHandler)


NTP_EPOCH_OFFSET = 2_208_988_800  # seconds from 1900 (NTP's era 0) to 1970


def _ntp_time(unix: float) -> int:
    """A 64-bit NTP timestamp: seconds since 1900 and a 32-bit fraction."""
    return int((unix + NTP_EPOCH_OFFSET) * 2**32)


class _NtpHandler(socketserver.BaseRequestHandler):
    """Answers a client request (mode 3) as a synchronised stratum-2 server (mode 4): leap
    indicator 0, the client's transmit time as the originate time (its check that the answer is
    to its own request), and receive and transmit times from this host's clock."""

    def handle(self) -> None:
        received = time.time()
        request, sock = self.request
        if len(request) < 48 or request[0] & 0x07 != 3:
            return
        version = (request[0] >> 3) & 0x07
        client_transmit = request[40:48]
        reply = struct.pack(
            "!BBbbII4sQ8sQQ",
            (version << 3) | 4, 2, 4, -20,  # no leap second, version, server; stratum 2, poll, ~1 us
            0, 1 << 10,  # root delay 0, root dispersion ~16 ms (16.16 fixed point)
            b"LAB\0", _ntp_time(received), client_transmit, _ntp_time(received), _ntp_time(time.time()),
        )
        sock.sendto(reply, self.client_address)


def make_server(kind: str, *, port: int, bind: str = "0.0.0.0", name: str = "", control: Path | None = None):
    """A bound, listening server of `kind` (http, tcp-echo, udp-echo, dns, ntp); call serve_forever()."""
    if kind == "http":
        return _HttpServer(bind, port, name, control)
    if kind == "tcp-echo":
        return _TcpEchoServer(bind, port)
    if kind == "udp-echo":
        return _UdpNameServer(bind, port, name)
    if kind == "dns":
        return _DnsServer(bind, port)
    if kind == "ntp":
        return _NtpServer(bind, port)
    raise ValueError(f"unknown server kind {kind!r}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.servers")
    kinds = parser.add_subparsers(dest="kind", required=True)
    http = kinds.add_parser("http")
    http.add_argument("--name", required=True)
    http.add_argument("--port", type=int, default=80)
    http.add_argument("--control", type=Path, help="JSON file: status, delay (s), hold (bool)")
    echo = kinds.add_parser("tcp-echo")
    echo.add_argument("--port", type=int, default=7)
    udp = kinds.add_parser("udp-echo")
    udp.add_argument("--name", required=True)
    udp.add_argument("--port", type=int, default=53)
    for sub in (http, echo, udp):
        # 0.0.0.0 also covers a VIP on lo or tunl0 (DR, TUN backends).
        sub.add_argument("--bind", default="0.0.0.0")
    args = vars(parser.parse_args(argv))
    server = make_server(args.pop("kind"), **args)
    print(f"listening on {args['bind']} port {args['port']}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
