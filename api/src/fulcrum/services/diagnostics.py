"""Diagnostics run from the appliance: fixed tools with validated arguments, each argument one argv
element after the options (`--` ends them), never a shell, every run bounded in time; and the
read-only tables (IPVS connections, neighbours). The packet capture needs privilege and goes
through fulcrum-applyd (fulcrum.apply.capture)."""

from __future__ import annotations

import base64
import ipaddress
import socket
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from fulcrum.apply.capture import CaptureFailed, CaptureFilterRejected, CaptureSpec, kernel_interfaces
from fulcrum.apply.client import Applier, ApplierError
from fulcrum.dataplane import ipvs_connections, neighbours
from fulcrum.errors import AppError, ConfigInvalid
from fulcrum.schemas.diagnostics import (
    CaptureRequest,
    HttpGetRequest,
    HttpGetResult,
    IpvsConnectionPage,
    NeighbourRead,
    NeighbourTable,
    PingRequest,
    TcpConnectRequest,
    TcpConnectResult,
    ToolRun,
    TracerouteRequest,
)

MAX_OUTPUT = 64 * 1024
MAX_REDIRECTS = 5
MAX_BODY = 1 << 20  # read and counted, not kept
TRACEROUTE_SECONDS = 60
TOOL_ENV = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


class DiagnosticFailed(AppError):
    """A tool or table this node could not run or read (not the client's fault)."""

    status_code = 502


def ping(request: PingRequest) -> ToolRun:
    # -W: seconds to wait for each reply; -w: a deadline for the whole run.
    deadline = request.count + 3
    command = ["ping", "-n", "-c", str(request.count), "-W", "2", "-w", str(deadline), "--", request.host]
    return run_tool(command, deadline + 2)


def traceroute(request: TracerouteRequest) -> ToolRun:
    return run_tool(["tracepath", "-n", "-m", str(request.max_hops), "--", request.host], TRACEROUTE_SECONDS)


def run_tool(command: list[str], timeout: float) -> ToolRun:
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False, env=TOOL_ENV)
    except FileNotFoundError as error:
        raise DiagnosticFailed(f"{command[0]} is not installed on this node") from error
    except subprocess.TimeoutExpired as expired:
        return ToolRun(
            command=command,
            exit_code=None,
            timed_out=True,
            duration_ms=_ms_since(started),
            output=_output(expired.stdout, expired.stderr) + f"\n(stopped after {timeout:g} s)",
        )
    return ToolRun(
        command=command,
        exit_code=done.returncode,
        timed_out=False,
        duration_ms=_ms_since(started),
        output=_output(done.stdout, done.stderr),
    )


def _output(stdout: bytes | str | None, stderr: bytes | str | None) -> str:
    texts = (part.decode(errors="replace") if isinstance(part, bytes) else part for part in (stdout, stderr))
    return "".join(text for text in texts if text)[:MAX_OUTPUT]


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def tcp_connect(request: TcpConnectRequest) -> TcpConnectResult:
    result = TcpConnectResult(
        host=request.host, port=request.port, address=None, connected=False, resolve_ms=None, connect_ms=None
    )
    started = time.perf_counter()
    try:
        family, kind, protocol, _name, address = socket.getaddrinfo(
            request.host, request.port, type=socket.SOCK_STREAM
        )[0]
    except (socket.gaierror, UnicodeError) as error:
        result.error = f"cannot resolve {request.host}: {error}"
        return result
    result.resolve_ms = _ms_since(started)
    result.address = str(address[0])
    with socket.socket(family, kind, protocol) as connection:
        connection.settimeout(request.timeout_seconds)
        started = time.perf_counter()
        try:
            connection.connect(address)
        except TimeoutError:
            result.error = f"no answer within {request.timeout_seconds:g} s"
        except OSError as error:
            result.error = error.strerror or str(error)
        else:
            result.connected = True
        result.connect_ms = _ms_since(started)
    return result


