"""What the dashboard's account screens rely on: changing your own password, deleting users, and
knowing the address the appliance sees you at (what the management firewall matches)."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from apitest import PASSWORD, login_as, serve

NEW_PASSWORD = "a brand new passphrase"


def test_changing_your_own_password_needs_the_current_one(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    wrong = operator.post("/api/v1/auth/password", json={"current_password": "not my password", "new_password": NEW_PASSWORD})
    # A 422 at the field: the session stays valid (a 401 would read as "signed out").
    assert wrong.status_code == 422
    assert wrong.json()["detail"] == [{"loc": ["body", "current_password"], "msg": "the current password is wrong", "type": "value_error"}]
    assert operator.get("/api/v1/auth/me").status_code == 200
    short = operator.post("/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": "short"})
    assert short.status_code == 422 and short.json()["detail"][0]["loc"] == ["body", "new_password"]

    assert operator.post("/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD}).status_code == 204
    fresh = TestClient(client.app, base_url="http://testserver")
    assert fresh.post("/api/v1/auth/login", json={"username": "otto", "password": PASSWORD}).status_code == 401
    assert fresh.post("/api/v1/auth/login", json={"username": "otto", "password": NEW_PASSWORD}).status_code == 200
    assert any(e["action"] == "user.password" and e["target"] == "otto" for e in client.get("/api/v1/audit").json()["data"])


def test_a_stolen_session_cannot_guess_the_password_faster_than_the_login_page(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    guess = {"current_password": "a guess", "new_password": NEW_PASSWORD}
    answers = [operator.post("/api/v1/auth/password", json=guess).status_code for _ in range(7)]
    # The same five free tries as a login, then the wait; the session itself stays valid.
    assert answers == [422] * 5 + [429] * 2
    assert operator.get("/api/v1/auth/me").status_code == 200
    # Even the right password waits now, and the login page shares the count.
    right = {"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    assert operator.post("/api/v1/auth/password", json=right).status_code == 429
    fresh = TestClient(client.app, base_url="http://testserver")
    assert fresh.post("/api/v1/auth/login", json={"username": "otto", "password": PASSWORD}).status_code == 429
    failures = [e for e in client.get("/api/v1/audit").json()["data"] if e["action"] == "user.password"]
    assert len(failures) == 5 and not any(e["success"] for e in failures)


def _second_session_and_a_token(client: TestClient, username: str) -> tuple[TestClient, TestClient]:
    other = TestClient(client.app, base_url="http://testserver")
    other.headers["Authorization"] = "Bearer " + other.post("/api/v1/auth/login", json={"username": username, "password": PASSWORD}).json()["token"]
    secret = other.post("/api/v1/tokens", json={"name": "script"}).json()["token"]
    script = TestClient(client.app, base_url="http://testserver", headers={"Authorization": f"Bearer {secret}"})
    assert other.get("/api/v1/auth/me").status_code == 200 and script.get("/api/v1/auth/me").status_code == 200
    return other, script


def test_changing_your_password_signs_out_your_other_sessions_and_tokens(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    other_browser, script = _second_session_and_a_token(client, "otto")
    changed = operator.post("/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD})
    assert changed.status_code == 204
    assert operator.get("/api/v1/auth/me").status_code == 200  # this session stays by default
    assert other_browser.get("/api/v1/auth/me").status_code == 401
    assert script.get("/api/v1/auth/me").status_code == 401
    entry = next(e for e in client.get("/api/v1/audit").json()["data"] if e["action"] == "user.password")
    assert entry["detail"] == {"revoked_tokens": 2, "kept_this_session": True}


def test_changing_your_password_can_sign_out_this_session_too(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    other_browser, script = _second_session_and_a_token(client, "otto")
    body = {"current_password": PASSWORD, "new_password": NEW_PASSWORD, "keep_this_session": False}
    assert operator.post("/api/v1/auth/password", json=body).status_code == 204
    for signed_out in (operator, other_browser, script):
        assert signed_out.get("/api/v1/auth/me").status_code == 401


def test_keep_this_session_must_be_a_boolean(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    refused = operator.post("/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD, "keep_this_session": 0})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "keep_this_session"]


def test_an_admin_resets_another_users_password_and_their_sessions_end(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    other_browser, script = _second_session_and_a_token(client, "otto")
    user_id = operator.get("/api/v1/auth/me").json()["id"]
    assert client.patch(f"/api/v1/users/{user_id}", json={"password": NEW_PASSWORD}).status_code == 200
    assert operator.get("/api/v1/auth/me").status_code == 401
    assert other_browser.get("/api/v1/auth/me").status_code == 401
    assert script.get("/api/v1/auth/me").status_code == 401  # API tokens end too: the old password may be known
    fresh = TestClient(client.app, base_url="http://testserver")
    assert fresh.post("/api/v1/auth/login", json={"username": "otto", "password": NEW_PASSWORD}).status_code == 200


def test_an_admin_deletes_another_user_but_not_themselves(client: TestClient) -> None:
    second_admin = login_as(client, "ada", "admin")
    me = client.get("/api/v1/auth/me").json()["id"]
    refused = client.delete(f"/api/v1/users/{me}")
    assert refused.status_code == 403 and "your own account" in refused.json()["detail"]
    assert second_admin.delete(f"/api/v1/users/{me}").status_code == 204
    assert [u["username"] for u in second_admin.get("/api/v1/users").json()["data"]] == ["ada"]


def test_me_reports_the_address_the_appliance_sees(client: TestClient) -> None:
    token = client.post("/api/v1/tokens", json={"name": "probe"}).json()["token"]
    with serve(client.app) as url:
        me = httpx.get(f"{url}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert me.status_code == 200
    assert me.json()["client_address"] == "127.0.0.1"
