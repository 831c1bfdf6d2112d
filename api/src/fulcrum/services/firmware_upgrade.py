"""Installing the uploaded bundle into the inactive root slot, and following the upgrade to its end.

RAUC's service (root) writes the slot; the API, unprivileged, only asks it over D-Bus with `busctl`
(the bus policy lets only root and the API's group talk to it:
overlay/etc/dbus-1/system.d/fulcrum-rauc.conf). The bundle's path is the API's own file; nothing a
client sends reaches the command line.

The upgrade record, upgrade.json beside the bundle on /data (which both slots share), follows one
upgrade across the reboot:
- the API writes it when the install starts (`installing`) and moves it on once RAUC is idle again:
  `installed` when the target slot carries the bundle's version, `install_failed` with RAUC's own
  error otherwise (the running slot was never touched);
- an admin may cancel an installed upgrade before the restart (`cancelled`): RAUC makes the running
  slot the one to boot again, and the installed slot keeps the new version until the next install;
- fulcrum-boot-check (root, at every boot: fulcrum/boot_check.py) moves an installed upgrade on:
  `good` when the new slot is found healthy, `failed` when not (it then marks the slot bad and
  restarts the machine), and `rolled_back` when the machine came up on the old slot instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier, ApplierError
from fulcrum.errors import Conflict, NotAbSystem, NotFound
from fulcrum.models import Event
from fulcrum.schemas.firmware import FirmwareInstall, FirmwareStatus, FirmwareUpgrade, UpgradeState
from fulcrum.schemas.telemetry import Severity
from fulcrum.services import audit, firmware
from fulcrum.services.events import EventRecorder
from fulcrum.settings import Settings

UPGRADE_FILE = "upgrade.json"
# The outcomes announced as events: severity, and the words ({version}, {from_slot}, {to_slot}).
OUTCOMES: dict[str, tuple[Severity, str]] = {
    "good": (Severity.INFO, "Upgraded to {version}: slot {to_slot} is good"),
    "install_failed": (
        Severity.WARNING,
        "Installing {version} into slot {to_slot} failed; the running system was not touched",
    ),
    "rolled_back": (
        Severity.CRITICAL,
        "The upgrade to {version} failed and was rolled back to slot {from_slot}",
    ),
}
RAUC_INSTALLER = ("de.pengutronix.rauc", "/", "de.pengutronix.rauc.Installer")
BUSCTL = "busctl"


def status(settings: Settings) -> FirmwareStatus:
    """The slots and the waiting bundle (firmware.status), RAUC's install now and the last upgrade."""
    current = firmware.status(settings)
    if not current.ab_system:
        return current
    install = install_state(settings.rauc_timeout)
    upgrade = read_record(firmware.firmware_dir(settings))
    if upgrade is not None and upgrade.state == "installing" and install is not None:
        upgrade = _settle_install(settings, install, upgrade)
        current = firmware.status(settings)  # the bundle is gone once installed
    return current.model_copy(update={"install": install, "upgrade": upgrade})


def start_install(session: Session, actor: audit.Actor, settings: Settings) -> FirmwareStatus:
    """Have RAUC write the waiting bundle into the slot that is not running; answers at once."""
    firmware.rauc_system(settings)
    bundle = firmware.pending_bundle(settings)
    if bundle is None:
        raise NotFound("no firmware bundle is waiting to be installed: upload one first")
    current = firmware.status(settings)
    if current.booted is None or not current.slots:
        raise Conflict(f"RAUC cannot say which slot is running, so nothing was installed: {current.detail}")
    targets = [slot for slot in current.slots if slot.bootname and slot.bootname != current.booted]
    if len(targets) != 1 or targets[0].bootname is None:
        raise Conflict(f"expected exactly one slot besides the running {current.booted}; RAUC reports "
                       f"{', '.join(slot.name for slot in current.slots)}")  # fmt: skip
    install = install_state(settings.rauc_timeout)
    if install is None:
        raise Conflict("RAUC's service does not answer on D-Bus, so nothing was installed")
    if install.operation != "idle":
        raise Conflict(f"RAUC is already {install.operation}: wait for it to finish")
    bundle_path = firmware.firmware_dir(settings) / firmware.BUNDLE_FILE
    now = datetime.now(UTC)
    record = FirmwareUpgrade(
        version=bundle.version,
        from_slot=current.booted,
        to_slot=targets[0].bootname,
        state="installing",
        reason=None,
        started_at=now,
        updated_at=now,
    )
    write_record(firmware.firmware_dir(settings), record)
    result = _call_installer(settings, "InstallBundle", "sa{sv}", str(bundle_path), "0")
    if result.returncode != 0:
        reason = firmware.last_words(result.stderr) or "no answer"
        write_record(firmware.firmware_dir(settings), moved(record, "install_failed", reason))
        raise Conflict(f"RAUC did not start the install: {reason}")
    audit.record(
        session,
        actor,
        "firmware.install",
        bundle.version,
        {"sha256": bundle.sha256, "from_slot": record.from_slot, "to_slot": record.to_slot},
    )
    return status(settings)