def http_get(request: HttpGetRequest) -> HttpGetResult:
    """GET with timings; follows redirects only on the same scheme, host and port."""
    result = HttpGetResult(url=request.url)
    url = request.url
    started = time.perf_counter()
    marks: dict[str, float] = {}

    def trace(event: str, _info: dict[str, Any]) -> None:
        marks.setdefault(event, _ms_since(started))

    timeout = httpx.Timeout(request.timeout_seconds)
    try:
        with httpx.Client(verify=request.verify_tls, timeout=timeout, follow_redirects=False) as client:
            while True:
                marks.clear()
                started = time.perf_counter()
                with client.stream("GET", url, extensions={"trace": trace}) as response:
                    result.first_byte_ms = marks.get("http11.receive_response_headers.complete") or marks.get(
                        "http2.receive_response_headers.complete"
                    )
                    result.body_bytes = _drain(response)
                    result.total_ms = _ms_since(started)
                result.status = response.status_code
                result.reason = response.reason_phrase
                result.http_version = response.http_version
                result.connect_ms = marks.get("connection.connect_tcp.complete")
                result.tls_ms = marks.get("connection.start_tls.complete")
                location = response.headers.get("location")
                if not response.is_redirect or location is None:
                    return result
                target = urljoin(url, location)
                if not _same_origin(url, target) or len(result.redirects) >= MAX_REDIRECTS:
                    result.redirect_not_followed = target[:2048]
                    return result
                result.redirects.append(target[:2048])
                url = target
    except httpx.HTTPError as error:
        result.error = f"{type(error).__name__}: {error}"[:1000]
        result.total_ms = _ms_since(started)
        return result


def _drain(response: httpx.Response) -> int:
    size = 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size >= MAX_BODY:
            break
    return size


def _same_origin(first: str, second: str) -> bool:
    a, b = urlsplit(first), urlsplit(second)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


def capture(applier: Applier, request: CaptureRequest) -> bytes:
    if request.interface not in kernel_interfaces():
        raise _field_error(
            "interface",
            f"no interface {request.interface!r} on this node; it has {', '.join(kernel_interfaces())}",
            "body",
        )
    spec = CaptureSpec(
        interface=request.interface, count=request.count, seconds=request.seconds, filter=request.filter
    )
    try:
        result = applier.capture(spec)
    except CaptureFilterRejected as error:
        raise _field_error("filter", str(error), "body") from error
    except CaptureFailed as error:
        raise DiagnosticFailed(str(error)) from error
    except ApplierError as error:
        if error.field == "filter":
            raise _field_error("filter", str(error), "body") from error
        raise DiagnosticFailed(str(error)) from error
    return base64.b64decode(result.pcap_base64)


def connections(
    path: Path,
    service: str | None,
    backend: str | None,
    client: str | None,
    state: str | None,
    limit: int,
    offset: int,
) -> IpvsConnectionPage:
    selection = ipvs_connections.ConnectionFilter(
        virtual=_endpoint("service", service),
        backend=_endpoint("backend", backend),
        client=_address("client", client) if client else None,
        state=state,
    )
    if not path.exists():
        return IpvsConnectionPage(
            available=False,
            reason=f"no IPVS connection table on this node ({path} is missing: ip_vs is not loaded)",
            data=[],
            count=0,
            states={},
            total=0,
        )
    try:
        page = ipvs_connections.read_page(path, selection, limit, offset)
    except OSError as error:
        raise DiagnosticFailed(f"cannot read {path}: {error.strerror or error}") from error
    return IpvsConnectionPage(
        available=True,
        data=page.entries,
        count=page.count,
        states=page.states,
        total=page.total,
    )


def _endpoint(field: str, value: str | None) -> tuple[str, int | None] | None:
    """ADDRESS, ADDRESS:PORT or [IPv6]:PORT."""
    if not value:
        return None
    address, port = value, None
    if value.startswith("["):
        inner, _, rest = value[1:].partition("]")
        address = inner
        if rest:
            if not rest.startswith(":"):
                raise _field_error(field, "expected ADDRESS, ADDRESS:PORT or [IPv6]:PORT")
            port = _port(field, rest[1:])
    elif value.count(":") == 1:
        address, _, port_text = value.partition(":")
        port = _port(field, port_text)
    return _address(field, address), port


def _port(field: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise _field_error(field, "the port must be a number from 1 to 65535")
    return int(text)


def _address(field: str, text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError as error:
        raise _field_error(field, "expected an IP address, optionally with :PORT") from error


def _field_error(field: str, message: str, where: str = "query") -> ConfigInvalid:
    return ConfigInvalid([{"loc": [where, field], "msg": message, "type": "value_error"}])


def neighbour_table() -> NeighbourTable:
    try:
        rows = neighbours.read_neighbours()
    except neighbours.NeighboursUnreadable as error:
        raise DiagnosticFailed(str(error)) from error
    return NeighbourTable(
        data=[
            NeighbourRead(
                address=row.address,
                interface=row.interface,
                lladdr=row.lladdr,
                states=list(row.states),
                router=row.router,
            )
            for row in rows
        ]
    )
