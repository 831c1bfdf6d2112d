"""The data disk for real: a small tmpfs mounted as the data directory (root only), filled until
it is full. Commits then fail cleanly with 507 naming the cause, reads keep working, nothing
committed is lost, the running configuration is untouched, and commits work again once space is
freed. The apply engine's rendered files finding no space, the disk alarm, and a confirm-deadline
revert each raise an event that reaches real receivers through the alert dispatcher."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from apitest import PASSWORD, WEB
from hanode import WAIT_DEADLINE, pair, two_nodes
from fulcrum.main import _expire_confirmations as expire_confirmations
from fulcrum.main import create_app
from fulcrum.models import Revision
from fulcrum.models._types import utcnow
from fulcrum.settings import Settings
from lab.alert_receivers import SyslogReceiver, WebhookReceiver, syslog_receiver, webhook_receiver
from lab.wait import wait_until

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs as /data needs root")

MiB = 1024 * 1024


@contextlib.contextmanager
def small_disk(path: Path, size: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(directory: Path, leave: int = 0) -> Path:
    """Write zeros into directory/filler until the file system is full (or has `leave` bytes left)."""
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb") as out:
        while True:
            room = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize - leave
            if room <= 0:
                break
            try:
                out.write(chunk[: min(len(chunk), room)])
                out.flush()
            except OSError as error:
                assert error.errno == errno.ENOSPC
                break
    return filler


def settings_for(data: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=data, apply_mode="local", cookie_secure=False, reapply_on_start=False, stats_interval=0,
        confirm_poll_seconds=60, ha_sync_interval=0, alert_poll_seconds=0, storage_check_seconds=0, **extra,
    )  # fmt: skip


@contextlib.contextmanager
def api(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), base_url="http://testserver") as client:
        token = client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def state_files(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(state.iterdir()) if p.is_file()}


def test_a_full_data_disk_fails_commits_cleanly_and_they_work_again_once_freed(tmp_path: Path) -> None:
    with small_disk(tmp_path / "data", 24 * MiB) as data, api(settings_for(data)) as client:
        service = client.post("/api/v1/services", json=WEB).json()
        assert client.post("/api/v1/revisions", json={"message": "first"}).status_code == 201
        changed = client.patch(f"/api/v1/services/{service['id']}", json={"scheduler": "rr"})
        assert changed.status_code == 200
        applied_before = client.app.state.applier.status().applied_revision  # type: ignore[attr-defined]
        files_before = state_files(data / "state")
        filler = fill(data)

        refused = client.post("/api/v1/revisions", json={"message": "on a full disk"})
        assert refused.status_code == 507, refused.text
        assert refused.json()["detail"].startswith("the data disk is full")
        assert refused.json()["cause"] == "disk_full"
        # Reads still answer; nothing committed is lost; the data plane's state is untouched.
        listed = client.get("/api/v1/revisions").json()
        assert [r["number"] for r in listed["data"]] == [1]
        assert client.get(f"/api/v1/services/{service['id']}").json()["scheduler"] == "rr"
        assert client.get("/api/v1/system/storage").json()["disk"]["free_bytes"] < MiB
        applier = client.app.state.applier  # type: ignore[attr-defined]
        assert applier.status().applied_revision == applied_before
        assert state_files(data / "state") == files_before

        filler.unlink()
        again = client.post("/api/v1/revisions", json={"message": "after freeing space"})
        assert again.status_code == 201, again.text
        assert again.json()["number"] == 2


def test_a_database_write_on_a_full_disk_is_a_507_and_loses_nothing(tmp_path: Path) -> None:
    with small_disk(tmp_path / "data", 24 * MiB) as data, api(settings_for(data)) as client:
        created = client.post("/api/v1/services", json=WEB)
        assert created.status_code == 201
        filler = fill(data)
        # SQLite first fills the pages and WAL frames it already has: write until it needs more.
        saved = []
        for number in range(200):
            address = f"192.0.2.{number + 20}"
            body = {**WEB, "name": f"svc{number}", "address": address, "description": "x" * 500}
            response = client.post("/api/v1/services", json=body)
            if response.status_code != 201:
                break
            saved.append(number)
        assert response.status_code == 507, response.text
        assert response.json()["detail"].startswith("the data disk is full")
        listed = client.get("/api/v1/services", params={"limit": 500}).json()
        assert listed["count"] == 1 + len(saved), "a write answered 201 was lost, or the refused one was kept"
        filler.unlink()
        assert client.post("/api/v1/services", json=body).status_code == 201


@dataclass
class Receivers:
    hook: WebhookReceiver
    log: SyslogReceiver

    def kinds(self) -> list[str]:
        return [body["kind"] for body in self.hook.bodies]


@contextlib.contextmanager
def receivers(client: TestClient, kinds: list[str]) -> Iterator[Receivers]:
    with webhook_receiver("hook-key") as hook, syslog_receiver("udp") as log:
        channels = [
            {"name": "hook", "config": {"type": "webhook", "url": hook.url}, "secret": "hook-key"},
            {
                "name": "log",
                "config": {"type": "syslog", "host": "127.0.0.1", "port": log.port, "transport": "udp"},
            },
        ]
        for body in channels:
            channel = client.post("/api/v1/alerts/channels", json=body)
            assert channel.status_code == 201, channel.text
            rule_body = {"channel_id": channel.json()["id"], "kinds": kinds, "min_severity": "info"}
            rule = client.post("/api/v1/alerts/rules", json=rule_body)
            assert rule.status_code == 201, rule.text
        yield Receivers(hook, log)


def dispatch(client: TestClient) -> None:
    client.app.state.alert_dispatcher.run_once()  # type: ignore[attr-defined]


def syslog_lines(sent: Receivers, count: int) -> list[bytes]:
    """The syslog receiver's records once `count` have arrived: the dispatcher's sends return when
    the datagrams are out, and the receiver's thread reads them a moment later."""
    wait_until(lambda: len(sent.log.lines) >= count, 10, what=f"{count} syslog records")
    return sent.log.lines


