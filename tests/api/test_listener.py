"""The appliance's listener (fulcrum.serve, fulcrum-api.service's --host ::): one socket serves
IPv6 and IPv4, and an IPv4 client is recorded by its IPv4 address, as the firewall and an admin
know it, not as ::ffff:192.0.2.1."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from apitest import PASSWORD
from fulcrum import serve
from fulcrum.main import create_app
from fulcrum.settings import Settings


@pytest.fixture
def dual_stack(tmp_path: Path):  # type: ignore[no-untyped-def]
    settings = Settings(
        data_dir=tmp_path / "data", apply_mode="local", cookie_secure=False, reapply_on_start=False,
        stats_interval=0, ha_sync_interval=0,
    )
    sock = serve.listening_socket("::", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(serve.config(create_app(settings), "::", port, None, None, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_one_socket_serves_both_families_and_names_ipv4_clients_by_their_ipv4_address(dual_stack: int) -> None:
    with httpx.Client(base_url=f"http://[::1]:{dual_stack}", timeout=30) as over_ipv6:
        token = over_ipv6.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()["token"]
    with httpx.Client(base_url=f"http://127.0.0.1:{dual_stack}", timeout=30) as over_ipv4:
        over_ipv4.headers["Authorization"] = f"Bearer {token}"
        assert over_ipv4.post("/api/v1/auth/login", json={"username": "admin", "password": "wrong"}).status_code == 401
        entries = over_ipv4.get("/api/v1/audit").json()["data"]
    sources = {entry["action"]: entry["source"] for entry in entries}
    assert sources.get("setup.first_admin") == "::1", entries
    assert sources.get("auth.login") == "127.0.0.1", entries