def cancel_install(session: Session, actor: audit.Actor, settings: Settings) -> FirmwareStatus:
    """Withdraw an installed upgrade before the node restarts into it: RAUC marks the running slot
    the one to boot (its D-Bus Mark("active", "booted")), so the next restart, planned or not, comes
    back on the version running now."""
    firmware.rauc_system(settings)
    current = status(settings)  # settles an install RAUC has just finished
    upgrade = current.upgrade
    if upgrade is None or upgrade.state != "installed":
        state = f" (the last one is {upgrade.state.replace('_', ' ')})" if upgrade else ""
        raise Conflict(f"no installed upgrade waits for a restart{state}: nothing to cancel")
    if current.booted != upgrade.from_slot:
        raise Conflict(f"this node runs slot {current.booted}, not slot {upgrade.from_slot} the upgrade "
                       f"was installed from: restart it once, then look again")  # fmt: skip
    result = _call_installer(settings, "Mark", "ss", "active", "booted")
    if result.returncode != 0:
        reason = firmware.last_words(result.stderr) or "no answer"
        raise Conflict(f"RAUC did not make slot {upgrade.from_slot} the one to boot, so the upgrade to "
                       f"{upgrade.version} still waits for the restart: {reason}")  # fmt: skip
    after = firmware.status(settings)
    if after.primary != upgrade.from_slot:
        raise Conflict(f"RAUC answered, but slot {after.primary or '?'} is still the one to boot, so the "
                       f"upgrade to {upgrade.version} still waits for the restart")  # fmt: skip
    reason = (f"cancelled by {actor.username} before the restart: slot {upgrade.from_slot} stays the one to "
              f"boot; slot {upgrade.to_slot} keeps {upgrade.version} until the next install")  # fmt: skip
    write_record(firmware.firmware_dir(settings), moved(upgrade, "cancelled", reason))
    audit.record(session, actor, "firmware.cancel", upgrade.version,
                 {"from_slot": upgrade.from_slot, "to_slot": upgrade.to_slot})  # fmt: skip
    return status(settings)


def refuse_while_installing(settings: Settings, doing: str) -> None:
    """The waiting bundle is RAUC's to read while it installs: not replaced or deleted under it."""
    install = install_state(settings.rauc_timeout)
    if install is not None and install.operation != "idle":
        raise Conflict(f"RAUC is installing the waiting bundle: {doing} when the install has finished")


def reboot(session: Session, actor: audit.Actor, applier: Applier, settings: Settings) -> None:
    """Restart the node now (into the installed slot, when an upgrade waits for it)."""
    try:
        firmware.rauc_system(settings)
        install = install_state(settings.rauc_timeout)
    except NotAbSystem:
        install = None
    if install is not None and install.operation != "idle":
        raise Conflict("RAUC is installing the waiting bundle: restart when the install has finished")
    upgrade = read_record(firmware.firmware_dir(settings))
    detail = {"upgrade": upgrade.version, "to_slot": upgrade.to_slot} if upgrade else {}
    try:
        applier.reboot()
    except ApplierError as error:
        raise Conflict(f"the node was not restarted: {error}") from error
    audit.record(session, actor, "system.reboot", upgrade.version if upgrade else "", detail)


def outcome_key(settings: Settings) -> tuple[str, str, str] | None:
    """The outcome the upgrade record holds, to announce unless it was (a file read: cheap); None
    when it holds none."""
    record = read_record(firmware.firmware_dir(settings))
    if record is None or record.state not in OUTCOMES:
        return None
    return record.version, record.state, record.started_at.isoformat()