def test_rendered_files_finding_no_space_fail_the_commit_and_alert(tmp_path: Path) -> None:
    """The engine's state directory on its own full disk: the render step fails with ENOSPC;
    nothing is applied, the commit is a 507, and an apply.failed event reaches the receivers."""
    with (
        small_disk(tmp_path / "state", 1 * MiB) as state,
        api(settings_for(tmp_path / "data", state_dir=state)) as client,
        receivers(client, ["apply.failed"]) as sent,
    ):
        client.post("/api/v1/services", json=WEB)
        fill(state)
        refused = client.post("/api/v1/revisions", json={"message": "no room for the files"})
        assert refused.status_code == 507, refused.text
        assert refused.json()["failed_step"] == "render"
        assert client.get("/api/v1/revisions").json()["count"] == 0
        assert not list(state.glob("*.new")), "a partly written file was left behind"
        dispatch(client)
        assert sent.kinds() == ["apply.failed"]
        detail = sent.hook.bodies[0]["detail"]
        assert detail["failed_step"] == "render" and detail["disk_full"] is True
        assert detail["origin"] == "commit" and "No space left" in detail["error"]
        lines = syslog_lines(sent, 1)
        assert len(lines) == 1 and b"apply.failed" in lines[0]


def test_a_reverted_commit_confirmed_revision_alerts(tmp_path: Path) -> None:
    with (
        api(settings_for(tmp_path / "data")) as client,
        receivers(client, ["revision.confirm_reverted"]) as sent,
    ):
        client.post("/api/v1/services", json=WEB)
        assert client.post("/api/v1/revisions", json={}).status_code == 201
        client.put("/api/v1/firewall", json={"management_allow": ["203.0.113.0/24"]})
        risky = client.post("/api/v1/revisions", json={"message": "lock myself out", "confirm_within": 30})
        assert risky.status_code == 201
        app = client.app
        with app.state.sessionmaker() as session, session.begin():  # type: ignore[attr-defined]
            risky_row = session.get(Revision, 2)
            assert risky_row is not None
            risky_row.confirm_deadline = utcnow() - timedelta(seconds=1)
        expire_confirmations(app)  # what the app's watcher runs every confirm_poll_seconds
        assert client.get("/api/v1/revisions/2").json()["state"] == "reverted"
        dispatch(client)
        assert sent.kinds() == ["revision.confirm_reverted"]
        body = sent.hook.bodies[0]
        assert body["severity"] == "warning" and "lock myself out" in body["message"]
        assert body["detail"]["revision"] == 2 and body["detail"]["restored"] == 1
        assert len(syslog_lines(sent, 1)) == 1


def test_the_disk_alarm_is_raised_once_per_stage_and_reaches_the_receivers(tmp_path: Path) -> None:
    with (
        small_disk(tmp_path / "data", 24 * MiB) as data,
        api(settings_for(data)) as client,
        receivers(client, ["disk.filling"]) as sent,
    ):
        watch = client.app.state.storage_watch  # type: ignore[attr-defined]
        watch.check_disk()
        assert client.get("/api/v1/system/storage").json()["disk"]["stage"] == "ok"
        filler = fill(data, leave=int(2.4 * MiB))  # about 90 % used
        watch.check_disk()
        watch.check_disk()  # the same stage again: not raised twice
        filler.unlink()
        filler = fill(data, leave=int(0.6 * MiB))  # about 97 %
        watch.check_disk()
        storage = client.get("/api/v1/system/storage").json()["disk"]
        assert storage["stage"] == "critical" and storage["database_bytes"] > 0
        filler.unlink()
        watch.check_disk()
        dispatch(client)
        assert [(b["kind"], b["severity"], b["detail"]["stage"]) for b in sent.hook.bodies] == [
            ("disk.filling", "warning", "warning"),
            ("disk.filling", "critical", "critical"),
            ("disk.filling", "info", "ok"),
        ]
        assert len(syslog_lines(sent, 3)) == 3


def test_a_replicated_revision_finding_no_space_raises_apply_failed_on_the_standby(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        pair(alpha, beta)
        beta.login("admin")  # alpha's accounts replaced beta's at pairing
        with small_disk(beta.data / "state", 1 * MiB) as state:
            fill(state)
            alpha.post("/services", WEB, expect=201)
            alpha.commit("add web")
            failed = wait_until(
                lambda: beta.get("/events?kind=apply.failed")["data"],
                WAIT_DEADLINE,
                what="apply.failed on beta",
            )
        detail = failed[0]["detail"]
        assert detail["origin"] == "replication" and detail["failed_step"] == "render", detail
        assert detail["disk_full"] is True and detail["author"] == "peer:alpha"
        assert beta.head() is None, "beta recorded a revision it did not apply"


def test_the_statistics_history_file_is_counted_on_the_data_disk(tmp_path: Path) -> None:
    with api(settings_for(tmp_path)) as client:
        history = client.app.state.telemetry.history  # type: ignore[attr-defined]
        for minute in range(62):  # an hour of minutes finished: written to the file
            history.add(minute * 60.0, [(("web", "198.51.100.1:80"), (1.0,) * 7)])
        history.minutes.flush()
        files = [tmp_path / "statistics-history.sqlite", tmp_path / "statistics-history.sqlite-wal"]
        on_disk = sum(f.stat().st_size for f in files if f.exists())
        disk = client.get("/api/v1/system/storage").json()["disk"]
        assert disk["statistics_history_bytes"] == on_disk > 1700  # the hour's 1.7 KB block at least
