"""The standby's half of a pair upgrade, between two real API processes: the active node streams
its bundle to /peer/firmware/bundle, signed over the SHA-256 it declares; the standby keeps it only
when what arrived is what was signed and its own `rauc info` (the real one, against its keyring)
accepts it. The peer's client here is the real PeerClient with the real pair key."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import httpx
import pytest

from fulcrum.ha import peer_auth
from fulcrum.ha.peer_client import PeerAuthFailed, PeerClient
from hanode import Node, kept_bundle_files, pair, rauc_env, two_nodes
from lab.bundles import Bundles

BUNDLE_PATH = "/api/v1/peer/firmware/bundle"

pytestmark = pytest.mark.skipif(
    shutil.which("rauc") is None or shutil.which("mksquashfs") is None,
    reason="needs rauc and squashfs-tools (scripts/setup-host installs them)",
)


def client_of(alpha: Node, beta: Node) -> PeerClient:
    key = bytes.fromhex(alpha.sql("SELECT key FROM ha_pairing")[0][0])
    return PeerClient(beta.url, "alpha", key, pin=None)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_active_node_s_bundle_is_streamed_checked_and_kept_by_the_standby(
    tmp_path: Path, bundles: Bundles
) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        pair(alpha, beta)
        peer = client_of(alpha, beta)

        answer = peer.post_file("/firmware/bundle", bundles.good, sha256(bundles.good), timeout=60)
        assert answer.status == 201, answer.data
        assert answer.data["version"] == "2.0.0" and answer.data["sha256"] == sha256(bundles.good)
        assert kept_bundle_files(beta) == ["bundle.json", "bundle.raucb"]
        assert (beta.data / "firmware" / "bundle.raucb").read_bytes() == bundles.good.read_bytes()
        status = peer.get("/firmware")
        assert status.ok and status.data["bundle"]["version"] == "2.0.0", status.data
        audit = beta.sql("SELECT username, success FROM audit_log WHERE action = 'firmware.bundle'")
        assert audit == [("peer:alpha", 1)]


def test_a_bundle_that_is_not_what_was_signed_or_not_trusted_is_refused_and_nothing_kept(
    tmp_path: Path, bundles: Bundles
) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        pair(alpha, beta)
        peer = client_of(alpha, beta)

        # Signed for the good bundle, the truncated one arrives: refused before RAUC is asked.
        answer = peer.post_file("/firmware/bundle", bundles.truncated, sha256(bundles.good), timeout=60)
        assert answer.status == 401, answer.data
        assert "not the one the peer signed" in answer.detail
        assert kept_bundle_files(beta) == []

        # What the peer signed, but signed by a key this node's keyring does not trust.
        answer = peer.post_file("/firmware/bundle", bundles.other_key, sha256(bundles.other_key), timeout=60)
        assert answer.status == 422, answer.data
        assert answer.detail.startswith("the bundle is not signed by a key this appliance trusts")
        assert kept_bundle_files(beta) == []

        # No declared SHA-256, or no signature: nothing is read.
        key = bytes.fromhex(alpha.sql("SELECT key FROM ha_pairing")[0][0])
        headers = peer_auth.sign_request(key, "alpha", "POST", BUNDLE_PATH, b"").as_dict()
        with httpx.Client(base_url=beta.url, timeout=60) as http:
            answer_http = http.post(BUNDLE_PATH, content=bundles.good.read_bytes(), headers=headers)
            assert answer_http.status_code == 401
            assert "needs X-Fulcrum-Content-SHA256" in answer_http.json()["detail"]
            answer_http = http.post(BUNDLE_PATH, content=bundles.good.read_bytes(),
                                    headers={peer_auth.CONTENT_SHA256: sha256(bundles.good)})
            assert answer_http.status_code == 401
            assert "header X-Fulcrum-Node is missing" in answer_http.json()["detail"]
        assert kept_bundle_files(beta) == []


def test_a_replayed_bundle_request_is_refused(tmp_path: Path, bundles: Bundles) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        pair(alpha, beta)
        key = bytes.fromhex(alpha.sql("SELECT key FROM ha_pairing")[0][0])
        digest = sha256(bundles.good)
        headers = {
            **peer_auth.sign_request(key, "alpha", "POST", BUNDLE_PATH, b"", content_sha256=digest).as_dict(),
            peer_auth.CONTENT_SHA256: digest,
            "Content-Type": "application/octet-stream",
        }
        with httpx.Client(base_url=beta.url, timeout=60) as http:
            first = http.post(BUNDLE_PATH, content=bundles.good.read_bytes(), headers=headers)
            assert first.status_code == 201, first.text
            again = http.post(BUNDLE_PATH, content=bundles.good.read_bytes(), headers=headers)
        assert again.status_code == 401 and "replayed nonce" in again.json()["detail"], again.text


def test_an_unpaired_node_takes_no_bundle(tmp_path: Path, bundles: Bundles) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        assert alpha.ha_status()["peer"] is None
        peer = PeerClient(beta.url, "alpha", b"k" * 32, pin=None)
        with pytest.raises(PeerAuthFailed, match="this node is not paired"):
            peer.post_file("/firmware/bundle", bundles.good, sha256(bundles.good), timeout=60)
        assert kept_bundle_files(beta) == []
