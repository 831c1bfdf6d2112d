"""Console access (/node/console): the setting that makes the console menu ask for a password.

The API writes the shadow-style file the console menu reads; these tests check it with the
console menu's own code (overlay/usr/lib/fulcrum/console-menu, loaded as a module) and the real
`openssl passwd`, so the two sides are proven to agree on the format.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from fastapi.testclient import TestClient

from fulcrum.settings import Settings

from apitest import login_as

CONSOLE_MENU = Path(__file__).resolve().parents[2] / "overlay/usr/lib/fulcrum/console-menu"
SECRET = "console passphrase 7"


@pytest.fixture
def password_file(settings: Settings) -> Iterator[Path]:
    """The file lives beside the (session-wide) database, outside the rolled-back transaction."""
    path = settings.console_password_file
    assert path is not None
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def console_menu(password_file: Path) -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("console_menu", str(CONSOLE_MENU))
    spec = importlib.util.spec_from_loader("console_menu", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.CONSOLE_PASSWORD = password_file  # the appliance's is /data/fulcrum/console-password
    return module


def test_off_by_default_and_visible_to_viewers(client: TestClient, password_file: Path) -> None:
    viewer = login_as(client, "vera", "viewer")
    answer = viewer.get("/api/v1/node/console")
    assert answer.status_code == 200
    assert answer.json() == {"password_required": False, "changed_at": None}


def test_turning_it_on_stores_only_a_hash_the_console_accepts(client: TestClient, password_file: Path, console_menu: ModuleType) -> None:
    answer = client.put("/api/v1/node/console", json={"password_required": True, "password": SECRET})
    assert answer.status_code == 200, answer.text
    assert answer.json()["password_required"] is True and answer.json()["changed_at"]
    assert client.get("/api/v1/node/console").json()["password_required"] is True

    stored = password_file.read_text()
    assert SECRET not in stored and stored.startswith("$6$") and stored.count("\n") == 1
    assert password_file.stat().st_mode & 0o777 == 0o600
    expected = console_menu.required_password_hash()
    assert expected == stored.strip()
    assert console_menu.password_matches(SECRET, expected)
    assert not console_menu.password_matches(SECRET + " ", expected)
    assert not console_menu.password_matches("console passphrase 8", expected)


def test_turning_it_off_removes_the_file_and_the_console_is_open(client: TestClient, password_file: Path, console_menu: ModuleType) -> None:
    assert client.put("/api/v1/node/console", json={"password_required": True, "password": SECRET}).status_code == 200
    answer = client.put("/api/v1/node/console", json={"password_required": False})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"password_required": False, "changed_at": None}
    assert not password_file.exists()
    assert console_menu.required_password_hash() is None


def test_keeping_it_on_without_a_password_keeps_the_old_one_and_a_new_one_replaces_it(client: TestClient, password_file: Path, console_menu: ModuleType) -> None:
    assert client.put("/api/v1/node/console", json={"password_required": True, "password": SECRET}).status_code == 200
    first = password_file.read_text()
    assert client.put("/api/v1/node/console", json={"password_required": True}).status_code == 200
    assert password_file.read_text() == first
    assert client.put("/api/v1/node/console", json={"password_required": True, "password": "another passphrase"}).status_code == 200
    expected = console_menu.required_password_hash()
    assert console_menu.password_matches("another passphrase", expected)
    assert not console_menu.password_matches(SECRET, expected)


def test_a_damaged_file_keeps_the_console_locked(password_file: Path, console_menu: ModuleType) -> None:
    password_file.write_text("root::0:0\n")  # e.g. an empty password field: never "no password"
    expected = console_menu.required_password_hash()
    assert expected is not None
    assert not console_menu.password_matches("", expected)
    password_file.unlink()
    password_file.symlink_to("/etc/hostname")  # not followed: locked, nothing read through it
    assert console_menu.required_password_hash() == ""


def test_only_an_admin_changes_it(client: TestClient, password_file: Path) -> None:
    for name, role in (("vera", "viewer"), ("otto", "operator")):
        other = login_as(client, name, role)
        refused = other.put("/api/v1/node/console", json={"password_required": True, "password": SECRET})
        assert refused.status_code == 403, (role, refused.text)
    assert not password_file.exists()
    anonymous = TestClient(client.app, base_url="http://testserver")
    assert anonymous.get("/api/v1/node/console").status_code == 401
    assert anonymous.put("/api/v1/node/console", json={"password_required": False}).status_code == 401


def test_changes_are_audited_without_the_password(client: TestClient, password_file: Path) -> None:
    client.put("/api/v1/node/console", json={"password_required": True, "password": SECRET})
    client.put("/api/v1/node/console", json={"password_required": False})
    entries = client.get("/api/v1/audit?action=node.console").json()["data"]
    details = sorted((e["detail"]["password_required"]["after"], e["detail"]["password_changed"], e["username"]) for e in entries)
    assert details == [(False, False, "admin"), (True, True, "admin")]
    assert SECRET not in json.dumps(entries)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"password_required": True}, "password", "set a console password to turn protection on"),
        ({"password_required": False, "password": SECRET}, "password", "only with password_required: true"),
        ({"password_required": True, "password": "short"}, "password", "at least 12 characters"),
        ({"password_required": True, "password": "x" * 257}, "password", "at most 256 characters"),
        ({"password_required": True, "password": "line one\nline two"}, "password", "printable ASCII only"),
        ({"password_required": True, "password": "pässwörd with umlauts"}, "password", "printable ASCII only"),
        ({"password_required": 1, "password": SECRET}, "password_required", "valid boolean"),
        ({"password_required": "true", "password": SECRET}, "password_required", "valid boolean"),
        ({"password_required": True, "password": 123456789012}, "password", "valid string"),
        ({"password_required": True, "password": SECRET, "hash": "$6$x$y"}, "hash", "Extra inputs"),
        ({}, "password_required", "Field required"),
    ],
)
def test_bad_input_is_refused_at_its_field(client: TestClient, password_file: Path, body: dict, field: str, message: str) -> None:
    answer = client.put("/api/v1/node/console", json=body)
    assert answer.status_code == 422, answer.text
    errors = answer.json()["detail"]
    assert any(e["loc"][-1] == field and message in e["msg"] for e in errors), errors
    assert not password_file.exists()
