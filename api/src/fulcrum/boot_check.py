"""fulcrum-boot-check: at every boot, decide whether the running root slot is good.

GRUB counts the boots of a slot (image/grub/grub.cfg) and gives up on it after three that never
reached this check's verdict; this check sets the count back by marking the slot good, which it
does only once the appliance is healthy:
- the API answers on its HTTPS port;
- fulcrum-applyd runs, and neither unit is caught restarting over and over;
- the newest good revision is the one the helper applied, keepalived runs, and IPVS, read back
  here, holds what that revision asks for.

On the first boot of a newly installed slot (the upgrade record says `installed`: see
fulcrum/services/firmware_upgrade.py) an unhealthy appliance is not left to the counter: the record
says why it failed, the slot is marked bad and the machine restarts, so GRUB boots the old slot,
whose own check then records the upgrade as rolled back. Unhealthy on an ordinary boot, the check
only says so (the unit fails); the counter decides after three such boots.

Runs as root (fulcrum-boot-check.service): RAUC's mark-good and mark-bad, reading the database.
"""

from __future__ import annotations

import argparse
import logging
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from fulcrum.apply.client import ApplierError, SocketApplier
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import IpvsUnavailable, compare, expected_ipvs, read_ipvs
from fulcrum.errors import NotAbSystem
from fulcrum.services import firmware, firmware_upgrade
from fulcrum.services import revisions as revision_service
from fulcrum.settings import Settings

log = logging.getLogger("fulcrum.boot_check")

API_UNIT = "fulcrum-api.service"
APPLYD_UNIT = "fulcrum-applyd.service"
HEALTH_URL = "https://127.0.0.1/api/v1/health"
SYSTEMCTL, JOURNALCTL, RAUC = "systemctl", "journalctl", "rauc"
POLL_INTERVAL = 3.0
MAX_TRIES = 3  # GRUB's (image/grub/grub.cfg)
COMMAND_LINE = Path("/proc/cmdline")  # GRUB names the slot it booted there (rauc.slot=)
SLOT_ON_COMMAND_LINE = re.compile(r"(?:^|\s)rauc\.slot=(\S+)")


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    reason: str  # what is wrong; what was found when healthy
    final: bool = False  # no point waiting longer (a crash loop)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="fulcrum-boot-check: %(message)s", stream=sys.stdout)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--health-url", default=HEALTH_URL)
    arguments = parser.parse_args(argv)
    settings = Settings()
    try:
        firmware.rauc_system(settings)
    except NotAbSystem as error:
        log.info("nothing to check: %s", error.message)
        return 0
    directory = firmware.firmware_dir(settings)
    booted = booted_slot(COMMAND_LINE.read_text())
    record = firmware_upgrade.read_record(directory)
    if record is not None and record.state in ("installed", "failed") and record.to_slot != booted:
        reason = record.reason if record.state == "failed" else (
            f"slot {record.to_slot} did not become healthy in {MAX_TRIES} boots "
            "(it hung, crashed or restarted before its check ended)"
        )  # fmt: skip
        log.error("the upgrade to %s was rolled back to slot %s: %s", record.version, booted, reason)
        record = firmware_upgrade.moved(record, "rolled_back", reason)
        firmware_upgrade.write_record(directory, record)
    trial = record is not None and record.to_slot == booted and record.state in ("installed", "failed")
    if trial:
        assert record is not None
        log.info("first boot of slot %s after the upgrade to %s: checking it", booted, record.version)
    verdict = wait_until_healthy(settings, arguments.health_url, settings.boot_check_deadline)
    if verdict.healthy:
        rauc("status", "mark-good", "booted")
        log.info("slot %s is good: %s", booted, verdict.reason)
        if trial:
            assert record is not None
            firmware_upgrade.write_record(directory, firmware_upgrade.moved(record, "good", None))
        return 0
    if not trial:
        log.error(
            "slot %s is not healthy: %s (not marked good; GRUB counts this boot)", booted, verdict.reason
        )
        return 1
    assert record is not None
    log.error("the upgrade to %s failed: %s; marking slot %s bad and restarting", record.version,
              verdict.reason, booted)  # fmt: skip
    firmware_upgrade.write_record(directory, firmware_upgrade.moved(record, "failed", verdict.reason))
    rauc("status", "mark-bad", "booted")
    subprocess.run([SYSTEMCTL, "reboot", "--no-block"], check=False)
    return 1


