"""Backup and restore between separate API instances, each with its own data directory and SQLite
file (the backup copies the database file with SQLite's backup API, so these tests do not use the
rolled-back test transaction of the other API tests), and the real apply engine in each."""

from __future__ import annotations

import json
import logging
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from apitest import PASSWORD, WEB
from lab.ssh_keys import host_keys
from test_tls_certificate import install_self_signed
from fulcrum import migrate
from fulcrum.backup import archive, crypto
from fulcrum.backup.restore import RESTORED
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.db import Base
from fulcrum.main import create_app
from fulcrum.services.auth import hash_password
from fulcrum.settings import Settings

PASSPHRASE = "a long passphrase for the backup"
HEADER = "X-Fulcrum-Backup-Passphrase"


class Appliance:
    def __init__(self, root: Path, name: str, tls: bool = False) -> None:
        self.data = root / name
        self.data.mkdir(parents=True)
        certfile, keyfile = install_self_signed(self.data) if tls else (None, None)
        self.settings = Settings(
            tls_certfile=certfile,
            tls_keyfile=keyfile,
            data_dir=self.data,
            apply_mode="local",
            cookie_secure=False,
            reapply_on_start=False,
            stats_interval=0,
            alert_poll_seconds=0,
            ha_sync_interval=0,
            ssh_host_key_dir=root / name / "ssh",
        )
        self.app = create_app(self.settings)
        self.client = TestClient(self.app, base_url="http://testserver")

    def log_in(self, username: str = "admin", password: str = PASSWORD) -> TestClient:
        response = self.client.post("/api/v1/auth/login", json={"username": username, "password": password})
        assert response.status_code == 200, response.text
        self.client.headers["Authorization"] = f"Bearer {response.json()['token']}"
        return self.client


@pytest.fixture
def appliances(tmp_path: Path) -> Iterator[tuple[Appliance, Appliance]]:
    first, second = Appliance(tmp_path, "lb-old"), Appliance(tmp_path, "lb-new")
    with first.client, second.client:
        yield first, second


def set_up(appliance: Appliance) -> TestClient:
    created = appliance.client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD})
    assert created.status_code == 201, created.text
    return appliance.log_in()


def configured(appliance: Appliance) -> TestClient:
    """An admin, an operator, an API token, a service committed as revision 1 and a change as 2."""
    client = set_up(appliance)
    created = client.post("/api/v1/services", json=WEB)
    assert created.status_code == 201
    assert client.post("/api/v1/revisions", json={"message": "web"}).status_code == 201
    user = {"username": "ops", "password": PASSWORD, "role": "operator"}
    assert client.post("/api/v1/users", json=user).status_code == 201
    backend = {"address": "198.51.100.3"}
    assert client.post(f"/api/v1/services/{created.json()['id']}/backends", json=backend).status_code == 201
    assert client.post("/api/v1/revisions", json={"message": "third backend"}).status_code == 201
    return client


def export(client: TestClient, passphrase: str = PASSPHRASE, **extra: object) -> bytes:
    response = client.post("/api/v1/backup", json={"passphrase": passphrase, **extra})
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"].startswith('attachment; filename="fulcrum-')
    return response.content


def restore_fresh(appliance: Appliance, backup: bytes, passphrase: str = PASSPHRASE, expect: int = 201) -> dict:
    response = appliance.client.post(
        "/api/v1/setup/restore",
        content=backup,
        headers={HEADER: quote(passphrase), "Content-Type": "application/octet-stream"},
    )
    assert response.status_code == expect, response.text
    return response.json()


def reapplied(client: TestClient) -> tuple[str, str]:
    entries = client.get("/api/v1/audit").json()["data"]
    entry = next(e for e in entries if e["action"] == "revision.reapply")
    return entry["target"], entry["detail"]["outcome"]


