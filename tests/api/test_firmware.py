"""Firmware bundles (/firmware): uploads checked by the real `rauc info` against a keyring before
anything is kept, with real bundles made here by `rauc bundle` (a small squashfs, signed with the
development key, a key of another CA, truncated, for another compatible string), and the slots as
the real RAUC service reports them over a private D-Bus."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from apitest import login_as
from fulcrum import __version__
from fulcrum.apply.client import LocalApplier
from fulcrum.apply.engine import ApplyEngine
from fulcrum.models import AuditEntry, Event
from fulcrum.schemas.firmware import FirmwareUpgrade
from fulcrum.services import firmware
from fulcrum.services.firmware_upgrade import write_record
from lab.bundles import DEV_KEYS, Bundles
from lab.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
SYSTEM_CONF = REPO / "overlay/etc/rauc/system.conf"
URL = "/api/v1/firmware"
OCTETS = {"Content-Type": "application/octet-stream"}

pytestmark = pytest.mark.skipif(
    shutil.which("rauc") is None or shutil.which("mksquashfs") is None,
    reason="needs rauc and squashfs-tools (scripts/setup-host installs them)",
)


@pytest.fixture
def rauc_conf(tmp_path: Path) -> Path:
    """The appliance's own system.conf, its keyring (the development CA) beside it."""
    directory = tmp_path / "rauc"
    directory.mkdir()
    conf = SYSTEM_CONF.read_text()
    conf = conf.replace("grubenv=/data/boot/grubenv", f"grubenv={tmp_path / 'grubenv'}")
    conf = conf.replace(
        "data-directory=/data/rauc", f"data-directory={tmp_path / 'rauc-data'}"
    )
    conf = conf.replace("path=/etc/rauc/keyring.pem", "path=keyring.pem")
    (directory / "system.conf").write_text(conf)
    shutil.copy(DEV_KEYS / "ca.cert.pem", directory / "keyring.pem")
    return directory / "system.conf"


@pytest.fixture
def firmware_dir(tmp_path: Path) -> Path:
    return tmp_path / "firmware"


@pytest.fixture
def ab_client(
    app, client: TestClient, rauc_conf: Path, firmware_dir: Path
) -> TestClient:  # type: ignore[no-untyped-def]
    app.state.settings = app.state.settings.model_copy(
        update={"rauc_system_conf": rauc_conf, "firmware_dir": firmware_dir}
    )
    return client


def upload(client: TestClient, bundle: Path) -> tuple[int, dict[str, object]]:
    response = client.post(f"{URL}/bundle", content=bundle.read_bytes(), headers=OCTETS)
    return response.status_code, response.json()


def kept_files(firmware_dir: Path) -> list[str]:
    return (
        sorted(path.name for path in firmware_dir.iterdir())
        if firmware_dir.exists()
        else []
    )


def test_a_signed_bundle_for_this_system_is_kept_and_described(
    ab_client: TestClient, bundles: Bundles, firmware_dir: Path, session: Session
) -> None:
    status, body = upload(ab_client, bundles.good)
    assert status == 201, body
    assert body["version"] == "2.0.0" and body["compatible"] == "fulcrum-x86_64"
    assert body["size"] == bundles.good.stat().st_size
    assert "Fulcrum development bundle signer" in str(body["signer"])
    assert kept_files(firmware_dir) == ["bundle.json", "bundle.raucb"]
    assert (firmware_dir / "bundle.raucb").read_bytes() == bundles.good.read_bytes()
    assert ab_client.get(URL).json()["bundle"] == body
    entry = session.scalars(
        select(AuditEntry).where(AuditEntry.action == "firmware.bundle")
    ).one()
    assert entry.success and entry.target == "2.0.0" and entry.username == "admin"

    assert ab_client.delete(f"{URL}/bundle").status_code == 204
    assert kept_files(firmware_dir) == []
    assert ab_client.delete(f"{URL}/bundle").status_code == 404


