"""Schema upgrades. Alembic is the only way the schema changes (an appliance keeps its database
across firmware upgrades), so start-up runs `upgrade head` before serving."""

from __future__ import annotations

from alembic import command
from alembic.config import Config


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", "fulcrum:migrations")
    config.set_main_option("sqlalchemy.url", database_url)
    config.set_main_option("file_template", "%%(year)d-%%(month).2d-%%(day).2d_%%(rev)s_%%(slug)s")
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)
