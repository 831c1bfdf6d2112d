"""Migration 0004 gives existing revisions the lineage the HA code computes for new ones."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import inspect, text

from fulcrum import migrate
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.db import make_engine
from fulcrum.services.lineage import next_lineage, shared_hash

WEB = {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "198.51.100.1"}]}


def test_existing_revisions_get_shared_hashes_and_a_lineage(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0003")
    first = ConfigSnapshot.model_validate({"services": [WEB]})
    failed = ConfigSnapshot.model_validate({"services": [{**WEB, "ports": [81]}]})
    node_only = ConfigSnapshot.model_validate({"services": [WEB], "node": {"name": "beta"}})
    second = ConfigSnapshot.model_validate({"services": [WEB, {**WEB, "name": "mail", "address": "192.0.2.11"}]})
    rows = [(1, first, "applied"), (2, failed, "failed"), (3, node_only, "applied"), (4, second, "validated")]
    engine = make_engine(url)
    with engine.begin() as connection:
        for number, snapshot, state in rows:
            connection.execute(
                text("INSERT INTO revisions (number, created_at, author, message, snapshot, digest, state, apply_result) VALUES (:n, '2026-01-01', 'admin', '', :s, :d, :state, '{}')"),
                {"n": number, "s": snapshot.canonical_json(), "d": snapshot.digest(), "state": state},
            )
    migrate.upgrade(url)
    with engine.connect() as connection:
        got = {r[0]: r[1:] for r in connection.execute(text("SELECT number, shared_hash, parent_shared_hash, lineage FROM revisions"))}
    one = next_lineage(None, shared_hash(first))
    assert got[1] == (shared_hash(first), None, one)
    assert got[2] == (shared_hash(failed), shared_hash(first), next_lineage(one, shared_hash(failed)))
    assert got[3] == (shared_hash(first), shared_hash(first), one)  # node-local change: same lineage
    assert got[4] == (shared_hash(second), shared_hash(first), next_lineage(one, shared_hash(second)))
    assert shared_hash(first) == shared_hash(node_only)

    command.downgrade(migrate.alembic_config(url), "0003")
    with engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("revisions")}
        assert "lineage" not in columns and "ha_pairing" not in inspect(connection).get_table_names()
    engine.dispose()
