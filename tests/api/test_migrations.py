"""Alembic is the only way the schema changes: an appliance keeps its database across upgrades."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
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
