"""API tests: the real app on a real SQLite file migrated by Alembic; each test in a transaction
that is rolled back (Polar's pattern), and the real apply engine in a temporary state directory.
On this host the kernel has no IPVS, so applies stop after the real validators with VALIDATED."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from fulcrum import migrate
from fulcrum.db import get_session, make_engine, unit_of_work
from fulcrum.main import create_app
from fulcrum.services.dataplane import make_applier
from fulcrum.settings import Settings

from apitest import PASSWORD
from lab.bundles import Bundles, make_bundles
from lab.passwords import FAST_PASSWORD_HASHING

# tests/ on the path: the alert tests share their receivers with the VM lab (lab.alert_receivers).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Before any Settings is made, here or in the API processes the tests start (they inherit it).
# An explicit environment wins (to measure the suite at the appliance's cost, for one).
for _name, _value in FAST_PASSWORD_HASHING.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'fulcrum.db'}"
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Settings:
    data = tmp_path_factory.mktemp("data")
    return Settings(
        data_dir=data,
        database_url=database_url,
        apply_mode="local",
        cookie_secure=False,
        reapply_on_start=False,
        confirm_poll_seconds=60,
        stats_interval=0,  # tests call Telemetry.collect() themselves
        alert_poll_seconds=0,  # the alert tests run the dispatcher themselves
        storage_check_seconds=0,  # the storage tests run the watch themselves
        upgrade_watch_seconds=0,  # the firmware tests run the watch themselves
    )


@pytest.fixture(scope="session")
def engine(database_url: str):  # type: ignore[no-untyped-def]
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def session(engine) -> Iterator[Session]:  # type: ignore[no-untyped-def]
    connection = engine.connect()
    outer = connection.begin()
    session = Session(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        connection.close()


@pytest.fixture
def applier(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The real engine, writing into a fresh state directory per test."""
    per_test = settings.model_copy(
        update={"state_dir": tmp_path, "keepalived_conf": tmp_path / "keepalived.conf",
                "nftables_conf": tmp_path / "fulcrum.nft", "keepalived_pidfile": tmp_path / "keepalived.pid"}
    )
    return make_applier(per_test)


@pytest.fixture
def app(settings: Settings, session: Session, applier, tmp_path: Path):  # type: ignore[no-untyped-def]
    # The statistics' day on disk is the test's own, as its database rows are (rolled back).
    own = settings.model_copy(update={"statistics_history_file": tmp_path / "statistics-history.sqlite"})
    app = create_app(own, applier=applier)

    def _session() -> Iterator[Session]:
        # The production unit of work; its commit releases a savepoint of the test transaction.
        with unit_of_work(session):
            yield session

    app.dependency_overrides[get_session] = _session
    return app


@pytest.fixture
def anon(app, session: Session) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, base_url="http://testserver") as client:
        # Live-state workers use the test transaction too, so they see what the test committed.
        app.state.telemetry.session_scope = lambda: unit_of_work(session)
        yield client


@pytest.fixture
def client(anon: TestClient) -> TestClient:
    """Logged in as the first admin (created through first-run setup)."""
    response = anon.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD})
    assert response.status_code == 201, response.text
    anon.headers["Authorization"] = f"Bearer {response.json()['token']}"
    return anon


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    """Real RAUC bundles made by `rauc bundle` (lab.bundles): good, another key, truncated, another
    compatible string. The tests that use them skip where rauc or mksquashfs is missing."""
    return make_bundles(tmp_path_factory.mktemp("bundles"))
