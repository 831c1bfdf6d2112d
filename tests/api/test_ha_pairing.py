"""Pairing two real API processes: the one-time code, the X25519 exchange, wrong codes, unpairing."""

from __future__ import annotations

from pathlib import Path

import httpx

from apitest import WEB
from hanode import WAIT_DEADLINE, in_sync, pair, two_nodes
from lab.wait import wait_until


def test_pairing_shares_a_key_this_nodes_configuration_wins_and_either_side_unpairs(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        alpha.post("/services", WEB, expect=201)
        mine = alpha.commit("alpha's web")
        beta.post("/services", {**WEB, "name": "other", "address": "192.0.2.99"}, expect=201)
        beta.commit("beta's own, replaced at pairing")
        assert beta.ha_status()["node"]["role"] == "standalone"

        result = pair(alpha, beta)

        assert result["peer_name"] == "beta"
        assert result["sync"]["result"] == "forced", result
        # Both sides hold the same key (the exchange derived it on each side, it never travelled).
        key_a = alpha.sql("SELECT key, peer_name, peer_url FROM ha_pairing")
        key_b = beta.sql("SELECT key, peer_name, peer_url FROM ha_pairing")
        assert key_a[0][0] == key_b[0][0] and len(key_a[0][0]) == 64
        assert key_a[0][1:] == ("beta", beta.url) and key_b[0][1:] == ("alpha", alpha.url)
        # The code is gone on beta: used once.
        assert beta.sql("SELECT count(*) FROM ha_pairing_code") == [(0,)]
        # beta now runs alpha's shared configuration, with its own node settings ...
        assert in_sync(alpha, beta)
        # ... and alpha's accounts: beta's admin session ended with beta's own password hash.
        assert beta.http.get("/api/v1/services").status_code == 401
        beta.login("admin")
        assert [s["name"] for s in beta.get("/services")["data"]] == ["web"]
        head = beta.head()
        assert head is not None and head["message"] == f"forced by alpha revision {mine['number']}" and head["author"] == "peer:alpha"
        assert beta.get("/node")["name"] == "beta"
        status_a = wait_until(
            lambda: (s := alpha.ha_status())["sync"]["state"] == "in_sync" and s,
            WAIT_DEADLINE,
            what="alpha to see beta in sync",
        )
        assert status_a["peer"]["name"] == "beta" and status_a["peer"]["reachable"] is True
        assert status_a["sync"]["local_hash"] == status_a["sync"]["peer_hash"]
        kinds = {e["kind"] for e in beta.get("/events?limit=50")["data"]}
        assert {"ha.paired", "ha.sync"} <= kinds
        again = alpha.post("/ha/pair", {"peer_url": beta.url, "code": "ABCD-EFGH-JKLM"}, expect=409)
        assert "already paired with beta" in again["detail"]

        # Unpairing on beta tells alpha.
        response = beta.http.delete("/api/v1/ha/pair")
        assert response.status_code == 200 and response.json()["peer"] == "told the peer", response.text
        assert beta.ha_status()["sync"]["state"] == "unpaired" and beta.ha_status()["peer"] is None
        assert alpha.ha_status()["sync"]["state"] == "unpaired"
        assert alpha.sql("SELECT count(*) FROM ha_pairing") == [(0,)]
        assert alpha.get("/events?kind=ha.unpaired")["count"] == 1

        # Paired again, unpairing on alpha tells beta.
        pair(alpha, beta)
        assert alpha.http.delete("/api/v1/ha/pair").json()["peer"] == "told the peer"
        assert beta.sql("SELECT count(*) FROM ha_pairing") == [(0,)]


def test_wrong_expired_and_burnt_codes_and_a_name_clash_are_refused(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        code = beta.post("/ha/pairing-code", expect=201)["code"]
        beta.sql("UPDATE ha_pairing_code SET expires_at = '2000-01-01 00:00:00'")
        expired = alpha.post("/ha/pair", {"peer_url": beta.url, "code": code, "local_url": alpha.url}, expect=422)
        assert "expired" in expired["detail"][0]["msg"]

        code = beta.post("/ha/pairing-code", expect=201)["code"]
        wrong = "ABCD-EFGH-JKLM" if code != "ABCD-EFGH-JKLM" else "ABCD-EFGH-JKLN"
        for left in (2, 1, 0):
            answer = alpha.post("/ha/pair", {"peer_url": beta.url, "code": wrong, "local_url": alpha.url}, expect=422)
            error = answer["detail"][0]
            assert error["loc"] == ["body", "code"]
            assert error["msg"].startswith("the pairing code was not accepted by the peer: the pairing code is wrong")
            assert (f"{left} tries left from 127.0.0.1" if left else "no tries left from 127.0.0.1") in error["msg"]
        # alpha's address has used its tries: not even the right code is tried from there.
        limited = alpha.post("/ha/pair", {"peer_url": beta.url, "code": code, "local_url": alpha.url}, expect=429)
        assert "3 wrong pairing codes came from 127.0.0.1" in limited["detail"]
        # Anyone else who reaches the port gets 3 tries per address; 10 wrong tries burn the code.
        forged = {"node": "mallory", "url": "http://127.0.0.1:9", "certificate": None, "peer_certificate": None, "public_key": "11" * 32, "nonce": "22" * 16, "mac": "33" * 32}
        for source, expected in (("127.0.0.2", [401, 401, 401, 429]), ("127.0.0.3", [401, 401, 401, 429]), ("127.0.0.4", [401])):
            with httpx.Client(transport=httpx.HTTPTransport(local_address=source)) as http:
                assert [http.post(f"{beta.url}/api/v1/peer/pair", json=forged).status_code for _ in expected] == expected
        assert beta.sql("SELECT failures FROM ha_pairing_code") == [(10,)]
        # Even the right code no longer works, from a fresh address too: it was burnt.
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.5")) as http:
            burnt = http.post(f"{beta.url}/api/v1/peer/pair", json=forged)
        assert burnt.status_code == 401 and "burnt after 10 wrong tries" in burnt.json()["detail"]
        assert alpha.sql("SELECT count(*) FROM ha_pairing") == [(0,)] == beta.sql("SELECT count(*) FROM ha_pairing")

        unreachable = alpha.post("/ha/pair", {"peer_url": "http://127.0.0.1:9", "code": code, "local_url": alpha.url}, expect=422)
        assert unreachable["detail"][0]["loc"] == ["body", "peer_url"]

        code = beta.post("/ha/pairing-code", expect=201)["code"]
        alpha.http.put("/api/v1/node", json={"name": "beta"})
        clash = alpha.post("/ha/pair", {"peer_url": beta.url, "code": code, "local_url": alpha.url}, expect=409)
        assert "both nodes are named 'beta'" in clash["detail"]

        # With distinct names, a fresh code pairs (the refusals above did not use it up).
        alpha.http.put("/api/v1/node", json={"name": "alpha"})
        alpha.post("/ha/pair", {"peer_url": beta.url, "code": code, "local_url": alpha.url}, expect=200)
        assert alpha.ha_status()["peer"]["name"] == "beta"
