"""Signing and checking peer requests: every way a request can be wrong is refused."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.orm import Session

from fulcrum.ha import clock
from fulcrum.ha.nonces import StoredNonces
from fulcrum.models.ha import PeerNonce
from fulcrum.ha.peer_auth import (
    CLOCK_SKEW,
    NONCE_MEMORY,
    PeerAuthError,
    response_signature,
    sign_request,
    verify_request,
    verify_response,
)

KEY = bytes(range(32))
PATH = "/api/v1/peer/config"
BODY = b'{"shared": {}}'



def headers_of(signed) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {k.lower(): v for k, v in signed.as_dict().items()}


def test_a_signed_request_passes_once(session: Session) -> None:
    nonces = StoredNonces(session)
    headers = headers_of(sign_request(KEY, "alpha", "POST", PATH, BODY))
    accepted = verify_request(KEY, nonces, "POST", PATH, headers, BODY)
    assert accepted.node == "alpha"
    with pytest.raises(PeerAuthError, match="replayed"):
        verify_request(KEY, nonces, "POST", PATH, headers, BODY)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"method": "PUT"}, "signature does not match"),
        ({"path": "/api/v1/peer/status"}, "signature does not match"),
        ({"body": BODY + b" "}, "signature does not match"),
        ({"key": bytes(32)}, "signature does not match"),
        ({"node": "mallory"}, "signature does not match"),
    ],
)
def test_anything_altered_breaks_the_signature(change: dict[str, object], reason: str, session: Session) -> None:
    request = {"method": "POST", "path": PATH, "body": BODY, "key": KEY, "node": "alpha"}
    headers = headers_of(sign_request(KEY, "alpha", "POST", PATH, BODY))
    if "node" in change:
        headers["x-fulcrum-node"] = str(change["node"])
    request.update({k: v for k, v in change.items() if k != "node"})
    with pytest.raises(PeerAuthError, match=reason):
        verify_request(request["key"], StoredNonces(session), request["method"], request["path"], headers, request["body"])  # type: ignore[arg-type]


@pytest.mark.parametrize("offset", [-(CLOCK_SKEW + 1), CLOCK_SKEW + 1])
def test_a_timestamp_outside_the_window_is_refused(offset: int, session: Session) -> None:
    now = float(int(time.time()))  # timestamps are whole seconds
    headers = headers_of(sign_request(KEY, "alpha", "GET", PATH, b"", now=now + offset))
    with pytest.raises(PeerAuthError, match=f"clocks differ by {CLOCK_SKEW + 1} s"):
        verify_request(KEY, StoredNonces(session), "GET", PATH, headers, b"", now=now)


@pytest.mark.parametrize("offset", [-CLOCK_SKEW, 0, CLOCK_SKEW])
def test_within_the_window_is_accepted(offset: int, session: Session) -> None:
    now = float(int(time.time()))  # timestamps are whole seconds: the window's edges are exact
    signed = sign_request(KEY, "alpha", "GET", PATH, b"", now=now + offset)
    accepted = verify_request(KEY, StoredNonces(session), "GET", PATH, headers_of(signed), b"", now=now)
    assert accepted == signed


def test_missing_or_malformed_headers_are_named(session: Session) -> None:
    headers = headers_of(sign_request(KEY, "alpha", "GET", PATH, b""))
    for name in ("x-fulcrum-node", "x-fulcrum-timestamp", "x-fulcrum-nonce", "x-fulcrum-signature"):
        partial = {k: v for k, v in headers.items() if k != name}
        with pytest.raises(PeerAuthError, match="is missing"):
            verify_request(KEY, StoredNonces(session), "GET", PATH, partial, b"")
    with pytest.raises(PeerAuthError, match="not a unix time"):
        verify_request(KEY, StoredNonces(session), "GET", PATH, {**headers, "x-fulcrum-timestamp": "soon"}, b"")


def test_nonces_are_remembered_for_longer_than_a_timestamp_passes(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    now = float(int(time.time()))
    headers = headers_of(sign_request(KEY, "alpha", "GET", PATH, b"", now=now))
    accepted = verify_request(KEY, StoredNonces(session), "GET", PATH, headers, b"", now=now)
    assert accepted.nonce == headers["x-fulcrum-nonce"]
    assert NONCE_MEMORY > 2 * CLOCK_SKEW
    # Until the timestamp can no longer pass, the nonce is refused; then it is forgotten.
    monkeypatch.setattr(clock, "now", lambda: now + CLOCK_SKEW)
    with pytest.raises(PeerAuthError, match="replayed"):
        verify_request(KEY, StoredNonces(session), "GET", PATH, headers, b"", now=now + CLOCK_SKEW)
    monkeypatch.setattr(clock, "now", lambda: now + NONCE_MEMORY + 1)
    assert StoredNonces(session).first_use("b" * 32, now + 2 * NONCE_MEMORY)
    assert session.query(PeerNonce).count() == 1  # the first one expired and went


def test_responses_are_bound_to_the_request_nonce_status_time_and_body() -> None:
    signature = response_signature(KEY, 200, "n" * 32, "1000.000", b"{}")
    signed = {"x-fulcrum-signature": signature, "x-fulcrum-time": "1000.000"}
    verify_response(KEY, 200, "n" * 32, signed, b"{}")
    for status, nonce, body in ((409, "n" * 32, b"{}"), (200, "m" * 32, b"{}"), (200, "n" * 32, b"[]")):
        with pytest.raises(PeerAuthError):
            verify_response(KEY, status, nonce, signed, body)
    with pytest.raises(PeerAuthError):  # the responder's clock is signed too
        verify_response(KEY, 200, "n" * 32, {**signed, "x-fulcrum-time": "1060.000"}, b"{}")
    with pytest.raises(PeerAuthError, match="not signed"):
        verify_response(KEY, 200, "n" * 32, {}, b"{}")