def test_a_backup_restores_on_a_fresh_appliance_which_then_serves_the_same(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    client = configured(old)
    token = client.post("/api/v1/tokens", json={"name": "ci"}).json()["token"]
    backup = export(client)

    result = restore_fresh(new, backup)
    assert result["manifest"]["includes"]["revisions"] == 2
    assert result["manifest"]["includes"]["users"] == 2
    assert result["manifest"]["includes"]["api_tokens"] == 1
    assert result["manifest"]["schema_revision"] == "0007" or result["manifest"]["schema_revision"]
    assert new.client.get("/api/v1/setup").json() == {"needs_setup": False}
    restored = new.log_in()
    for path in ("/api/v1/services", "/api/v1/revisions"):
        assert restored.get(path).json() == client.get(path).json()
    assert new.log_in("ops").get("/api/v1/auth/me").json()["role"] == "operator"
    # The API token made on the old appliance works on the new one: its hash came along.
    assert new.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # And the restored running revision went to the new appliance's data plane (here, without IPVS,
    # through the real validators: keepalived -t and nft -c).
    assert reapplied(restored) == ("revision 2", "validated")


def test_a_second_first_run_restore_is_refused(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    backup = export(configured(old))
    restore_fresh(new, backup)
    refused = restore_fresh(new, backup, expect=409)
    assert "setup is already done" in refused["detail"]
    assert restore_fresh(old, backup, expect=409)


def test_a_wrong_passphrase_is_named_and_changes_nothing(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    backup = export(configured(old))
    refused = restore_fresh(new, backup, passphrase="not the passphrase", expect=400)
    assert refused["code"] == "wrong_passphrase" and "wrong passphrase" in refused["detail"]
    assert new.client.get("/api/v1/setup").json() == {"needs_setup": True}


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda b: b[: len(b) - 100], "truncated"),
        (lambda b: b[: crypto.HEADER_SIZE + 20], "truncated"),
        (lambda b: b[:5], "not_a_backup"),
        (lambda b: b[:-50] + bytes([b[-50] ^ 1]) + b[-49:], "tampered"),
        (lambda b: b + b"more", "tampered"),
        (lambda b: b"NOTABACKUP" + b[10:], "not_a_backup"),
        (lambda b: b[:8] + bytes([crypto.FORMAT + 1]) + b[9:], "newer_format"),
        (lambda b: b[:12] + bytes([b[12] ^ 1]) + b[13:], "wrong_passphrase"),  # the salt: a changed header
    ],
    ids=["cut", "cut-in-header", "too-short", "flipped-byte", "appended", "foreign", "newer", "header-changed"],
)
def test_a_damaged_backup_is_refused_naming_the_cause(appliances, damage, code) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    backup = export(configured(old))
    refused = restore_fresh(new, damage(backup), expect=400)
    assert refused["code"] == code, refused
    assert new.client.get("/api/v1/setup").json() == {"needs_setup": True}


