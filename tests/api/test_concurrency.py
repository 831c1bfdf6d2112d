"""The dashboard fires a burst of requests after login while the background workers write too;
none of them may fail with "database is locked", and each answer reflects every earlier write."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from apitest import PASSWORD, WEB, serve
from fulcrum.apply.client import Applier
from fulcrum.apply.result import ApplyResult
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.main import create_app
from fulcrum.services.dataplane import make_applier
from fulcrum.settings import Settings


def test_a_burst_of_reads_and_writes_on_real_sessions(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, apply_mode="local", cookie_secure=False, stats_interval=0.2, confirm_poll_seconds=0.2)
    app = create_app(settings)
    with serve(app, lifespan="on") as url, httpx.Client(base_url=url, timeout=30) as http:
        token = http.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()["token"]
        http.headers["Authorization"] = f"Bearer {token}"
        assert http.get("/api/v1/auth/me").status_code == 200  # the setup was committed before its answer

        def write(i: int) -> int:
            service = {**WEB, "name": f"web{i}", "address": f"192.0.2.{10 + i}"}
            return http.post("/api/v1/services", json=service).status_code

        reads = ["/api/v1/status", "/api/v1/services", "/api/v1/revisions", "/api/v1/stats/current", "/api/v1/node", "/api/v1/changes", "/api/v1/audit", "/api/v1/events"]
        with ThreadPoolExecutor(max_workers=12) as pool:
            read_codes = list(pool.map(lambda path: http.get(path).status_code, reads * 5))
            write_codes = list(pool.map(write, range(12)))
        assert set(read_codes) == {200}, read_codes
        assert write_codes == [201] * 12
        assert http.get("/api/v1/services").json()["count"] == 12
        commit = http.post("/api/v1/revisions", json={"message": "while the collector writes"})
        assert commit.status_code == 201, commit.text


class KeepalivedNotifiesDuringTheApply:
    """The real engine; while it applies, keepalived's notify FIFO gets a line (as when the apply
    starts keepalived, whose VRRP instances report BACKUP at once), and the apply goes on until
    the line is stored or longer than SQLite's busy timeout has passed, as a slow apply does."""

    LINE = b'INSTANCE "VG_front" BACKUP 100\n'

    def __init__(self, real: Applier, fifo: Path, database: Path) -> None:
        self.real, self.fifo, self.database = real, fifo, database
        self.stored_during_apply: bool | None = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.real, name)

    def _stored(self) -> bool:
        with contextlib.closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=1)) as db:
            return db.execute("SELECT count(*) FROM events WHERE kind = 'vrrp_state'").fetchone()[0] > 0

    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        writer = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)  # as keepalived opens it
        try:
            os.write(writer, self.LINE)
            deadline = time.monotonic() + 8  # SQLite's busy timeout is 5 s
            while not (stored := self._stored()) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.stored_during_apply = stored
            return self.real.apply(snapshot, revision)
        finally:
            os.close(writer)


def test_keepalived_notifications_are_stored_while_a_commit_applies(tmp_path: Path) -> None:
    """A commit holds no database lock while the data plane applies: the notify FIFO reader
    stores keepalived's lines meanwhile, and keeps reading after the commit (before the fix the
    apply held SQLite's write lock, the reader failed with "database is locked" and stopped)."""
    settings = Settings(data_dir=tmp_path, apply_mode="local", cookie_secure=False, stats_interval=0.2,
                        confirm_poll_seconds=0.2, notify_fifo=tmp_path / "vrrp.fifo")
    applier = KeepalivedNotifiesDuringTheApply(make_applier(settings), tmp_path / "vrrp.fifo", tmp_path / "fulcrum.db")
    app = create_app(settings, applier=applier)
    with serve(app, lifespan="on") as url, httpx.Client(base_url=url, timeout=30) as http:
        token = http.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()["token"]
        http.headers["Authorization"] = f"Bearer {token}"
        assert http.post("/api/v1/vip-groups", json={"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"]}).status_code == 201
        assert http.post("/api/v1/services", json=WEB).status_code == 201
        assert http.post("/api/v1/revisions", json={"message": "keepalived starts"}).status_code == 201
        assert applier.stored_during_apply is True
        # The reader still runs: a later notification arrives too.
        writer = os.open(tmp_path / "vrrp.fifo", os.O_RDWR | os.O_NONBLOCK)
        try:
            os.write(writer, b'INSTANCE "VG_front" MASTER 100\n')
            deadline = time.monotonic() + 10
            while http.get("/api/v1/ha/status").json()["node"]["groups"][0]["state"] != "MASTER":
                assert time.monotonic() < deadline, "the notification after the commit was not read"
                time.sleep(0.1)
        finally:
            os.close(writer)
