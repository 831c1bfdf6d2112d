"""Fixtures for the HA unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from fulcrum import migrate
from fulcrum.db import make_engine


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A session on a fresh SQLite database migrated by Alembic, as the appliance's."""
    url = f"sqlite:///{tmp_path / 'ha.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with Session(engine) as session:
        yield session
    engine.dispose()
