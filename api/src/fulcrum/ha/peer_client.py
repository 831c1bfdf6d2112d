"""The signed HTTP client one node uses to talk to its peer.

Every request is signed with the pair key and every answer must be signed with it too; an answer
that is not is treated like no answer. Over HTTPS the connection is refused unless the peer
presents the certificate pinned at pairing (fulcrum.ha.tls), so nothing is sent to anyone else.
Over plain HTTP (the lab) there is no certificate: the pair key still authenticates every message,
but nothing is encrypted. Each answer's X-Fulcrum-Time gives the peer's clock; with the round
trip it estimates how far the peer's clock is from this node's.
"""

from __future__ import annotations

import functools
import json
import math
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from fulcrum.ha import clock, peer_auth, tls

STATUS_TIMEOUT = 3.0  # polls and small requests
APPLY_TIMEOUT = 150.0  # the peer applies a configuration: render, validate, reload, read back


class PeerError(Exception):
    """The peer could not be asked: unreachable, timed out, or its answer was not authentic."""


class PeerUnreachable(PeerError):
    pass


class PeerAuthFailed(PeerError):
    """The peer refused our signature, or its answer did not carry a valid one."""

    def __init__(self, message: str, clock_offset: float | None = None) -> None:
        super().__init__(message)
        self.clock_offset = clock_offset  # a refusal still tells the peer's time


class PeerUntrusted(PeerError):
    """The peer did not present the pinned certificate: nothing was sent."""

    def __init__(self, message: str, presented: str | None) -> None:
        super().__init__(message)
        self.presented = presented


@dataclass(frozen=True)
class PeerResponse:
    status: int
    data: Any
    clock_offset: float | None = None  # seconds the peer's clock is ahead of this node's

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def detail(self) -> str:
        if isinstance(self.data, dict) and isinstance(self.data.get("detail"), str):
            return self.data["detail"]
        return f"HTTP {self.status}"


class PeerClient:
    def __init__(
        self, url: str, node: str, key: bytes, pin: str | None, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.node = node
        self.key = key
        self.pin = pin  # SHA-256 of the peer's certificate; unused over plain HTTP
        self.transport = transport

    def get(self, path: str, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("GET", path, None, timeout)

    def post(self, path: str, payload: Any, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("POST", path, payload, timeout)

    def delete(self, path: str, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("DELETE", path, None, timeout)

    def request(self, method: str, path: str, payload: Any, timeout: float) -> PeerResponse:
        body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        content_type = {"Content-Type": "application/json"} if payload is not None else {}
        return self._send(method, path, body, None, content_type, timeout)

    def post_file(self, path: str, file: Path, content_sha256: str, timeout: float) -> PeerResponse:
        """Stream `file` (a firmware bundle: too large to hold) as the body. The signature covers
        the SHA-256 the caller computed, which the peer checks against what arrives."""
        headers = {"Content-Type": "application/octet-stream", peer_auth.CONTENT_SHA256: content_sha256,
                   "Content-Length": str(file.stat().st_size)}  # fmt: skip
        return self._send("POST", path, _chunks(file), content_sha256, headers, timeout)

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | Iterator[bytes],
        content_sha256: str | None,
        extra_headers: dict[str, str],
        timeout: float,
    ) -> PeerResponse:
        full_path = "/api/v1/peer" + path
        body = content if isinstance(content, bytes) else b""
        signed = peer_auth.sign_request(
            self.key, self.node, method, full_path, body, content_sha256=content_sha256
        )
        headers = {**signed.as_dict(), **extra_headers}
        sent = clock.now()
        try:
            with httpx.Client(verify=self._tls(), timeout=timeout, transport=self.transport) as http:
                response = http.request(method, self.url + full_path, content=content, headers=headers)
        except httpx.TimeoutException as error:
            raise PeerUnreachable(f"the peer at {self.url} did not answer within {timeout:g} s") from error
        except httpx.HTTPError as error:
            refused = tls.not_pinned(error)
            if refused is not None:
                raise PeerUntrusted(
                    f"the peer at {self.url} presented a certificate with SHA-256 {refused.presented}, not "
                    "the pinned "
                    f"{refused.pinned}: refused, nothing sent (a renewed certificate is announced by the "
                    "peer itself)",
                    refused.presented,
                ) from None
            raise PeerUnreachable(f"the peer at {self.url} is not reachable: {error}") from error
        lowered = {k.lower(): v for k, v in response.headers.items()}
        offset = clock_offset(lowered.get(peer_auth.TIME.lower()), sent, clock.now())
        if response.status_code == 401 and peer_auth.SIGNATURE.lower() not in lowered:
            raise PeerAuthFailed(
                f"the peer refused this node's signature: {response_detail(response)}", offset
            )
        try:
            peer_auth.verify_response(self.key, response.status_code, signed.nonce, lowered, response.content)
        except peer_auth.PeerAuthError as error:
            raise PeerAuthFailed(str(error)) from None
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = None
        return PeerResponse(response.status_code, data, offset)

    def _tls(self) -> ssl.SSLContext:
        if not self.url.startswith("https://"):
            return _plain_http_context()
        if self.pin is None:
            raise PeerUntrusted(
                f"no certificate is pinned for the peer at {self.url} (paired before certificates were "
                "pinned): unpair and pair again",
                None,
            )
        return tls.peer_context(self.pin)


@functools.cache
def _plain_http_context() -> ssl.SSLContext:
    """The context an httpx client is built with even when it only speaks plain HTTP (the lab),
    where it is never used: made once. httpx's default loads the CA bundle anew for every client,
    which was over half of an idle paired node's CPU (a client per request, a poll every 2 s)."""
    return ssl.create_default_context()


def _chunks(file: Path, size: int = 1 << 20) -> Iterator[bytes]:
    with file.open("rb") as stream:
        while chunk := stream.read(size):
            yield chunk


def clock_offset(peer_time: str | None, sent: float, received: float) -> float | None:
    """How far the peer's clock is ahead of this node's: its time against the middle of the
    round trip (the answer is dated as it leaves, which for a status poll is mid-way)."""
    try:
        value = float(peer_time) if peer_time else math.nan
    except ValueError:
        return None
    return value - (sent + received) / 2 if math.isfinite(value) else None


def response_detail(response: httpx.Response) -> str:
    """The API's `detail` of an error answer, or its status when it has none."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else f"HTTP {response.status_code}"
