"""Token last-use times are written in the background; a busy database delays them, never loses them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from apitest import PASSWORD
from fulcrum.main import _record_token_use, create_app
from fulcrum.settings import Settings


def test_a_token_use_survives_a_locked_database(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, apply_mode="local", cookie_secure=False, stats_interval=0, confirm_poll_seconds=60, ha_sync_interval=0)
    app = create_app(settings)
    with TestClient(app) as client:
        client.headers["Authorization"] = "Bearer " + client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()["token"]
        secret = client.post("/api/v1/tokens", json={"name": "script"}).json()["token"]
        assert client.get("/api/v1/services", headers={"Authorization": f"Bearer {secret}"}).status_code == 200

        other_writer = sqlite3.connect(tmp_path / "fulcrum.db", isolation_level=None)
        other_writer.execute("BEGIN IMMEDIATE")  # holds the write lock past busy_timeout
        with pytest.raises(OperationalError, match="database is locked"):
            _record_token_use(app)
        other_writer.execute("ROLLBACK")
        other_writer.close()

        _record_token_use(app)
        [token] = client.get("/api/v1/tokens").json()["data"]
        assert token["last_used_at"] is not None

        # Nothing used since: the round takes no write lock (it would wait on a held one, and fail).
        app.state.token_usage.take()
        other_writer = sqlite3.connect(tmp_path / "fulcrum.db", isolation_level=None)
        other_writer.execute("BEGIN IMMEDIATE")
        try:
            _record_token_use(app)
        finally:
            other_writer.execute("ROLLBACK")
            other_writer.close()
