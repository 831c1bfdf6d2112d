"""The console's password reset (overlay/usr/lib/fulcrum/reset-password) run for real against a
SQLite database in a temporary directory, while another writer (the API, on the appliance)
commits in the middle of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from fulcrum import migrate
from fulcrum.db import make_engine, make_sessionmaker
from fulcrum.models import AuditEntry, Role, User
from fulcrum.schemas.auth import UserCreate
from fulcrum.services import audit, users
from fulcrum.services.auth import verify_password

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package

from lab.wait import wait_until  # noqa: E402

RESET_PASSWORD = Path(__file__).resolve().parents[3] / "overlay/usr/lib/fulcrum/reset-password"
NEW_PASSWORD = "reset at the console"
READ_SYSCALL = "0"  # x86-64's read(2), as /proc/PID/syscall names it


def add_user(database: str, username: str, role: Role = Role.VIEWER) -> None:
    with make_sessionmaker(make_engine(database))() as session:
        actor = audit.Actor(username="setup", source="test")
        users.create_user(session, actor, UserCreate(username=username, password="a password of 12+", role=role))
        session.commit()


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'fulcrum.db'}"
    migrate.upgrade(url)
    add_user(url, "admin", Role.ADMIN)
    return url


def start(tmp_path: Path, database: str, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FULCRUM_DATA_DIR": str(tmp_path), "FULCRUM_DATABASE_URL": database}
    return subprocess.Popen([sys.executable, str(RESET_PASSWORD), *argv], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def reading_stdin(process: subprocess.Popen[str]) -> bool:
    """The process sits in read(0, ...): it is waiting for the password."""
    fields = Path(f"/proc/{process.pid}/syscall").read_text().split()
    return fields[:2] == [READ_SYSCALL, "0x0"]


def stored_hash(database: str) -> str:
    with make_sessionmaker(make_engine(database))() as session:
        return session.scalars(select(User.password_hash).where(User.username == "admin")).one()


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 syscall numbers from /proc")
def test_a_write_committed_while_the_console_waits_does_not_fail_the_reset(tmp_path: Path, database: str) -> None:
    process = start(tmp_path, database, "admin")
    try:
        wait_until(lambda: reading_stdin(process), 60, what="reset-password to wait for the password")
        # The API writes meanwhile (an event, a login): committed before the password arrives.
        add_user(database, "operator")
        out, err = process.communicate(NEW_PASSWORD + "\n", timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out.strip() == "The password of admin is changed; its sessions are signed out."
    assert verify_password(stored_hash(database), NEW_PASSWORD)
    with make_sessionmaker(make_engine(database))() as session:
        entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "user.update")).one()
    assert (entry.username, entry.source, entry.detail) == ("console", "console", {"password": "changed"})


def test_a_weak_password_is_refused_and_nothing_changes(tmp_path: Path, database: str) -> None:
    before = stored_hash(database)
    process = start(tmp_path, database, "admin")
    out, err = process.communicate("short\n", timeout=60)
    assert process.returncode == 2 and "12" in err, (out, err)
    assert stored_hash(database) == before


def test_the_list_names_the_administrators_only(tmp_path: Path, database: str) -> None:
    add_user(database, "viewer")
    process = start(tmp_path, database, "--list")
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out.split()) == (0, ["admin"]), err
