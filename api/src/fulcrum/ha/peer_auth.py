"""Signing and checking peer-to-peer requests with the pair key (HMAC-SHA256), replay-proof.

A request carries the sender's node name, a unix timestamp, a random nonce and a signature over
method, path with query, timestamp, nonce, node name and the body's SHA-256. The receiver accepts
it only within CLOCK_SKEW seconds of its own clock and only once: every nonce it accepted is
remembered for longer than the window in which its timestamp would still pass. Responses are
signed too, over status, the request's nonce and the body, so a client can tell its peer's answer
from anyone else's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

NODE = "X-Fulcrum-Node"
TIMESTAMP = "X-Fulcrum-Timestamp"
NONCE = "X-Fulcrum-Nonce"
SIGNATURE = "X-Fulcrum-Signature"

CLOCK_SKEW = 30  # seconds a request's timestamp may differ from the receiver's clock
NONCE_MEMORY = 2 * CLOCK_SKEW + 1  # a nonce is refused again for as long as its timestamp could pass


class PeerAuthError(Exception):
    """Why a peer request or response is not accepted (said in the 401 answer)."""


@dataclass(frozen=True)
class SignedHeaders:
    node: str
    timestamp: str
    nonce: str
    signature: str

    def as_dict(self) -> dict[str, str]:
        return {NODE: self.node, TIMESTAMP: self.timestamp, NONCE: self.nonce, SIGNATURE: self.signature}


def body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def request_signature(key: bytes, method: str, path: str, timestamp: str, nonce: str, node: str, body: bytes) -> str:
    message = "\n".join((method.upper(), path, timestamp, nonce, node, body_hash(body)))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def response_signature(key: bytes, status: int, request_nonce: str, body: bytes) -> str:
    message = "\n".join(("response", str(status), request_nonce, body_hash(body)))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign_request(key: bytes, node: str, method: str, path: str, body: bytes, now: float | None = None) -> SignedHeaders:
    timestamp = str(int(now if now is not None else time.time()))
    nonce = secrets.token_hex(16)
    return SignedHeaders(node, timestamp, nonce, request_signature(key, method, path, timestamp, nonce, node, body))


class NonceCache:
    """Nonces seen recently; thread-safe. Only requests with a valid signature get here, so its
    size is bounded by the peer's real traffic."""

    def __init__(self, memory: float = NONCE_MEMORY) -> None:
        self.memory = memory
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, nonce: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            if len(self._seen) > 1024:
                self._seen = {n: t for n, t in self._seen.items() if t > now}
            expires = self._seen.get(nonce)
            if expires is not None and expires > now:
                return False
            self._seen[nonce] = now + self.memory
            return True


def verify_request(
    key: bytes,
    nonces: NonceCache,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    now: float | None = None,
) -> SignedHeaders:
    """The request's signed headers, or PeerAuthError saying what is wrong. `headers` has
    lower-case names (as ASGI and httpx give them)."""
    for name in (NODE, TIMESTAMP, NONCE, SIGNATURE):
        if name.lower() not in headers:
            raise PeerAuthError(f"not a signed peer request: header {name} is missing")
    signed = SignedHeaders(*(headers[name.lower()] for name in (NODE, TIMESTAMP, NONCE, SIGNATURE)))
    if not signed.timestamp.isdigit():
        raise PeerAuthError("X-Fulcrum-Timestamp is not a unix time")
    skew = abs((time.time() if now is None else now) - int(signed.timestamp))
    if skew > CLOCK_SKEW:
        raise PeerAuthError(f"the request's timestamp is {skew:.0f} s away from this node's clock (at most {CLOCK_SKEW} s); check both clocks (NTP)")
    if len(signed.nonce) != 32:
        raise PeerAuthError("X-Fulcrum-Nonce must be 16 bytes in hex")
    expected = request_signature(key, method, path, signed.timestamp, signed.nonce, signed.node, body)
    if not hmac.compare_digest(expected, signed.signature):
        raise PeerAuthError("the signature does not match: not signed with this pair's key, or altered on the way")
    if not nonces.first_use(signed.nonce):
        raise PeerAuthError("this request was seen before (replayed nonce)")
    return signed


def verify_response(key: bytes, status: int, request_nonce: str, headers: dict[str, str], body: bytes) -> None:
    signature = headers.get(SIGNATURE.lower())
    if signature is None:
        raise PeerAuthError(f"the peer's answer (HTTP {status}) is not signed")
    if not hmac.compare_digest(response_signature(key, status, request_nonce, body), signature):
        raise PeerAuthError(f"the peer's answer (HTTP {status}) is not signed with this pair's key")
