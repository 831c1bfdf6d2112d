"""Signing and checking peer-to-peer requests with the pair key (HMAC-SHA256), replay-proof.

A request carries the sender's node name, a unix timestamp, a random nonce and a signature over
method, path with query, timestamp, nonce, node name and the body's SHA-256 (for a streamed body,
too large to hold, the SHA-256 its sender declares in CONTENT_SHA256, checked when it is in). The
receiver accepts it only within CLOCK_SKEW seconds of its own clock and only once: every nonce it
accepted is remembered (in the database, so across restarts) for as long as its timestamp could
still pass. Responses are signed too, over status, the request's nonce, the responder's clock (X-Fulcrum-Time,
from which the sender measures the skew between the clocks) and the body, so a client can tell
its peer's answer from anyone else's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

from fulcrum.ha import clock

NODE = "X-Fulcrum-Node"
TIMESTAMP = "X-Fulcrum-Timestamp"
NONCE = "X-Fulcrum-Nonce"
SIGNATURE = "X-Fulcrum-Signature"
TIME = "X-Fulcrum-Time"  # on every answer: the responder's unix time when it answered
# On a streamed request (a firmware bundle): its body's SHA-256, which the signature covers in
# place of the body; the receiver compares it with what arrived before it keeps anything.
CONTENT_SHA256 = "X-Fulcrum-Content-SHA256"

CLOCK_SKEW = 30  # seconds a request's timestamp may differ from the receiver's clock
NONCE_MEMORY = (
    2 * CLOCK_SKEW + 1
)  # seconds past max(now, its timestamp) a nonce is refused again: longer than it could pass


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


def request_signature(
    key: bytes, method: str, path: str, timestamp: str, nonce: str, node: str, content_sha256: str
) -> str:
    message = "\n".join((method.upper(), path, timestamp, nonce, node, content_sha256))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def response_signature(key: bytes, status: int, request_nonce: str, responder_time: str, body: bytes) -> str:
    message = "\n".join(("response", str(status), request_nonce, responder_time, body_hash(body)))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign_request(
    key: bytes,
    node: str,
    method: str,
    path: str,
    body: bytes,
    now: float | None = None,
    *,
    content_sha256: str | None = None,
) -> SignedHeaders:
    """Sign a request whose body is `body`, or (a streamed body, e.g. a firmware bundle) whose
    body's SHA-256 is `content_sha256`; the receiver of a streamed body checks the hash once the
    body is in (CONTENT_SHA256 carries it)."""
    timestamp = str(int(now if now is not None else clock.now()))
    nonce = secrets.token_hex(16)
    digest = content_sha256 if content_sha256 is not None else body_hash(body)
    return SignedHeaders(
        node, timestamp, nonce, request_signature(key, method, path, timestamp, nonce, node, digest)
    )


class NonceStore(Protocol):
    def first_use(self, nonce: str, until: float) -> bool:
        """Remember `nonce` until `until` (unix time); False if it is remembered already."""


def verify_request(
    key: bytes,
    nonces: NonceStore,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    now: float | None = None,
) -> SignedHeaders:
    """The request's signed headers, or PeerAuthError saying what is wrong. `headers` has
    lower-case names (as ASGI and httpx give them)."""
    signed = check_signature(key, method, path, headers, body_hash(body), now)
    remember_nonce(nonces, signed, now)
    return signed


def check_signature(
    key: bytes, method: str, path: str, headers: dict[str, str], content_sha256: str, now: float | None = None
) -> SignedHeaders:
    """The signature and the clock, not the nonce: a streamed body's request is checked before its
    body is read (against the SHA-256 the sender declared), its nonce once the body is in, when the
    request writes (remember_nonce)."""
    for name in (NODE, TIMESTAMP, NONCE, SIGNATURE):
        if name.lower() not in headers:
            raise PeerAuthError(f"not a signed peer request: header {name} is missing")
    signed = SignedHeaders(*(headers[name.lower()] for name in (NODE, TIMESTAMP, NONCE, SIGNATURE)))
    if not signed.timestamp.isdigit():
        raise PeerAuthError("X-Fulcrum-Timestamp is not a unix time")
    now = clock.now() if now is None else now
    skew = abs(now - int(signed.timestamp))
    if skew > CLOCK_SKEW:
        raise PeerAuthError(
            f"clocks differ by {skew:.0f} s: the request's timestamp against this node's clock (at "
            f"most {CLOCK_SKEW} s); check both clocks (NTP)"
        )
    if len(signed.nonce) != 32:
        raise PeerAuthError("X-Fulcrum-Nonce must be 16 bytes in hex")
    expected = request_signature(
        key, method, path, signed.timestamp, signed.nonce, signed.node, content_sha256
    )
    if not hmac.compare_digest(expected, signed.signature):
        raise PeerAuthError(
            "the signature does not match: not signed with this pair's key, or altered on the way"
        )
    return signed


def remember_nonce(nonces: NonceStore, signed: SignedHeaders, now: float | None = None) -> None:
    now = clock.now() if now is None else now
    if not nonces.first_use(signed.nonce, max(now, int(signed.timestamp)) + NONCE_MEMORY):
        raise PeerAuthError("this request was seen before (replayed nonce)")


def declared_content_sha256(headers: dict[str, str]) -> str:
    """A streamed body's SHA-256 as its sender declared (and signed) it."""
    value = headers.get(CONTENT_SHA256.lower(), "")
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise PeerAuthError(
            f"a streamed peer request needs {CONTENT_SHA256}: the body's SHA-256 in lower-case hex"
        )
    return value


def verify_response(
    key: bytes, status: int, request_nonce: str, headers: dict[str, str], body: bytes
) -> None:
    signature = headers.get(SIGNATURE.lower())
    if signature is None:
        raise PeerAuthError(f"the peer's answer (HTTP {status}) is not signed")
    responder_time = headers.get(TIME.lower(), "")
    if not hmac.compare_digest(
        response_signature(key, status, request_nonce, responder_time, body), signature
    ):
        raise PeerAuthError(f"the peer's answer (HTTP {status}) is not signed with this pair's key")