def booted_slot(command_line: str) -> str | None:
    match = SLOT_ON_COMMAND_LINE.search(command_line)
    return match[1] if match else None


def wait_until_healthy(settings: Settings, health_url: str, deadline_seconds: float) -> Verdict:
    deadline = time.monotonic() + deadline_seconds
    while True:
        verdict = check(settings, health_url)
        if verdict.healthy or verdict.final:
            return verdict
        if time.monotonic() >= deadline:
            return Verdict(False, f"{verdict.reason} ({deadline_seconds:g} s after the check started)")
        time.sleep(POLL_INTERVAL)


def check(settings: Settings, health_url: str) -> Verdict:
    for unit in (API_UNIT, APPLYD_UNIT):
        crashing = crash_loop(unit, settings.boot_check_max_restarts)
        if crashing:
            return Verdict(False, crashing, final=True)
    answer = api_answer(health_url)
    if answer:
        return Verdict(False, answer)
    try:
        dataplane = SocketApplier(settings.apply_socket, timeout=30).status()
    except ApplierError as error:
        return Verdict(False, str(error))
    running = running_revision(settings)
    if running is None:
        return Verdict(True, "the API answers and the apply helper runs (no configuration yet)")
    number, snapshot = running
    if dataplane.applied_revision != number or dataplane.interrupted_revision is not None:
        applied = dataplane.applied_revision
        return Verdict(False, f"revision {number} is not applied yet (the helper has {applied})")
    if not dataplane.ipvs_available:
        return Verdict(True, f"the API answers and revision {number} is applied (no IPVS here)")
    if not dataplane.keepalived_running:
        return Verdict(False, f"keepalived does not run for revision {number}")
    try:
        differences = compare(expected_ipvs(snapshot), read_ipvs(counters=False))
    except IpvsUnavailable as error:
        return Verdict(False, f"IPVS cannot be read: {error}")
    if differences:
        return Verdict(False, f"IPVS does not match revision {number}: {'; '.join(differences[:3])}")
    return Verdict(True, f"the API answers and IPVS runs revision {number}")


def crash_loop(unit: str, max_restarts: int) -> str | None:
    """Why `unit` counts as failed: systemd gave up on it, or it keeps restarting."""
    shown = subprocess.run(
        [SYSTEMCTL, "show", "--property=ActiveState,NRestarts", unit],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    properties = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
    restarts = int(properties.get("NRestarts", "0") or 0)
    if properties.get("ActiveState") != "failed" and restarts < max_restarts:
        return None
    journal = subprocess.run(
        [JOURNALCTL, "--boot", f"--unit={unit}", "--lines=3", "--output=cat", "--no-pager"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    last = " / ".join(line.strip() for line in journal.stdout.splitlines() if line.strip())
    state = "failed" if properties.get("ActiveState") == "failed" else f"restarted {restarts} times"
    return f"{unit} {state}" + (f": {last[:300]}" if last else "")


def api_answer(url: str) -> str | None:
    """None when the API's health route answers 200; what went wrong otherwise."""
    # The API's own certificate on the loopback: nothing to authenticate against here (a name-less
    # self-signed certificate, or the admin's for other names), and only root binds port 443.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=10, context=context) as response:  # noqa: S310 (our URL)
            return None if response.status == 200 else f"the API answered {response.status}"
    except urllib.error.HTTPError as error:
        return f"the API answered {error.code}"
    except (OSError, ValueError) as error:
        return f"the API does not answer at {url}: {error}"


def running_revision(settings: Settings) -> tuple[int, ConfigSnapshot] | None:
    """The newest good revision, read from the database without writing to it."""
    assert settings.database_url is not None
    path = settings.database_url.removeprefix("sqlite:///")
    engine = create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        with Session(engine) as session:
            revision = revision_service.running(session)
            snapshot = revision_service.snapshot_of(revision)
            return (revision.number, snapshot) if revision and snapshot else None
    finally:
        engine.dispose()


def rauc(*arguments: str) -> None:
    done = subprocess.run([RAUC, *arguments], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log.error("rauc %s failed: %s", " ".join(arguments), done.stderr.strip()[-300:])


if __name__ == "__main__":
    sys.exit(main())
