"""At start-up the API re-applies the running revision through the apply helper. On the appliance
fulcrum-api.service starts beside fulcrum-applyd (their Python start-ups overlap at boot), so the
helper may not answer yet: the re-apply waits for it (Settings.apply_helper_start_wait)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from apitest import PASSWORD, WEB
from fulcrum.apply.client import ApplierError
from fulcrum.apply.result import DataplaneStatus
from fulcrum.main import create_app
from fulcrum.services.dataplane import make_applier
from fulcrum.settings import Settings


class StartingHelper:
    """The helper as the API meets it at boot: not listening for its first `starting` status
    requests, then the real engine. It reports no revision applied, as after a crash between the
    engine's apply and the database's record, so the start-up re-applies."""

    def __init__(self, settings: Settings, starting: int) -> None:
        self.real = make_applier(settings)
        self.starting = starting
        self.asked = 0

    def status(self) -> DataplaneStatus:
        self.asked += 1
        if self.asked <= self.starting:
            raise ApplierError("cannot reach the apply helper at /run/fulcrum/applyd.sock: it is starting")
        return self.real.status().model_copy(update={"applied_revision": None})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def settings_for(data: Path, **extra: Any) -> Settings:
    return Settings(data_dir=data, apply_mode="local", cookie_secure=False, stats_interval=0, alert_poll_seconds=0,
                    ha_sync_interval=0, ssh_host_key_dir=data / "ssh", **extra)  # fmt: skip


def committed_once(data: Path) -> None:
    with TestClient(create_app(settings_for(data, reapply_on_start=False))) as client:
        created = client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD})
        assert created.status_code == 201, created.text
        client.headers["Authorization"] = f"Bearer {created.json()['token']}"
        assert client.post("/api/v1/services", json=WEB).status_code == 201
        assert client.post("/api/v1/revisions", json={"message": "web"}).status_code == 201


def reapplies(data: Path, helper: StartingHelper, wait: float) -> list[dict[str, Any]]:
    settings = settings_for(data, apply_helper_start_wait=wait)
    with TestClient(create_app(settings, applier=helper)) as client:  # type: ignore[arg-type]
        login = client.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
        client.headers["Authorization"] = f"Bearer {login.json()['token']}"
        entries: list[dict[str, Any]] = client.get("/api/v1/audit").json()["data"]
    return [e for e in entries if e["action"] == "revision.reapply"]


def test_the_start_up_reapply_waits_for_a_helper_that_is_still_starting(tmp_path: Path) -> None:
    committed_once(tmp_path)
    helper = StartingHelper(settings_for(tmp_path), starting=3)
    done = reapplies(tmp_path, helper, wait=30)
    assert helper.asked >= 4, helper.asked  # three refusals, then the answer the re-apply used
    assert [(e["target"], e["success"]) for e in done] == [("revision 1", True)], done


def test_without_the_wait_the_start_up_reapply_is_lost(tmp_path: Path) -> None:
    """The control: a helper that does not answer yet when the API asks makes no re-apply at all."""
    committed_once(tmp_path)
    helper = StartingHelper(settings_for(tmp_path), starting=3)
    assert reapplies(tmp_path, helper, wait=0) == []
