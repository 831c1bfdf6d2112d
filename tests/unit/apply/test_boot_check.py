"""fulcrum-boot-check's verdicts (fulcrum/boot_check.py) on this host: a real apply helper on its
Unix socket (in a throwaway namespace, without IPVS), a real HTTP health route, a real SQLite
database and upgrade record. systemd and RAUC cannot run here: `systemctl`, `journalctl` and
`rauc` are small scripts on PATH that answer as they would and note each call. The real ones
drive the same program on the appliance image (tests/image/test_appliance.py: the upgrade that
is marked good, and the one rolled back).
"""

from __future__ import annotations

import http.server
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fulcrum import boot_check, migrate
from fulcrum.apply.daemon import ApplyServer
from fulcrum.schemas.firmware import FirmwareUpgrade
from fulcrum.services import firmware_upgrade
from lab.serving import serving

# Each fake tool notes its arguments; `systemctl show` answers from show-<unit> when the test
# wrote one (a unit in a crash loop), else as a unit that runs.
FAKE_TOOL = """#!/bin/sh
echo "$(basename "$0") $*" >> "{calls}"
if [ "$(basename "$0")" = systemctl ] && [ "$1" = show ]; then
    eval "unit=\\$$#"
    if [ -f "{tools}/show-$unit" ]; then cat "{tools}/show-$unit"; else printf 'ActiveState=active\\nNRestarts=0\\n'; fi
fi
if [ "$(basename "$0")" = journalctl ]; then echo "fulcrum-api.service: Main process exited, status=1/FAILURE"; fi
exit 0
"""


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/api/v1/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_url() -> Iterator[str]:
    with serving(http.server.HTTPServer(("127.0.0.1", 0), Health)) as server:
        yield f"http://127.0.0.1:{server.server_port}/api/v1/health"


@pytest.fixture
def unanswered_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/api/v1/health"  # closed again: refused


@pytest.fixture
def node(tmp_path: Path, server: ApplyServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An A/B node's files; returns its firmware directory (where the upgrade record lives)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("rauc", "systemctl", "journalctl"):
        (tools / name).write_text(FAKE_TOOL.format(calls=tmp_path / "calls", tools=tools))
        (tools / name).chmod(0o755)
    (tmp_path / "rauc").mkdir()
    (tmp_path / "rauc/system.conf").write_text("[system]\ncompatible=fulcrum-test\n[keyring]\npath=ca.pem\n")
    (tmp_path / "rauc/ca.pem").write_text("not read by the boot check\n")
    data = tmp_path / "data"
    data.mkdir()
    migrate.upgrade(f"sqlite:///{data / 'fulcrum.db'}")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FULCRUM_DATA_DIR", str(data))
    monkeypatch.setenv("FULCRUM_RAUC_SYSTEM_CONF", str(tmp_path / "rauc/system.conf"))
    monkeypatch.setenv("FULCRUM_APPLY_SOCKET", str(server.server_address))
    monkeypatch.setenv("FULCRUM_BOOT_CHECK_DEADLINE", "1")
    monkeypatch.setattr(boot_check, "POLL_INTERVAL", 0.1)
    return data / "firmware"


def boot_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slot: str) -> None:
    command_line = tmp_path / "cmdline"
    command_line.write_text(f"BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=root-{slot.lower()} rauc.slot={slot} ro\n")
    monkeypatch.setattr(boot_check, "COMMAND_LINE", command_line)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def installed(firmware: Path, to_slot: str = "B") -> None:
    now = datetime.now(UTC)
    firmware_upgrade.write_record(firmware, FirmwareUpgrade(
        version="9.0.2", from_slot="A" if to_slot == "B" else "B", to_slot=to_slot, state="installed",
        reason=None, started_at=now, updated_at=now,
    ))  # fmt: skip


def test_a_healthy_first_boot_of_the_new_slot_marks_it_good(
    tmp_path: Path, node: Path, health_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(node)
    boot_slot(tmp_path, monkeypatch, "B")
    assert boot_check.main(["--health-url", health_url]) == 0
    assert "rauc status mark-good booted" in calls(tmp_path)
    record = firmware_upgrade.read_record(node)
    assert record is not None and (record.state, record.reason) == ("good", None)


def test_a_crash_loop_on_the_new_slot_marks_it_bad_and_restarts_with_the_reason(
    tmp_path: Path, node: Path, health_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(node)
    boot_slot(tmp_path, monkeypatch, "B")
    (tmp_path / "tools/show-fulcrum-api.service").write_text("ActiveState=activating\nNRestarts=5\n")
    assert boot_check.main(["--health-url", health_url]) == 1
    made = calls(tmp_path)
    assert "rauc status mark-bad booted" in made and "systemctl reboot --no-block" in made, made
    assert not any("mark-good" in call for call in made), made
    record = firmware_upgrade.read_record(node)
    assert record is not None and record.state == "failed"
    assert record.reason == ("fulcrum-api.service restarted 5 times: "
                             "fulcrum-api.service: Main process exited, status=1/FAILURE"), record.reason


def test_the_old_slot_booting_again_records_the_roll_back_and_is_marked_good(
    tmp_path: Path, node: Path, health_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(node)  # never judged: the new slot hung before its check ended, three times
    boot_slot(tmp_path, monkeypatch, "A")
    assert boot_check.main(["--health-url", health_url]) == 0
    record = firmware_upgrade.read_record(node)
    assert record is not None and record.state == "rolled_back"
    assert record.reason is not None and "did not become healthy in 3 boots" in record.reason
    assert "rauc status mark-good booted" in calls(tmp_path)


def test_an_unhealthy_ordinary_boot_is_left_to_grubs_counter(
    tmp_path: Path, node: Path, unanswered_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot_slot(tmp_path, monkeypatch, "A")  # no upgrade under way
    assert boot_check.main(["--health-url", unanswered_url]) == 1
    assert not any(call.startswith("rauc") or "reboot" in call for call in calls(tmp_path)), calls(tmp_path)
    assert firmware_upgrade.read_record(node) is None
