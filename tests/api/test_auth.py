from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from apitest import PASSWORD, login_as
from fulcrum.models import User
from fulcrum.services import auth


def test_fresh_appliance_has_no_account_and_no_default_password(anon: TestClient) -> None:
    assert anon.get("/api/v1/setup").json() == {"needs_setup": True}
    for username, password in [("admin", "admin"), ("admin", ""), ("root", "fulcrum")]:
        assert anon.post("/api/v1/auth/login", json={"username": username, "password": password}).status_code == 401
    assert anon.get("/api/v1/services").status_code == 401


def test_setup_creates_an_argon2_admin_once(anon: TestClient, session: Session) -> None:
    first = anon.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD})
    assert first.status_code == 201
    assert first.json()["user"]["role"] == "admin"
    stored = session.scalar(select(User).where(User.username == "admin"))
    assert stored is not None and stored.password_hash.startswith("$argon2id$")
    assert PASSWORD not in stored.password_hash
    again = anon.post("/api/v1/setup", json={"username": "mallory", "password": PASSWORD})
    assert again.status_code == 409
    assert anon.get("/api/v1/setup").json() == {"needs_setup": False}


def test_setup_rejects_a_short_password(anon: TestClient) -> None:
    response = anon.post("/api/v1/setup", json={"username": "admin", "password": "short"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "password"]


def test_login_sets_an_httponly_strict_cookie_that_authenticates(client: TestClient) -> None:
    fresh = TestClient(client.app, base_url="http://testserver", headers={"Origin": "http://testserver"})  # a browser
    response = fresh.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
    assert response.status_code == 200
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert fresh.get("/api/v1/auth/me").json()["username"] == "admin"  # cookie only, no header
    assert fresh.post("/api/v1/auth/logout").status_code == 204
    assert fresh.get("/api/v1/auth/me").status_code == 401


def test_roles_limit_what_each_user_may_do(client: TestClient) -> None:
    viewer = login_as(client, "vera", "viewer")
    operator = login_as(client, "otto", "operator")
    service = {"name": "web", "address": "192.0.2.10", "ports": [80]}
    assert viewer.get("/api/v1/services").status_code == 200
    assert viewer.post("/api/v1/services", json=service).status_code == 403
    assert operator.post("/api/v1/services", json=service).status_code == 201
    assert operator.get("/api/v1/users").status_code == 403
    assert operator.put("/api/v1/firewall", json={"management_allow": ["10.0.0.0/8"]}).status_code == 403
    assert client.get("/api/v1/users").json()["count"] == 3


def test_wrong_password_is_refused_and_audited(client: TestClient) -> None:
    response = client.post("/api/v1/auth/login", json={"username": "admin", "password": "wrong password!"})
    assert response.status_code == 401
    failures = client.get("/api/v1/audit", params={"action": "auth.login"}).json()["data"]
    assert any(not entry["success"] for entry in failures)


def test_repeated_failures_are_throttled(client: TestClient) -> None:
    codes = [
        client.post("/api/v1/auth/login", json={"username": "admin", "password": "wrong password!"}).status_code
        for _ in range(7)
    ]
    assert codes[:5] == [401] * 5
    assert 429 in codes[5:]


def test_api_tokens_work_until_revoked(client: TestClient) -> None:
    created = client.post("/api/v1/tokens", json={"name": "ci script"})
    assert created.status_code == 201
    secret = created.json()["token"]
    assert secret.startswith("ful_")
    scripted = TestClient(client.app, base_url="http://testserver", headers={"Authorization": f"Bearer {secret}"})
    assert scripted.get("/api/v1/services").status_code == 200
    listed = client.get("/api/v1/tokens").json()
    assert listed["count"] == 1 and "token" not in listed["data"][0]
    assert client.delete(f"/api/v1/tokens/{created.json()['id']}").status_code == 204
    assert scripted.get("/api/v1/services").status_code == 401


def test_disabling_a_user_ends_their_sessions(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    user_id = operator.get("/api/v1/auth/me").json()["id"]
    assert client.patch(f"/api/v1/users/{user_id}", json={"disabled": True}).status_code == 200
    assert operator.get("/api/v1/services").status_code == 401


def test_the_last_admin_cannot_be_removed_or_demoted(client: TestClient) -> None:
    me = client.get("/api/v1/auth/me").json()["id"]
    assert client.patch(f"/api/v1/users/{me}", json={"role": "viewer"}).status_code == 403
    assert client.delete(f"/api/v1/users/{me}").status_code == 403


def test_the_unknown_user_hash_costs_what_a_real_one_does() -> None:
    """A login for a name that does not exist verifies against a stored dummy hash: with the
    hasher's own parameters it takes as long as a real user's, so the time tells nothing."""
    stored = auth._DUMMY_HASH
    real = auth.hash_password("a real password")
    assert stored.rsplit("$", 2)[0] == real.rsplit("$", 2)[0]  # $argon2id$v=19$m=...,t=...,p=...
    assert auth.verify_password(stored, "fulcrum-no-such-user")