@pytest.mark.parametrize(
    ("which", "message"),
    [
        (
            "other_key",
            "the bundle is not signed by a key this appliance trusts: signature verification failed",
        ),
        (
            "truncated",
            "the file is not a complete RAUC bundle (truncated, or not a bundle)",
        ),
        (
            "other_compatible",
            "the bundle is for 'toaster-arm64'; this appliance takes bundles for 'fulcrum-x86_64'",
        ),
    ],
)
def test_a_bad_bundle_is_refused_with_a_clear_message_and_deleted(
    ab_client: TestClient,
    bundles: Bundles,
    firmware_dir: Path,
    session: Session,
    which: str,
    message: str,
) -> None:
    status, body = upload(ab_client, getattr(bundles, which))
    assert status == 422, body
    assert str(body["detail"]).startswith(message), body
    assert kept_files(firmware_dir) == []
    assert ab_client.get(URL).json()["bundle"] is None
    entry = session.scalars(
        select(AuditEntry).where(AuditEntry.action == "firmware.bundle")
    ).one()
    assert not entry.success and entry.detail["reason"] == body["detail"]


def test_a_refused_bundle_leaves_the_pending_one_alone(
    ab_client: TestClient, bundles: Bundles, firmware_dir: Path
) -> None:
    assert upload(ab_client, bundles.good)[0] == 201
    assert upload(ab_client, bundles.other_key)[0] == 422
    assert kept_files(firmware_dir) == ["bundle.json", "bundle.raucb"]
    assert ab_client.get(URL).json()["bundle"]["version"] == "2.0.0"


def test_an_empty_upload_is_refused(ab_client: TestClient, firmware_dir: Path) -> None:
    response = ab_client.post(f"{URL}/bundle", content=b"", headers=OCTETS)
    assert response.status_code == 422
    assert "the upload is empty" in response.json()["detail"]
    assert kept_files(firmware_dir) == []


def test_a_bundle_over_the_size_limit_is_refused_declared_or_streamed(
    app,
    ab_client: TestClient,
    bundles: Bundles,
    firmware_dir: Path,  # type: ignore[no-untyped-def]
) -> None:
    limit = bundles.good.stat().st_size - 1
    app.state.settings = app.state.settings.model_copy(
        update={"firmware_max_bundle_bytes": limit}
    )
    data = bundles.good.read_bytes()
    declared = ab_client.post(f"{URL}/bundle", content=data, headers=OCTETS)
    assert declared.status_code == 413
    assert (
        declared.json()["detail"] == f"a firmware bundle may have at most {limit} bytes"
    )

    def chunks() -> Iterator[
        bytes
    ]:  # no Content-Length: the limit is found while streaming
        for start in range(0, len(data), 64 * 1024):
            yield data[start : start + 64 * 1024]

    streamed = ab_client.post(f"{URL}/bundle", content=chunks(), headers=OCTETS)
    assert streamed.status_code == 413
    assert kept_files(firmware_dir) == []


