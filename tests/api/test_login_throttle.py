"""The login throttle counts failures per account and per address, in the database: another
account's success never resets it, a restart does not either, and admins see and lift lockouts."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from apitest import PASSWORD, login_as, serve
from fulcrum.main import create_app
from fulcrum.settings import Settings

WRONG = "not the password"


def _login(client: TestClient | httpx.Client, username: str, password: str) -> int:
    return client.post("/api/v1/auth/login", json={"username": username, "password": password}).status_code


def test_a_valid_login_as_another_user_buys_no_more_guesses(client: TestClient) -> None:
    login_as(client, "vera", "viewer")
    attacker = TestClient(client.app, base_url="http://testserver")
    admin_answers = []
    for _ in range(4):  # the audit's attack: 4 wrong admin passwords, then a viewer login they know
        admin_answers += [_login(attacker, "admin", WRONG) for _ in range(4)]
        _login(attacker, "vera", PASSWORD)
    assert admin_answers == [401] * 5 + [429] * 11, admin_answers


def test_a_success_clears_only_its_own_account(client: TestClient) -> None:
    login_as(client, "vera", "viewer")
    user = TestClient(client.app, base_url="http://testserver")
    assert [_login(user, "vera", WRONG) for _ in range(4)] == [401] * 4
    assert _login(user, "vera", PASSWORD) == 200
    assert [_login(user, "vera", WRONG) for _ in range(4)] == [401] * 4  # counting again from 0
    assert _login(user, "vera", WRONG) == 401
    assert _login(user, "vera", PASSWORD) == 429  # locked now, even for the right password


def test_accounts_are_throttled_across_addresses_and_addresses_across_accounts(client: TestClient) -> None:
    login_as(client, "vera", "viewer")
    with serve(client.app) as url:

        def attempt(address: str, username: str, password: str = WRONG) -> int:
            with httpx.Client(base_url=url, timeout=30, transport=httpx.HTTPTransport(local_address=address)) as http:
                return _login(http, username, password)

        # A distributed guesser: each try from another address, all at the admin account.
        assert [attempt(f"127.0.2.{i}", "admin") for i in range(1, 6)] == [401] * 5
        assert attempt("127.0.2.6", "admin") == 429
        # One address trying many names.
        assert [attempt("127.0.3.1", f"name{i}") for i in range(5)] == [401] * 5
        assert attempt("127.0.3.1", "vera", PASSWORD) == 429
        assert attempt("127.0.3.2", "vera", PASSWORD) == 200  # another address is not held up


def test_the_throttle_survives_a_restart(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, apply_mode="local", cookie_secure=False, stats_interval=0, ha_sync_interval=0)
    with TestClient(create_app(settings)) as first:
        assert first.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).status_code == 201
        assert [_login(first, "admin", WRONG) for _ in range(5)] == [401] * 5
        assert _login(first, "admin", WRONG) == 429
    with TestClient(create_app(settings)) as restarted:
        refused = restarted.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        assert refused.status_code == 429
        assert "too many failed logins" in refused.json()["detail"]


def test_admins_see_locked_accounts_and_unlock_them(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    otto = next(u for u in client.get("/api/v1/users").json()["data"] if u["username"] == "otto")
    assert otto["failed_logins"] == 0 and otto["locked_until"] is None
    guesser = TestClient(client.app, base_url="http://testserver")
    assert [_login(guesser, "otto", WRONG) for _ in range(5)] == [401] * 5
    assert _login(guesser, "otto", PASSWORD) == 429

    otto = next(u for u in client.get("/api/v1/users").json()["data"] if u["username"] == "otto")
    assert otto["failed_logins"] == 5 and otto["locked_until"] is not None
    assert operator.post(f"/api/v1/users/{otto['id']}/unlock").status_code == 403
    unlocked = client.post(f"/api/v1/users/{otto['id']}/unlock")
    assert unlocked.status_code == 200, unlocked.text
    assert unlocked.json()["failed_logins"] == 0 and unlocked.json()["locked_until"] is None
    assert _login(guesser, "otto", PASSWORD) == 200
    assert any(e["action"] == "user.unlock" and e["target"] == "otto" for e in client.get("/api/v1/audit").json()["data"])
    assert client.post("/api/v1/users/999999/unlock").status_code == 404
