"""CSRF: with the session cookie, a change must come from the dashboard's own origin. These are
the audit's three cross-site requests, refused, and the requests that must keep working."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from apitest import PASSWORD, WEB, serve

EVIL = "https://evil.example"


def _browser(client: TestClient, **headers: str) -> TestClient:
    """A client that, like a browser, holds only the session cookie (no Authorization header)."""
    browser = TestClient(client.app, base_url="http://testserver", headers=headers)
    assert browser.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD}).status_code == 200
    return browser


def test_cross_site_json_create_and_delete_are_refused(client: TestClient) -> None:
    evil = _browser(client, Origin=EVIL)
    refused = evil.post("/api/v1/services", json=WEB)
    assert refused.status_code == 403
    assert "cross-site request refused" in refused.json()["detail"] and EVIL in refused.json()["detail"]
    service = client.post("/api/v1/services", json=WEB).json()["id"]
    assert evil.delete(f"/api/v1/services/{service}").status_code == 403
    assert client.get(f"/api/v1/services/{service}").status_code == 200  # still there
    assert client.get("/api/v1/services").json()["count"] == 1


def test_a_bodyless_cross_site_form_post_is_refused(client: TestClient) -> None:
    evil = _browser(client, Origin=EVIL)
    refused = evil.post("/api/v1/ha/pairing-code", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert refused.status_code == 403


def test_sec_fetch_site_cross_site_is_refused_even_with_a_matching_origin(client: TestClient) -> None:
    for site in ("cross-site", "same-site"):
        browser = _browser(client, Origin="http://testserver", **{"Sec-Fetch-Site": site})
        assert browser.post("/api/v1/services", json=WEB).status_code == 403


def test_a_cookie_change_without_origin_is_refused(client: TestClient) -> None:
    bare = _browser(client)
    refused = bare.post("/api/v1/services", json=WEB)
    assert refused.status_code == 403 and "Origin" in refused.json()["detail"]
    assert bare.get("/api/v1/services").status_code == 200  # reads need no Origin


def test_the_dashboards_own_requests_pass(client: TestClient) -> None:
    same_origin = _browser(client, Origin="http://testserver", **{"Sec-Fetch-Site": "same-origin"})
    assert same_origin.post("/api/v1/services", json=WEB).status_code == 201
    only_fetch_metadata = _browser(client, **{"Sec-Fetch-Site": "same-origin"})
    assert only_fetch_metadata.patch("/api/v1/services/1", json={"description": "x"}).status_code == 200
    assert same_origin.post("/api/v1/auth/logout").status_code == 204


def test_bearer_tokens_need_no_origin(client: TestClient) -> None:
    # The fixture's client holds the cookie from setup and sends its token: a script.
    assert client.post("/api/v1/services", json=WEB, headers={"Origin": EVIL}).status_code == 201
    assert client.post("/api/v1/ha/pairing-code").status_code == 201


def test_origin_is_compared_with_the_host_and_port_the_browser_used(client: TestClient) -> None:
    with serve(client.app) as url:
        port = url.rsplit(":", 1)[1]
        with httpx.Client(base_url=url, timeout=30, headers={"Origin": url}) as browser:
            assert browser.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD}).status_code == 200
            assert browser.post("/api/v1/services", json=WEB).status_code == 201
            other_port = browser.post("/api/v1/services", json={**WEB, "name": "web2"}, headers={"Origin": "http://127.0.0.1:1"})
            assert other_port.status_code == 403
            other_scheme = browser.post("/api/v1/services", json={**WEB, "name": "web2"}, headers={"Origin": f"https://127.0.0.1:{port}"})
            assert other_scheme.status_code == 403
            # Behind a forwarded port (the VM's 8443 to the appliance's 443) the Host header
            # and the Origin both carry the port the browser used.
            forwarded = browser.post("/api/v1/services", json={**WEB, "name": "web3", "address": "192.0.2.13"}, headers={"Origin": "http://localhost:8443", "Host": "localhost:8443"})
            assert forwarded.status_code == 201
