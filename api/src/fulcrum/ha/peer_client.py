"""The signed HTTP client one node uses to talk to its peer.

Every request is signed with the pair key and every answer must be signed with it too; an answer
that is not is treated like no answer. The peer's TLS certificate is not verified (appliances
serve self-signed certificates): authenticity and integrity come from the pair key, not from TLS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from fulcrum.ha import peer_auth

STATUS_TIMEOUT = 3.0  # polls and small requests
APPLY_TIMEOUT = 150.0  # the peer applies a configuration: render, validate, reload, read back


class PeerError(Exception):
    """The peer could not be asked: unreachable, timed out, or its answer was not authentic."""


class PeerUnreachable(PeerError):
    pass


class PeerAuthFailed(PeerError):
    """The peer refused our signature, or its answer did not carry a valid one."""


@dataclass(frozen=True)
class PeerResponse:
    status: int
    data: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def detail(self) -> str:
        if isinstance(self.data, dict) and isinstance(self.data.get("detail"), str):
            return self.data["detail"]
        return f"HTTP {self.status}"


class PeerClient:
    def __init__(self, url: str, node: str, key: bytes, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.node = node
        self.key = key
        self.transport = transport

    def get(self, path: str, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("GET", path, None, timeout)

    def post(self, path: str, payload: Any, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("POST", path, payload, timeout)

    def delete(self, path: str, timeout: float = STATUS_TIMEOUT) -> PeerResponse:
        return self.request("DELETE", path, None, timeout)

    def request(self, method: str, path: str, payload: Any, timeout: float) -> PeerResponse:
        full_path = "/api/v1/peer" + path
        body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        signed = peer_auth.sign_request(self.key, self.node, method, full_path, body)
        headers = {**signed.as_dict(), **({"Content-Type": "application/json"} if payload is not None else {})}
        try:
            with httpx.Client(verify=False, timeout=timeout, transport=self.transport) as http:  # noqa: S501 (see module docstring)
                response = http.request(method, self.url + full_path, content=body, headers=headers)
        except httpx.TimeoutException as error:
            raise PeerUnreachable(f"the peer at {self.url} did not answer within {timeout:g} s") from error
        except httpx.HTTPError as error:
            raise PeerUnreachable(f"the peer at {self.url} is not reachable: {error}") from error
        lowered = {k.lower(): v for k, v in response.headers.items()}
        if response.status_code == 401 and peer_auth.SIGNATURE.lower() not in lowered:
            raise PeerAuthFailed(f"the peer refused this node's signature: {response_detail(response)}")
        try:
            peer_auth.verify_response(self.key, response.status_code, signed.nonce, lowered, response.content)
        except peer_auth.PeerAuthError as error:
            raise PeerAuthFailed(str(error)) from None
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = None
        return PeerResponse(response.status_code, data)


def response_detail(response: httpx.Response) -> str:
    """The API's `detail` of an error answer, or its status when it has none."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else f"HTTP {response.status_code}"
