"""Start-up migrations meet the other root slot's version: a copy before migrating, and the copy put
back when a newer version's schema is found after a roll-back (fulcrum/migrate.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from alembic.script import ScriptDirectory

from fulcrum import migrate

SCRIPT = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
HEAD = SCRIPT.get_current_head()
PREVIOUS = SCRIPT.get_revision(HEAD).down_revision
NEWER = "9999"  # a revision of a version that does not exist yet


def schema_of(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    return revision


def test_an_upgrade_keeps_the_database_as_it_was_before_migrating(tmp_path: Path) -> None:
    database = tmp_path / "fulcrum.db"
    migrate.upgrade(f"sqlite:///{database}", PREVIOUS)
    migrate.upgrade(f"sqlite:///{database}")
    assert schema_of(database) == HEAD
    assert schema_of(migrate.copy_at(database, PREVIOUS)) == PREVIOUS
    assert not migrate.copy_at(database, HEAD).exists()


def test_a_rolled_back_version_restores_the_copy_at_its_own_schema(tmp_path: Path) -> None:
    database = tmp_path / "fulcrum.db"
    migrate.upgrade(f"sqlite:///{database}")
    # A newer version keeps its copy at this head, then migrates to a schema this one does not know.
    migrate._copy(database, migrate.copy_at(database, HEAD))
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE from_the_future (x)")
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    migrate.upgrade(f"sqlite:///{database}")
    assert schema_of(database) == HEAD
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert "from_the_future" not in tables
    newer = migrate.copy_at(database, NEWER)
    assert schema_of(newer) == NEWER  # kept, should the newer version come back


def test_a_newer_schema_without_a_copy_is_a_clear_error(tmp_path: Path) -> None:
    database = tmp_path / "fulcrum.db"
    migrate.upgrade(f"sqlite:///{database}")
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(migrate.SchemaTooNew, match=f"schema {NEWER}, which this version does not know"):
        migrate.upgrade(f"sqlite:///{database}")
    assert schema_of(database) == NEWER  # untouched
