"""System → Diagnostics: tool requests (every argument validated; each becomes one argv element of
a fixed command, never shell text) and their results, and the read-only tables."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from fulcrum.apply.capture import MAX_PACKETS, MAX_SECONDS, BpfFilter, InterfaceName
from fulcrum.dataplane.ipvs_connections import IpvsConnection

MAX_HOST = 253
MAX_URL = 2048
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
DNS_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*\.?$")


def check_host(value: str) -> str:
    """An IP address or a DNS name: letters, digits and inner hyphens per label, dots between."""
    if value.startswith("-"):
        raise ValueError("a host must not start with '-' (it would be read as an option)")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not DNS_NAME.match(value):
        raise ValueError("expected an IP address or a DNS name such as backend1.example.com")
    return value


def check_url(value: str) -> str:
    if any(character.isspace() or ord(character) < 0x20 or ord(character) == 0x7F for character in value):
        raise ValueError("a URL must not contain spaces or control characters")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number or out of range)
    except ValueError as error:
        raise ValueError(f"not a valid URL: {error}") from error
    if parts.scheme not in ("http", "https"):
        raise ValueError("expected an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("a URL with credentials in it is not accepted")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    host = parts.hostname
    try:
        check_host(host)
    except ValueError as error:
        raise ValueError(f"the URL's host: {error}") from error
    return value


Host = Annotated[str, Field(min_length=1, max_length=MAX_HOST), AfterValidator(check_host)]
Url = Annotated[str, Field(min_length=1, max_length=MAX_URL), AfterValidator(check_url)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PingRequest(_Request):
    host: Host
    count: Annotated[int, Field(ge=1, le=10)] = 4


class TracerouteRequest(_Request):
    host: Host
    max_hops: Annotated[int, Field(ge=1, le=30)] = 15


class TcpConnectRequest(_Request):
    host: Host
    port: Annotated[int, Field(ge=1, le=65535)]
    timeout_seconds: Annotated[float, Field(gt=0, le=10)] = 3.0


class HttpGetRequest(_Request):
    url: Url
    verify_tls: bool = True  # off only when asked: a backend with a self-signed certificate
    timeout_seconds: Annotated[float, Field(gt=0, le=30)] = 5.0


class CaptureRequest(_Request):
    interface: InterfaceName  # and one the kernel lists: checked by the service, then by the helper
    count: Annotated[int, Field(ge=1, le=MAX_PACKETS)] = 100
    seconds: Annotated[int, Field(ge=1, le=MAX_SECONDS)] = 10
    filter: BpfFilter = ""


class ToolRun(BaseModel):
    command: list[str]
    exit_code: int | None  # None: stopped at its time limit
    timed_out: bool
    duration_ms: float
    output: str


class TcpConnectResult(BaseModel):
    host: str
    port: int
    address: str | None  # what the host resolved to
    connected: bool
    resolve_ms: float | None
    connect_ms: float | None
    error: str | None = None


class HttpGetResult(BaseModel):
    url: str
    status: int | None = None
    reason: str | None = None
    http_version: str | None = None
    connect_ms: float | None = None  # from the start to the TCP connection (name resolution included)
    tls_ms: float | None = None  # from the start to the end of the TLS handshake
    first_byte_ms: float | None = None  # from the start to the response headers
    total_ms: float | None = None
    body_bytes: int | None = None
    redirects: list[str] = []  # followed, on the same host only
    redirect_not_followed: str | None = None  # a Location on another host (or too many redirects)
    error: str | None = None


class Interfaces(BaseModel):
    names: list[str]


class IpvsConnectionPage(BaseModel):
    available: bool
    reason: str | None = None
    data: list[IpvsConnection]  # the data plane's own row: pydantic serialises the dataclass
    count: int  # matching the filter
    states: dict[str, int]  # of those, per state
    total: int  # in the whole table


class NeighbourRead(BaseModel):
    address: str
    interface: str
    lladdr: str | None
    states: list[str]
    router: bool


class NeighbourTable(BaseModel):
    data: list[NeighbourRead]
