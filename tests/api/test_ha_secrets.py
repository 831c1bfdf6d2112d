"""The pair key at rest and in flight: it never leaves the node through any answer of either
node's API (operator or peer endpoints), its events, audit log or process log, and the database
that holds it is readable by the API's user only."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import httpx

from apitest import WEB
from fulcrum.ha import peer_auth
from hanode import WAIT_DEADLINE, Node, pair, two_nodes
from lab.wait import wait_until


def every_get(node: Node) -> dict[str, str]:
    """The body of every GET of the operator API without path parameters (the event stream is
    endless, left out; history is asked for one service), plus those of one service and
    revision, and the metrics."""
    schema = node.http.get("/api/v1/openapi.json").json()
    paths = [p for p, ops in schema["paths"].items() if "get" in ops and "{" not in p and p not in ("/api/v1/stream", "/api/v1/stats/history")]
    service = node.get("/services")["data"][0]["id"]
    revision = node.get("/revisions")["data"][0]["number"]
    paths += ["/api/v1/stats/history?service=web", f"/api/v1/services/{service}", f"/api/v1/services/{service}/backends", f"/api/v1/revisions/{revision}", "/api/v1/openapi.json"]
    token = node.post("/tokens", {"name": "scrape"}, expect=201)["token"]
    bodies = {}
    for path in paths:
        headers = {"Authorization": f"Bearer {token}"} if path == "/metrics" else {}
        response = node.http.get(path, headers=headers)
        assert response.status_code == 200, (path, response.status_code, response.text)
        bodies[path] = response.text
    return bodies


def test_the_pair_key_is_in_no_answer_event_audit_entry_or_log_and_its_database_is_private(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        alpha.post("/services", WEB, expect=201)
        alpha.commit("web")
        pair(alpha, beta)
        beta.login("admin")  # alpha's accounts replaced beta's
        wait_until(
            lambda: alpha.ha_status()["sync"]["state"] == "in_sync" == beta.ha_status()["sync"]["state"],
            WAIT_DEADLINE,
            what="the pair in sync",
        )
        key = alpha.sql("SELECT key FROM ha_pairing")[0][0]
        assert beta.sql("SELECT key FROM ha_pairing")[0][0] == key
        forms = {key, key.upper(), base64.b64encode(bytes.fromhex(key)).decode()}

        for node in (alpha, beta):
            for path, body in every_get(node).items():
                assert not any(form in body for form in forms), f"{node.name} {path} shows the pair key"
            # The peer endpoints, asked as the peer would (signed): status and the configuration.
            for path in ("/api/v1/peer/status", "/api/v1/peer/config"):
                headers = peer_auth.sign_request(bytes.fromhex(key), "peer", "GET", path, b"").as_dict()
                response = httpx.get(f"{node.url}{path}", headers=headers)
                assert response.status_code == 200, response.text
                assert not any(form in response.text for form in forms), f"{node.name} {path} shows the pair key"
            events = json.dumps(node.sql("SELECT * FROM events"), default=str)
            audit = json.dumps(node.sql("SELECT * FROM audit_log"), default=str)
            assert key not in events and key not in audit
            assert not any(form in (node.data / "api.log").read_text() for form in forms)
            # The database, and SQLite's files beside it, are the API user's alone.
            for file in node.data.glob("fulcrum.db*"):
                assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
