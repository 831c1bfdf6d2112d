from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from apitest import PASSWORD, login_as
from fulcrum.models import User
from fulcrum.services import auth
from fulcrum.settings import Settings
from lab.passwords import FAST_PASSWORD_HASHING

# The appliance's argon2id cost (argon2-cffi's defaults); the tests run cheaper (lab.passwords).
APPLIANCE_HASHING = {"password_hash_memory_kib": 65536, "password_hash_time_cost": 3, "password_hash_parallelism": 4}
OWASP_FLOOR = {name.removeprefix("FULCRUM_").lower(): int(value) for name, value in FAST_PASSWORD_HASHING.items()}


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


def test_the_unknown_user_hash_costs_what_a_real_one_does(settings: Settings) -> None:
    """A login for a name that does not exist verifies against a dummy hash: with the hasher's
    own parameters it takes as long as a real user's, so the time tells nothing. So with the
    appliance's defaults (its stored dummy) and with the tests' cheaper ones (made at start)."""
    try:
        for costs in (APPLIANCE_HASHING, OWASP_FLOOR):
            configured = settings.model_copy(update=costs)
            auth.configure_password_hashing(configured)
            dummy = auth._passwords.dummy_hash
            real = auth.hash_password("a real password")
            assert dummy.rsplit("$", 2)[0] == real.rsplit("$", 2)[0]  # $argon2id$v=19$m=...,t=...,p=...
            assert f"m={configured.password_hash_memory_kib},t={configured.password_hash_time_cost}," in real
            assert (dummy == auth._DEFAULT_DUMMY_HASH) == (costs == APPLIANCE_HASHING)
    finally:
        auth.configure_password_hashing(settings)


def test_the_appliance_hashes_with_argon2_cffis_defaults_and_no_setting_goes_below_owasps_floor() -> None:
    for name, value in APPLIANCE_HASHING.items():  # the tests' environment sets them: read the defaults
        assert Settings.model_fields[name].default == value, name
    for name, below in (("password_hash_memory_kib", 19455), ("password_hash_time_cost", 1),
                        ("password_hash_parallelism", 0)):  # fmt: skip
        with pytest.raises(ValidationError, match=name):
            Settings(_env_file=None, **{name: below})


def test_a_password_stored_at_another_cost_still_logs_in_and_is_stored_again_at_this_one(
    client: TestClient, session: Session, settings: Settings
) -> None:
    auth.configure_password_hashing(settings.model_copy(update=OWASP_FLOOR))
    try:
        costly = PasswordHasher(memory_cost=65536, time_cost=3, parallelism=4).hash(PASSWORD)
        session.execute(update(User).where(User.username == "admin").values(password_hash=costly))
        session.commit()  # releases the test transaction's savepoint: a login starts with a rollback
        assert client.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD}).status_code == 200
        session.expire_all()
        stored = session.scalar(select(User.password_hash).where(User.username == "admin"))
        assert stored != costly and auth.verify_password(stored, PASSWORD)
        assert "$m=19456,t=2,p=1$" in stored, stored
    finally:  # the hasher is the process's: the next test gets the suite's again
        auth.configure_password_hashing(settings)
