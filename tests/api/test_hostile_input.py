"""Requests a client controls must never cost the appliance much or answer 5xx: bodies are
bounded, 422s do not echo what was sent, and numbers beyond SQLite's integers are refused."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from fulcrum.routers.params import DEFAULT_MAX_BODY, MiB

BIG_ID = 2**63


def test_a_body_announced_too_large_is_refused_before_it_is_read(anon: TestClient) -> None:
    body = b'{"username": "admin", "password": "' + b"x" * (20 * MiB) + b'"}'
    response = anon.post("/api/v1/auth/login", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.text == "Content Too Large"  # Starlette's own answer when the length is announced


def test_a_streamed_body_is_cut_off_at_the_limit(anon: TestClient) -> None:


    def chunks():  # no Content-Length: the middleware has to count
        yield b'{"username": "admin", "password": "'
        for _ in range(64):
            yield b"x" * (64 * 1024)
        yield b'"}'

    response = anon.post("/api/v1/auth/login", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {"detail": "Content Too Large"}


def test_a_route_can_accept_more_than_the_default(client: TestClient) -> None:
    backends = [{"address": f"198.51.{i // 250}.{i % 250 + 1}", "description": "b" * 150} for i in range(8000)]
    body = json.dumps({"name": "bulk", "address": "192.0.2.10", "ports": [80], "backends": backends})
    assert len(body) > DEFAULT_MAX_BODY
    created = client.post("/api/v1/services", content=body, headers={"Content-Type": "application/json"})
    assert created.status_code == 201, created.text[:300]
    assert len(created.json()["backends"]) == 8000
    assert client.post("/api/v1/vip-groups", content=body, headers={"Content-Type": "application/json"}).status_code == 413


def test_a_validation_error_does_not_echo_the_input(anon: TestClient) -> None:
    response = anon.post("/api/v1/auth/login", json={"username": "admin", "password": "y" * 900_000})
    assert response.status_code == 422
    assert len(response.content) < 2000
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "password"]
    assert "input" not in error and error["type"] == "string_too_long"


def test_a_huge_unknown_field_name_is_not_echoed_in_full(anon: TestClient) -> None:
    response = anon.post("/api/v1/auth/login", json={"username": "a", "password": "b", "k" * 500_000: 1})
    assert response.status_code == 422
    assert len(response.content) < 2000


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_a_body_is_a_422_without_logging_in(anon: TestClient, literal: str) -> None:
    body = '{"username": "admin", "password": %s}' % literal
    response = anon.post("/api/v1/auth/login", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["detail"]] == [["body", "password"]]


def test_nan_as_a_number_is_refused_with_its_field(client: TestClient) -> None:
    body = '{"name": "g", "virtual_router_id": 1, "addresses": ["192.0.2.10/24"], "advert_interval": NaN}'
    response = client.post("/api/v1/vip-groups", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "advert_interval"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/services/{BIG_ID}"),
        ("PATCH", f"/services/{BIG_ID}"),
        ("DELETE", f"/services/{BIG_ID}"),
        ("GET", f"/services/{BIG_ID}/health-check"),
        ("GET", f"/services/1/backends/{BIG_ID}"),
        ("GET", f"/services/{BIG_ID}/backends"),
        ("DELETE", f"/vip-groups/{BIG_ID}"),
        ("PATCH", f"/users/{BIG_ID}"),
        ("DELETE", f"/users/{BIG_ID}"),
        ("DELETE", f"/tokens/{BIG_ID}"),
        ("GET", f"/revisions/{BIG_ID}"),
        ("POST", f"/revisions/{BIG_ID}/confirm"),
        ("GET", f"/revisions?offset={BIG_ID}"),
        ("GET", f"/revisions/diff?from={BIG_ID}"),
        ("GET", f"/events?offset={BIG_ID}"),
        ("GET", f"/audit?offset={BIG_ID}"),
        ("GET", f"/audit?revision={BIG_ID}"),
    ],
)
def test_numbers_beyond_64_bits_are_a_422_naming_the_parameter(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, f"/api/v1{path}", json={} if method in ("PATCH", "POST") else None)
    assert response.status_code == 422, response.text
    locations = [e["loc"] for e in response.json()["detail"]]
    assert any(loc[0] in ("path", "query") and loc[-1] != "body" for loc in locations), locations


@pytest.mark.parametrize("since", ["0.5", "1700000000", "yesterday"])
def test_since_takes_an_iso_time_not_a_timestamp(client: TestClient, since: str) -> None:
    for path in ("/api/v1/events", "/api/v1/audit"):
        response = client.get(path, params={"since": since})
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["query", "since"]
    assert client.get("/api/v1/audit", params={"since": "2026-01-31T12:00:00Z"}).status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/peer/config", "/api/v1/backup/restore"])
def test_a_client_hanging_up_mid_body_gets_a_4xx_not_a_server_error(
    client: TestClient, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An HA peer powered off while it pushes, an upload cancelled: the body never arrives.
    (A firmware upload on a host that is not an A/B system is refused before its body is read.)"""
    sent: list[dict] = []
    headers = [(b"host", b"testserver"), (b"content-type", b"application/octet-stream"), (b"content-length", b"4096")]
    headers.append((b"authorization", client.headers["Authorization"].encode()))
    headers.append((b"x-fulcrum-backup-passphrase", b"a backup passphrase"))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
        "client": ("192.0.2.9", 40000), "server": ("testserver", 80),
    }
    arrived = iter([{"type": "http.request", "body": b"\x00" * 100, "more_body": True}])

    async def receive() -> dict:
        return next(arrived, {"type": "http.disconnect"})

    async def send(message: dict) -> None:
        sent.append(message)

    async def call() -> None:
        await client.app(scope, receive, send)  # type: ignore[arg-type]

    assert client.portal is not None  # the app's own event loop (the client's lifespan)
    client.portal.call(call)
    start = next(message for message in sent if message["type"] == "http.response.start")
    assert start["status"] == 400, sent
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text, caplog.text


@pytest.mark.parametrize("path", ["/api/v1/ha/pair", "/api/v1/cluster/members"])
@pytest.mark.parametrize(
    "url",
    ["http://lb2:99999", "http://lb2:0", "http://[zz", "http://[::1", "http://lb2:80:80", "http://[lb2]:80",
     f"http://{'a' * 64}.example", "http://lb2..example"],
)
def test_an_address_urllib_cannot_use_is_a_422_at_its_field(client: TestClient, path: str, url: str) -> None:
    """The URL pattern lets these through; each was a 500 (urllib's ValueError, the resolver's
    UnicodeError) before it was checked."""
    for field in ("peer_url", "local_url"):
        body = {"peer_url": "http://192.0.2.2", "code": "AAAA-BBBB-CCCC", field: url}
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        [error] = response.json()["detail"]
        assert error["loc"] == ["body", field] and "not a usable address" in error["msg"], error