def test_only_an_admin_uploads(
    app, ab_client: TestClient, bundles: Bundles, firmware_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    operator = login_as(ab_client, "op", "operator")
    assert (
        operator.post(
            f"{URL}/bundle", content=bundles.good.read_bytes(), headers=OCTETS
        ).status_code
        == 403
    )
    assert operator.get(URL).status_code == 200
    assert kept_files(firmware_dir) == []


def test_a_node_that_is_not_ab_says_so_and_takes_nothing(
    client: TestClient, tmp_path: Path
) -> None:
    status = client.get(URL).json()
    assert status["ab_system"] is False
    assert status["detail"].startswith("not an A/B system: ") and status["slots"] == []
    response = client.post(f"{URL}/bundle", content=b"x" * 10_000, headers=OCTETS)
    assert response.status_code == 409
    assert response.json()["detail"].startswith("not an A/B system: ")


@pytest.fixture
def rauc_service(rauc_conf: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with rauc_service_running(rauc_conf, monkeypatch):
        yield


@contextlib.contextmanager
def rauc_service_running(rauc_conf: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real RAUC service on a private bus that stands in for the system bus (slot A booted)."""
    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon")
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert bus.stdout is not None
    address = bus.stdout.readline().strip()
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", address)
    service = subprocess.Popen(
        ["rauc", f"--conf={rauc_conf}", "service", "--override-boot-slot=A"],
        env={**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": address},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        for process in (service, bus):
            process.terminate()
            process.wait(timeout=10)


def test_the_slots_are_reported_as_the_rauc_service_has_them(
    ab_client: TestClient, rauc_service: None
) -> None:
    status = wait_until(
        lambda: (answer := ab_client.get(URL).json())["slots"] and answer,
        timeout=30,
        what="the RAUC service to report the slots",
    )
    assert status["ab_system"] is True and status["detail"] is None
    assert status["compatible"] == "fulcrum-x86_64" and status["booted"] == "A"
    slots = {slot["name"]: slot for slot in status["slots"]}
    assert (
        slots["rootfs.0"]["bootname"] == "A" and slots["rootfs.0"]["state"] == "booted"
    )
    assert (
        slots["rootfs.1"]["bootname"] == "B"
        and slots["rootfs.1"]["state"] == "inactive"
    )
    assert slots["rootfs.1"]["device"] == "/dev/disk/by-partlabel/root-b"


def test_an_ab_system_without_its_service_says_why(ab_client: TestClient) -> None:
    status = ab_client.get(URL).json()
    assert status["ab_system"] is True and status["slots"] == []
    assert status["detail"].startswith("rauc status failed: ")


# --- install and reboot ----------------------------------------------------------------------


@pytest.fixture
def file_slots(rauc_conf: Path, tmp_path: Path) -> Path:
    """The slots as files here: whatever RAUC does, it never touches a disk of this machine."""
    conf = rauc_conf.read_text()
    for name in ("root-a", "root-b"):
        (tmp_path / name).write_bytes(b"\0" * (1 << 20))
        conf = conf.replace(f"/dev/disk/by-partlabel/{name}", str(tmp_path / name))
    rauc_conf.write_text(conf)
    return tmp_path


def test_an_install_needs_a_waiting_bundle(ab_client: TestClient, firmware_dir: Path) -> None:
    answer = ab_client.post(f"{URL}/install")
    assert answer.status_code == 404
    assert answer.json()["detail"] == "no firmware bundle is waiting to be installed: upload one first"
    assert kept_files(firmware_dir) == []


def test_an_install_without_the_rauc_service_is_refused_and_changes_nothing(
    ab_client: TestClient, bundles: Bundles, firmware_dir: Path
) -> None:
    assert upload(ab_client, bundles.good)[0] == 201
    answer = ab_client.post(f"{URL}/install")
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith("RAUC cannot say which slot is running")
    assert kept_files(firmware_dir) == ["bundle.json", "bundle.raucb"]  # no upgrade recorded
    assert ab_client.get(URL).json()["upgrade"] is None


def test_an_install_rauc_cannot_finish_is_reported_with_its_reason_and_the_bundle_kept(
    ab_client: TestClient, bundles: Bundles, file_slots: Path, rauc_service: None,
    firmware_dir: Path, session: Session,
) -> None:  # fmt: skip
    """The real RAUC service starts the install, then fails: this host has no device-mapper for the
    verity bundle (tests/kernel cannot run RAUC's service either; the image test installs for real)."""
    wait_until(lambda: ab_client.get(URL).json()["booted"], timeout=30, what="RAUC to answer")
    assert upload(ab_client, bundles.good)[0] == 201
    answer = ab_client.post(f"{URL}/install")
    assert answer.status_code == 202, answer.text
    upgrade = answer.json()["upgrade"]
    assert (upgrade["version"], upgrade["from_slot"], upgrade["to_slot"]) == ("2.0.0", "A", "B")
    assert upgrade["state"] in ("installing", "install_failed")
    status = wait_until(
        lambda: (body := ab_client.get(URL).json())["upgrade"]["state"] != "installing" and body,
        timeout=60,
        what="RAUC to finish the install",
    )
    assert status["upgrade"]["state"] == "install_failed", status
    assert "Failed mounting bundle" in status["upgrade"]["reason"], status
    assert status["install"]["operation"] == "idle"
    assert status["install"]["last_error"] == status["upgrade"]["reason"]
    assert status["bundle"] is not None and status["bundle"]["version"] == "2.0.0"  # to try again
    assert (file_slots / "root-b").read_bytes() == b"\0" * (1 << 20)
    entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "firmware.install")).one()
    assert entry.target == "2.0.0" and entry.detail["to_slot"] == "B"


def grub_environment(path: Path) -> dict[str, str]:
    listed = subprocess.run(["grub-editenv", str(path), "list"], check=True, capture_output=True, text=True)
    return dict(line.split("=", 1) for line in listed.stdout.splitlines())


def installed_into_b(firmware_dir: Path, grubenv: Path) -> None:
    """Where RAUC leaves a node after installing 2.0.0 into slot B from A: slot B first to boot."""
    subprocess.run(["grub-editenv", str(grubenv), "create"], check=True)
    subprocess.run(
        ["grub-editenv", str(grubenv), "set", "ORDER=B A", "A_OK=1", "A_TRY=0", "B_OK=1", "B_TRY=0"], check=True
    )
    now = datetime.now(UTC)
    write_record(firmware_dir, FirmwareUpgrade(
        version="2.0.0", from_slot="A", to_slot="B", state="installed", reason=None, started_at=now, updated_at=now,
    ))  # fmt: skip


def test_an_installed_upgrade_is_cancelled_before_the_restart(
    ab_client: TestClient, file_slots: Path, rauc_service: None, firmware_dir: Path, session: Session
) -> None:
    """The real RAUC service makes the running slot the one to boot again, in GRUB's environment."""
    grubenv = file_slots / "grubenv"
    installed_into_b(firmware_dir, grubenv)
    status = wait_until(lambda: (body := ab_client.get(URL).json())["booted"] and body, timeout=30,
                        what="RAUC to answer")  # fmt: skip
    assert status["primary"] == "B" and status["upgrade"]["state"] == "installed", status
    operator = login_as(ab_client, "op", "operator")
    assert operator.post(f"{URL}/cancel").status_code == 403
    assert grub_environment(grubenv)["ORDER"] == "B A"

    answer = ab_client.post(f"{URL}/cancel")
    assert answer.status_code == 200, answer.text
    status = answer.json()
    assert status["primary"] == "A" and status["booted"] == "A", status
    assert status["upgrade"]["state"] == "cancelled", status
    assert status["upgrade"]["reason"] == (
        "cancelled by admin before the restart: slot A stays the one to boot; slot B keeps 2.0.0 until the "
        "next install"
    )
    assert grub_environment(grubenv)["ORDER"].startswith("A")
    entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "firmware.cancel")).one()
    assert entry.target == "2.0.0" and entry.username == "admin" and entry.detail == {"from_slot": "A", "to_slot": "B"}

    again = ab_client.post(f"{URL}/cancel")
    assert again.status_code == 409
    assert again.json()["detail"] == (
        "no installed upgrade waits for a restart (the last one is cancelled): nothing to cancel"
    )