def announce_outcome(session: Session, events: EventRecorder, settings: Settings) -> bool:
    """Record the last upgrade's outcome as an `upgrade.result` event, once (the newest event of the
    kind says which outcome was announced last). True when an event was recorded."""
    record = read_record(firmware.firmware_dir(settings))
    if record is None or record.state not in OUTCOMES:
        return False
    severity, text = OUTCOMES[record.state]
    detail = {"version": record.version, "state": record.state, "started_at": record.started_at.isoformat(),
              "from_slot": record.from_slot, "to_slot": record.to_slot, "reason": record.reason}  # fmt: skip
    last = session.scalars(
        select(Event).where(Event.kind == "upgrade.result").order_by(Event.id.desc()).limit(1)
    ).first()
    if last is not None and all(
        last.detail.get(key) == detail[key] for key in ("version", "state", "started_at")
    ):
        return False
    message = text.format(version=record.version, from_slot=record.from_slot, to_slot=record.to_slot)
    events.record("upgrade.result", severity, message + (f": {record.reason}" if record.reason else ""),
                  detail=detail, session=session)  # fmt: skip
    return True


def _call_installer(
    settings: Settings, method: str, signature: str, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """A method of RAUC's Installer over D-Bus; its arguments are ours, never a client's."""
    installer, path, interface = RAUC_INSTALLER
    command = [BUSCTL, "call", installer, path, interface, method, signature, *arguments]
    return firmware.run_tool(command, settings.rauc_timeout)


def install_state(timeout: float) -> FirmwareInstall | None:
    """RAUC's Operation, Progress and LastError properties; None when its service does not answer."""
    installer, path, interface = RAUC_INSTALLER
    command = [BUSCTL, "--json=short", "get-property", installer, path, interface]
    result = firmware.run_tool([*command, "Operation", "Progress", "LastError"], timeout)
    if result.returncode != 0:
        return None
    try:
        operation, progress, last_error = (json.loads(line)["data"] for line in result.stdout.splitlines())
        percent, message, _depth = progress
    except (ValueError, KeyError, TypeError):
        return None
    installing = operation != "idle"
    return FirmwareInstall(
        operation=str(operation),
        progress=int(percent) if installing else None,
        message=str(message) if installing and message else None,
        last_error=str(last_error) or None,
    )


def read_record(directory: Path) -> FirmwareUpgrade | None:
    try:
        return FirmwareUpgrade.model_validate_json((directory / UPGRADE_FILE).read_text())
    except FileNotFoundError:
        return None
    except ValueError:  # not written by us, or cut short: no upgrade is known
        return None


def write_record(directory: Path, record: FirmwareUpgrade) -> None:
    """Atomically; readable by the API when the boot check (root) writes it."""
    directory.mkdir(mode=0o750, parents=True, exist_ok=True)
    temporary = directory / (UPGRADE_FILE + ".new")
    temporary.write_text(record.model_dump_json(indent=1))
    os.chmod(temporary, 0o644)
    os.replace(temporary, directory / UPGRADE_FILE)


def moved(record: FirmwareUpgrade, state: UpgradeState, reason: str | None = None) -> FirmwareUpgrade:
    return record.model_copy(
        update={"state": state, "reason": reason or record.reason, "updated_at": datetime.now(UTC)}
    )


def _settle_install(settings: Settings, install: FirmwareInstall, record: FirmwareUpgrade) -> FirmwareUpgrade:
    """An install RAUC has finished: did the target slot get the bundle?"""
    if install.operation != "idle":
        return record
    # The slots read after RAUC said idle: read before, they may predate the install's end.
    current = firmware.status(settings)
    target = next((slot for slot in current.slots if slot.bootname == record.to_slot), None)
    if target is not None and target.version == record.version:
        record = moved(record, "installed", None)
        _drop_installed_bundle(settings, record.version)
    else:
        reason = install.last_error or f"slot {record.to_slot} does not carry version {record.version}"
        record = moved(record, "install_failed", reason)
    write_record(firmware.firmware_dir(settings), record)
    return record


def _drop_installed_bundle(settings: Settings, version: str) -> None:
    """The bundle is in its slot now: its copy on /data only takes room."""
    bundle = firmware.pending_bundle(settings)
    if bundle is not None and bundle.version == version:
        firmware.remove_bundle_files(settings)
