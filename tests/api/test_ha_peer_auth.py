"""Peer requests between two real API processes: only requests signed with the pair key, fresh
and never seen before, are accepted; answers are signed too."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from fulcrum.ha import peer_auth
from fulcrum.ha.peer_client import PeerAuthFailed, PeerClient
from hanode import pair, two_nodes

STATUS = "/api/v1/peer/status"
MAINTENANCE = "/api/v1/peer/maintenance"


def signed(key: bytes, method: str, path: str, body: bytes = b"", node: str = "alpha", now: float | None = None) -> dict[str, str]:
    return peer_auth.sign_request(key, node, method, path, body, now).as_dict()


def test_only_fresh_requests_signed_with_the_pair_key_are_accepted(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        pair(alpha, beta)
        key = bytes.fromhex(alpha.sql("SELECT key FROM ha_pairing")[0][0])
        http = httpx.Client(base_url=beta.url, timeout=30)

        def refused(response: httpx.Response, reason: str) -> None:
            assert response.status_code == 401, response.text
            assert reason in response.json()["detail"], response.json()
            assert peer_auth.SIGNATURE not in response.headers  # nothing to trust in a refusal

        refused(http.get(STATUS), "header X-Fulcrum-Node is missing")
        refused(http.get(STATUS, headers=signed(b"k" * 32, "GET", STATUS)), "signature does not match")
        refused(http.get(STATUS, headers=signed(key, "GET", STATUS, now=time.time() - 32)), "clocks differ by")
        refused(http.get(STATUS, headers=signed(key, "GET", STATUS, now=time.time() + 32)), "clocks differ by")
        refused(http.get(STATUS, headers={**signed(key, "GET", STATUS), peer_auth.NODE: "mallory"}), "signature does not match")
        refused(http.get(STATUS, headers=signed(key, "GET", "/api/v1/peer/config")), "signature does not match")

        good = signed(key, "GET", STATUS)
        answer = http.get(STATUS, headers=good)
        assert answer.status_code == 200, answer.text
        assert answer.json()["name"] == "beta"
        # The answer is signed over its status, our nonce and its body.
        headers = {k.lower(): v for k, v in answer.headers.items()}
        peer_auth.verify_response(key, 200, good[peer_auth.NONCE], headers, answer.content)
        with pytest.raises(peer_auth.PeerAuthError):
            peer_auth.verify_response(key, 200, good[peer_auth.NONCE], headers, answer.content + b" ")
        refused(http.get(STATUS, headers=good), "replayed nonce")

        # A body altered on the way: signed for "off", sent as "on".
        body = json.dumps({"enabled": False}).encode()
        headers = {**signed(key, "POST", MAINTENANCE, body), "Content-Type": "application/json"}
        refused(http.post(MAINTENANCE, content=json.dumps({"enabled": True}).encode(), headers=headers), "signature does not match")
        assert not beta.maintenance_file.exists()
        # The same request unaltered is taken.
        headers = {**signed(key, "POST", MAINTENANCE, body), "Content-Type": "application/json"}
        assert http.post(MAINTENANCE, content=body, headers=headers).status_code == 200
        assert beta.maintenance_file.read_text().strip() == "0"

        # The client refuses an answer that is not signed with the pair key.
        with pytest.raises(PeerAuthFailed, match="refused this node's signature"):
            PeerClient(beta.url, "alpha", b"k" * 32, None).get("/status")
        assert PeerClient(beta.url, "alpha", key, None).get("/status").data["name"] == "beta"

        # Unpaired, nothing is accepted, whatever the key.
        beta.login("admin")
        assert beta.http.delete("/api/v1/ha/pair").status_code == 200
        refused(http.get(STATUS, headers=signed(key, "GET", STATUS)), "not paired")


def test_a_captured_request_is_not_accepted_again_after_the_receiver_restarts(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        pair(alpha, beta)
        key = bytes.fromhex(alpha.sql("SELECT key FROM ha_pairing")[0][0])
        body = json.dumps({"enabled": True, "reason": "captured"}).encode()
        captured = {**signed(key, "POST", MAINTENANCE, body), "Content-Type": "application/json"}
        http = httpx.Client(base_url=beta.url, timeout=30)
        assert http.post(MAINTENANCE, content=body, headers=captured).status_code == 200
        beta.maintenance_file.write_text("0\n")  # as if the operator had ended it since

        beta.stop()
        beta.start()  # same database: the nonces it accepted are still there

        replay = http.post(MAINTENANCE, content=body, headers=captured)
        assert replay.status_code == 401, replay.text
        assert "replayed nonce" in replay.json()["detail"]
        assert beta.maintenance_file.read_text().strip() == "0"
