"""Alembic is the only way the schema changes: an appliance keeps its database across upgrades."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

import fulcrum.models  # noqa: F401
from fulcrum import migrate
from fulcrum.db import Base, make_engine


def test_upgrade_head_on_an_empty_database_matches_the_models(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()


def test_upgrade_from_the_first_migration_keeps_the_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0001")
    engine = make_engine(url)
    with engine.begin() as connection:
        assert "vip_groups" not in inspect(connection).get_table_names()
        connection.execute(
            text(
                "INSERT INTO services (name, description, enabled, address, ports, protocol, settings) "
                "VALUES ('web', '', 1, '192.0.2.10', '[80]', 'tcp', '{\"scheduler\": \"rr\"}')"
            )
        )
    migrate.upgrade(url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT name FROM services")).scalar() == "web"
        assert "vip_groups" in inspect(connection).get_table_names()
    engine.dispose()


def test_downgrade_to_base_and_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'roundtrip.db'}"
    config = migrate.alembic_config(url)
    command.upgrade(config, "head")
    command.downgrade(config, "base")
    engine = make_engine(url)
    with engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    command.upgrade(config, "head")


def test_the_head_read_from_the_migration_files_is_alembics(tmp_path: Path) -> None:
    scripts = ScriptDirectory.from_config(
        migrate.alembic_config(f"sqlite:///{tmp_path / 'any.db'}")
    )
    assert migrate.shipped_head() == scripts.get_current_head()


def test_a_database_at_head_starts_without_importing_alembic(tmp_path: Path) -> None:
    """The start-up's `upgrade head` on a database already there does not load Alembic at all; one
    a migration behind is migrated (by Alembic)."""
    database = tmp_path / "at-head.db"
    migrate.upgrade(f"sqlite:///{database}")
    probe = (
        "import sys\n"
        "from fulcrum import migrate\n"
        f"migrate.upgrade({f'sqlite:///{database}'!r})\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout

    behind = tmp_path / "behind.db"
    migrate.upgrade(f"sqlite:///{behind}", "0001")
    loaded = subprocess.run([sys.executable, "-c", probe.replace(str(database), str(behind))],
                            capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    assert "alembic.command" in loaded.stdout, loaded.stdout
    engine = make_engine(f"sqlite:///{behind}")
    with engine.connect() as connection:
        assert (
            connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
            == migrate.shipped_head()
        )
    engine.dispose()


def test_a_revisions_large_columns_come_last_and_its_rows_survive_the_rebuild(tmp_path: Path) -> None:
    """SQLite reaches a column stored after a large one only through that one's overflow pages:
    the state, digest and lineage that are filtered on every second must come before the snapshot."""
    url = f"sqlite:///{tmp_path / 'revisions.db'}"
    migrate.upgrade(url, "0010")
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO revisions (number, created_at, author, message, snapshot, digest, state, "
                "apply_result, lineage) VALUES (1, '2026-12-01 00:00:00', 'admin', 'first', :snapshot, "
                "'d1', 'applied', '{}', 'l1')"
            ),
            {"snapshot": "x" * 200_000},
        )
    migrate.upgrade(url)
    with engine.connect() as connection:
        columns = [column["name"] for column in inspect(connection).get_columns("revisions")]
        assert columns[-2:] == ["apply_result", "snapshot"]
        assert [index["name"] for index in inspect(connection).get_indexes("revisions")] == ["ix_revisions_lineage"]
        row = connection.execute(text("SELECT number, state, lineage, length(snapshot) FROM revisions")).one()
        assert tuple(row) == (1, "applied", "l1", 200_000)
    engine.dispose()