def test_nothing_to_cancel_without_an_installed_upgrade(ab_client: TestClient, rauc_service: None) -> None:
    wait_until(lambda: ab_client.get(URL).json()["booted"], timeout=30, what="RAUC to answer")
    answer = ab_client.post(f"{URL}/cancel")
    assert answer.status_code == 409
    assert answer.json()["detail"] == "no installed upgrade waits for a restart: nothing to cancel"


def test_an_install_the_pair_upgrade_drives_is_not_cancelled_here(
    ab_client: TestClient, file_slots: Path, rauc_service: None, firmware_dir: Path
) -> None:
    grubenv = file_slots / "grubenv"
    installed_into_b(firmware_dir, grubenv)
    now = datetime.now(UTC).isoformat()
    (firmware_dir / "pair-upgrade.json").write_text(json.dumps({
        "version": "2.0.0", "node": "alpha", "peer": "beta", "started_by": "admin", "state": "running",
        "steps": [], "started_at": now, "updated_at": now,
    }))  # fmt: skip
    answer = ab_client.post(f"{URL}/cancel")
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        "this node drives the pair upgrade to 2.0.0: stop it on the HA page, then cancel its install here"
    )
    assert grub_environment(grubenv)["ORDER"] == "B A"


def test_a_node_without_a_reboot_command_says_so(ab_client: TestClient, session: Session) -> None:
    answer = ab_client.post(f"{URL}/reboot")
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        "the node was not restarted: this node does not restart itself: no reboot command is configured"
    )
    assert session.scalars(select(AuditEntry).where(AuditEntry.action == "system.reboot")).first() is None


def test_a_reboot_runs_the_configured_command_in_the_helper_for_admins_only(
    app, ab_client: TestClient, applier, tmp_path: Path, session: Session
) -> None:  # type: ignore[no-untyped-def]
    restarted = tmp_path / "restarted"
    config = replace(applier.engine.config, reboot_command=("touch", str(restarted)))
    app.state.applier = LocalApplier(ApplyEngine(config))
    operator = login_as(ab_client, "op", "operator")
    assert operator.post(f"{URL}/reboot").status_code == 403
    assert not restarted.exists()
    admin = login_as(ab_client, "boss", "admin")
    assert admin.post(f"{URL}/reboot").status_code == 202
    assert restarted.exists()
    entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "system.reboot")).one()
    assert entry.username == "boss" and entry.success