def test_restoring_on_a_running_appliance_makes_a_candidate_with_a_plan(appliances) -> None:  # type: ignore[no-untyped-def]
    old, _ = appliances
    client = configured(old)
    backup = export(client)
    assert client.delete("/api/v1/services/1").status_code == 204
    assert client.post("/api/v1/revisions", json={"message": "web gone"}).status_code == 201

    response = client.post(
        "/api/v1/backup/restore",
        content=backup,
        headers={HEADER: quote(PASSPHRASE), "Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["changes"]["has_changes"] is True
    assert "198.51.100.3" in result["changes"]["text"]
    assert result["sessions_ended"] is False
    # Nothing is applied until the admin commits the candidate through the usual review.
    assert client.get("/api/v1/revisions").json()["count"] == 3
    assert client.get("/api/v1/changes").json()["has_changes"] is True
    committed = client.post("/api/v1/revisions", json={"message": "restored"})
    assert committed.status_code == 201, committed.text
    assert committed.json()["number"] == 4
    assert [s["name"] for s in client.get("/api/v1/services").json()["data"]] == ["web"]


def test_restoring_accounts_on_a_running_appliance_replaces_them_and_ends_sessions(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    backup = export(configured(old))
    client = set_up(new)
    assert client.post("/api/v1/users", json={"username": "other", "password": PASSWORD, "role": "viewer"}).status_code == 201
    response = client.post(
        "/api/v1/backup/restore?users=true",
        content=backup,
        headers={HEADER: quote(PASSPHRASE), "Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["sessions_ended"] is True
    assert client.get("/api/v1/auth/me").status_code == 401
    users = [u["username"] for u in new.log_in().get("/api/v1/users").json()["data"]]
    assert users == ["admin", "ops"]


def test_only_an_admin_may_export_or_restore(appliances) -> None:  # type: ignore[no-untyped-def]
    old, _ = appliances
    client = configured(old)
    backup = export(client)
    assert client.post("/api/v1/users", json={"username": "eve", "password": PASSWORD, "role": "viewer"}).status_code == 201
    for name in ("ops", "eve"):
        other = TestClient(old.app, base_url="http://testserver")
        token = other.post("/api/v1/auth/login", json={"username": name, "password": PASSWORD}).json()["token"]
        other.headers["Authorization"] = f"Bearer {token}"
        assert other.post("/api/v1/backup", json={"passphrase": PASSPHRASE}).status_code == 403
        restore = other.post(
            "/api/v1/backup/restore", content=backup,
            headers={HEADER: quote(PASSPHRASE), "Content-Type": "application/octet-stream"},
        )  # fmt: skip
        assert restore.status_code == 403
    anonymous = TestClient(old.app, base_url="http://testserver")
    assert anonymous.post("/api/v1/backup", json={"passphrase": PASSPHRASE}).status_code == 401


def test_a_short_passphrase_is_refused_at_its_field(appliances) -> None:  # type: ignore[no-untyped-def]
    old, _ = appliances
    response = set_up(old).post("/api/v1/backup", json={"passphrase": "short"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "passphrase"]


def test_secrets_never_appear_in_responses_logs_or_the_audit(appliances, caplog) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    caplog.set_level(logging.DEBUG)
    client = configured(old)
    backup = export(client)
    assert PASSPHRASE.encode() not in backup and b"198.51.100.1" not in backup
    answers = [json.dumps(restore_fresh(new, backup))]
    answers.append(json.dumps(restore_fresh(new, backup, passphrase="wrong passphrase!", expect=400)))
    audit = new.log_in().get("/api/v1/audit").text + client.get("/api/v1/audit").text
    assert "backup.export" in audit and "backup.restore" in audit
    password_hash = sqlite3.connect(old.data / "fulcrum.db").execute("SELECT password_hash FROM users").fetchone()[0]
    for text in (*answers, audit, caplog.text):
        assert PASSPHRASE not in text and quote(PASSPHRASE) not in text
        assert password_hash not in text


def test_the_pair_key_is_in_a_backup_only_when_asked(appliances, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old, _ = appliances
    client = configured(old)
    with sqlite3.connect(old.data / "fulcrum.db") as db:
        db.execute(
            "INSERT INTO ha_pairing (id, peer_name, peer_url, key, paired_at, initiator) "
            "VALUES (1, 'lb2', 'http://192.0.2.2', ?, '2026-11-24 00:00:00', 1)",
            ("ab" * 32,),
        )
    for include in (False, True):
        backup = export(client, include_pair_key=include)
        plain = tmp_path / "plain"
        with tempfile.TemporaryFile() as source, plain.open("wb") as target:
            source.write(backup)
            source.seek(0)
            crypto.decrypt(source, len(backup), PASSPHRASE, target)
        with plain.open("rb") as unpacked_file, archive.unpacked(unpacked_file) as unpacked:
            assert unpacked.manifest.includes.pair_key is include
            raw = unpacked.database.read_bytes()
            keys = sqlite3.connect(unpacked.database).execute("SELECT key FROM ha_pairing").fetchall()
            sessions = sqlite3.connect(unpacked.database).execute(
                "SELECT count(*) FROM auth_tokens WHERE kind = 'session'"
            ).fetchone()[0]
        assert keys == ([("ab" * 32,)] if include else [])
        assert (("ab" * 32).encode() in raw) is include  # VACUUM: no deleted copy in free pages
        assert sessions == 0


def test_a_backup_from_an_older_schema_is_migrated_forward(appliances, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, new = appliances
    old_db = tmp_path / "old" / "fulcrum.db"
    old_db.parent.mkdir()
    migrate.upgrade(f"sqlite:///{old_db}", "0003")
    snapshot = ConfigSnapshot.model_validate({"services": [WEB]})
    with sqlite3.connect(old_db) as db:
        db.execute(
            "INSERT INTO users (id, username, password_hash, role, disabled, created_at) "
            "VALUES (1, 'admin', ?, 'admin', 0, '2026-11-21 00:00:00')",
            (hash_password(PASSWORD),),
        )
        db.execute(
            "INSERT INTO revisions (number, created_at, author, message, snapshot, digest, state, apply_result) "
            "VALUES (1, '2026-11-21 00:00:00', 'admin', 'old', ?, ?, 'validated', '{}')",
            (snapshot.canonical_json(), snapshot.digest()),
        )
    settings = Settings(data_dir=tmp_path / "old", ssh_host_key_dir=tmp_path / "none")
    with tempfile.TemporaryFile() as plain:
        manifest = archive.write(settings, "lb-2025", False, plain, {}, [])
        assert manifest.schema_revision == "0003"
        size = plain.tell()
        plain.seek(0)
        backup = b"".join(crypto.encrypt(plain, size, PASSPHRASE))

    result = restore_fresh(new, backup)
    assert any("migrated from schema revision 0003" in note for note in result["notes"])
    client = new.log_in()
    assert client.get("/api/v1/revisions").json()["data"][0]["digest"] == snapshot.digest()
    restored = client.get("/api/v1/revisions/1").json()["snapshot"]["services"]
    assert [service["name"] for service in restored] == ["web"]
    assert reapplied(client) == ("revision 1", "validated")


def test_a_backup_from_a_newer_schema_is_refused(appliances, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    set_up(old)
    with sqlite3.connect(old.data / "fulcrum.db") as db:
        db.execute("UPDATE alembic_version SET version_num = '9999'")
    backup = export(old.log_in())
    refused = restore_fresh(new, backup, expect=400)
    assert refused["code"] == "newer_format" and "9999" in refused["detail"]


def test_every_table_is_either_restored_or_left_out_on_purpose() -> None:
    assert set(Base.metadata.tables) == set(RESTORED) | set(archive.NOT_BACKED_UP)


def test_tls_material_and_ssh_host_keys_go_into_the_backup_and_onto_the_fresh_appliance(tmp_path: Path) -> None:
    old, new = Appliance(tmp_path, "lb-old", tls=True), Appliance(tmp_path, "lb-new", tls=True)
    old_keys = host_keys(old.settings.ssh_host_key_dir, "ed25519", "ecdsa")
    (old.settings.ssh_host_key_dir / "authorized_keys").write_text("ssh-ed25519 AAAA admin\n")  # not a host key
    own_keys = host_keys(new.settings.ssh_host_key_dir, "ed25519")
    with old.client, new.client:
        backup = export(configured(old))
        result = restore_fresh(new, backup)
        includes = result["manifest"]["includes"]
        assert includes["tls"] is True
        assert includes["ssh_host_keys"] == sorted(old_keys)
        # The served certificate is the old appliance's now, and so are the SSH host keys.
        assert new.settings.tls_certfile.read_text() == old.settings.tls_certfile.read_text()
        assert new.settings.tls_keyfile.read_text() == old.settings.tls_keyfile.read_text()
        assert any(note.startswith("SSH host keys: installed ssh_host_ed25519_key, ssh_host_ecdsa_key")
                   for note in result["notes"]), result["notes"]  # fmt: skip
        installed = {p.name: p.read_text() for p in new.settings.ssh_host_key_dir.iterdir()}
        assert installed == old_keys and installed != own_keys
        served = new.log_in().get("/api/v1/tls/certificate").json()["fingerprint_sha256"]
        assert served == old.client.get("/api/v1/tls/certificate").json()["fingerprint_sha256"]


def test_a_running_appliance_takes_the_backups_ssh_host_keys_only_when_asked(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    old_keys = host_keys(old.settings.ssh_host_key_dir, "ed25519")
    own_keys = host_keys(new.settings.ssh_host_key_dir, "ed25519")
    backup = export(configured(old))
    client = set_up(new)

    def restore(query: str) -> dict:  # type: ignore[type-arg]
        response = client.post(
            f"/api/v1/backup/restore{query}", content=backup,
            headers={HEADER: quote(PASSPHRASE), "Content-Type": "application/octet-stream"},
        )  # fmt: skip
        assert response.status_code == 200, response.text
        return response.json()

    def keys() -> dict[str, str]:
        return {p.name: p.read_text() for p in new.settings.ssh_host_key_dir.iterdir()}

    restore("")
    assert keys() == own_keys, "a restore not asked for the SSH host keys replaced them"
    result = restore("?ssh=true")
    assert keys() == old_keys
    assert any(note.startswith("SSH host keys: installed ssh_host_ed25519_key") for note in result["notes"])
    audit = client.get("/api/v1/audit").json()["data"]
    assert [e["detail"]["ssh"] for e in audit if e["action"] == "backup.restore"] == [True, False]


def test_host_keys_sshd_could_not_use_are_not_installed_and_the_restore_says_so(appliances, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    keys = host_keys(old.settings.ssh_host_key_dir, "ed25519")
    other = host_keys(tmp_path / "elsewhere", "ed25519")
    (old.settings.ssh_host_key_dir / "ssh_host_ed25519_key.pub").write_text(other["ssh_host_ed25519_key.pub"])
    own_keys = host_keys(new.settings.ssh_host_key_dir, "ed25519")
    backup = export(configured(old))
    result = restore_fresh(new, backup)
    assert any("SSH host keys were not installed: ssh_host_ed25519_key.pub is not the public key" in note
               for note in result["notes"]), result["notes"]  # fmt: skip
    assert {p.name: p.read_text() for p in new.settings.ssh_host_key_dir.iterdir()} == own_keys
    assert keys["ssh_host_ed25519_key"] != own_keys["ssh_host_ed25519_key"]
    assert new.log_in().get("/api/v1/services").json()["count"] == 1, "the rest of the restore did not happen"




def test_host_keys_the_helper_cannot_read_are_skipped_and_named(appliances) -> None:  # type: ignore[no-untyped-def]
    old, new = appliances
    old.settings.ssh_host_key_dir.mkdir()
    (old.settings.ssh_host_key_dir / "ssh_host_ed25519_key").write_bytes(b"\xff not a key\n")
    result = restore_fresh(new, export(configured(old)))
    manifest = result["manifest"]
    assert manifest["includes"]["ssh_host_keys"] == []
    assert any(s.startswith("SSH host keys: the apply helper did not hand them over") for s in manifest["skipped"]), manifest
    assert "the backup has no SSH host keys: this node keeps its own" in result["notes"]
