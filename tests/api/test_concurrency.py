"""The dashboard fires a burst of requests after login while the background workers write too;
none of them may fail with "database is locked", and each answer reflects every earlier write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from apitest import PASSWORD, WEB, serve
from fulcrum.main import create_app
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