def test_an_upgrade_outcome_is_announced_once_as_an_event(
    app, ab_client: TestClient, firmware_dir: Path, session: Session
) -> None:  # type: ignore[no-untyped-def]
    """The boot check writes the outcome into the record; the API's watch raises it as an event."""
    now = datetime.now(UTC)
    record = FirmwareUpgrade(
        version="9.9.9", from_slot="A", to_slot="B", state="rolled_back",
        reason="fulcrum-api.service restarted 5 times", started_at=now, updated_at=now,
    )  # fmt: skip
    write_record(firmware_dir, record)
    watch = app.state.upgrade_watch
    watch.settings = app.state.settings  # ab_client's, with this test's firmware directory
    watch.run_once()
    watch.run_once()  # the same outcome: not raised twice
    events = session.scalars(select(Event).where(Event.kind == "upgrade.result")).all()
    assert [(e.severity, e.message) for e in events] == [
        ("critical", "The upgrade to 9.9.9 failed and was rolled back to slot A: "
                     "fulcrum-api.service restarted 5 times"),
    ]  # fmt: skip
    assert ab_client.get(URL).json()["upgrade"]["state"] == "rolled_back"

    write_record(firmware_dir, record.model_copy(update={"state": "installed", "reason": None}))
    watch.run_once()  # not an outcome
    write_record(firmware_dir, record.model_copy(update={"state": "good", "reason": None}))
    watch.run_once()
    events = session.scalars(select(Event).where(Event.kind == "upgrade.result").order_by(Event.id)).all()
    assert [(e.severity, e.message) for e in events][1:] == [("info", "Upgraded to 9.9.9: slot B is good")]


def test_the_upgrade_watch_opens_no_transaction_without_a_new_outcome(
    app, ab_client: TestClient, firmware_dir: Path, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Its rounds (every 15 s) must not take the database's write lock for nothing: a commit waits
    on that lock, and on a slow box every transaction costs."""
    watch = app.state.upgrade_watch
    watch.settings = app.state.settings
    scopes = []
    opened = watch.telemetry.session_scope
    monkeypatch.setattr(watch.telemetry, "session_scope", lambda: scopes.append(1) or opened())
    watch.run_once()  # no record at all
    now = datetime.now(UTC)
    record = FirmwareUpgrade(version="9.9.9", from_slot="A", to_slot="B", state="installed", reason=None,
                             started_at=now, updated_at=now)  # fmt: skip
    write_record(firmware_dir, record)
    watch.run_once()  # an upgrade under way: no outcome yet
    assert scopes == []
    write_record(firmware_dir, record.model_copy(update={"state": "good"}))
    watch.run_once()
    watch.run_once()
    watch.run_once()
    assert len(scopes) == 1  # announced once; the same outcome is not looked up again
    assert len(session.scalars(select(Event).where(Event.kind == "upgrade.result")).all()) == 1


def test_the_running_version_is_the_booted_slots_bundle_version(
    app, rauc_conf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    """What the HA page and the peer show as this node's version (firmware.running_version)."""
    (tmp_path / "rauc-data").mkdir()
    (tmp_path / "rauc-data/central.raucs").write_text(
        "[slot.rootfs.0]\nbundle.compatible=fulcrum-x86_64\nbundle.version=9.0.2+pair-test\nstatus=ok\n"
    )
    monkeypatch.setattr(firmware, "_booted_versions", {})
    monkeypatch.setattr(firmware, "ASK_RAUC_AGAIN_SECONDS", 0.5)
    settings = app.state.settings.model_copy(update={"rauc_system_conf": rauc_conf})
    assert firmware.running_version(settings) == __version__  # never waits: RAUC is asked aside
    with rauc_service_running(rauc_conf, monkeypatch):
        version = wait_until(
            lambda: firmware.running_version(settings) != __version__ and firmware.running_version(settings),
            timeout=30,
            what="RAUC to report the booted slot's bundle",
        )
    assert version == "9.0.2+pair-test"
    assert firmware.running_version(settings) == version  # kept: the booted slot does not change
