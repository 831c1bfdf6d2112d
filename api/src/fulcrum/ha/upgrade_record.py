"""The record of a pair upgrade (fulcrum.ha.pair_upgrade), a file beside the firmware bundle on
/data, which both slots share: the node that drives the upgrade reads it back after its own
restart, and each node sends its record to the peer with its status (fulcrum.ha.view), so that
the peer's dashboard follows an upgrade the other node drives. An admin's request to stop it is
a file of its own, so that the driver's writes of the record cannot lose it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fulcrum.errors import Conflict
from fulcrum.schemas.ha import PairUpgrade
from fulcrum.services import firmware
from fulcrum.settings import Settings

PAIR_UPGRADE_FILE = "pair-upgrade.json"
STOP_FILE = "pair-upgrade.stop"  # holds the name of the admin who asked


def record_path(settings: Settings) -> Path:
    return firmware.firmware_dir(settings) / PAIR_UPGRADE_FILE


def read(settings: Settings) -> PairUpgrade | None:
    """The record, with the request to stop it if one waits for the driver."""
    try:
        record = PairUpgrade.model_validate_json(record_path(settings).read_text())
    except OSError:  # none, or unreadable: the peer status it travels in must not fail for it
        return None
    except ValueError:  # cut short, or not ours: no upgrade is known
        return None
    record.stop_requested_by = _stop_requested_by(settings) if record.state == "running" else None
    return record


def refuse_while_running(settings: Settings, doing: str) -> None:
    """This node's firmware is the pair upgrade's while it drives one: not changed beside it."""
    record = read(settings)
    if record is not None and record.state == "running":
        raise Conflict(f"this node drives the pair upgrade to {record.version}: stop it on the HA page, "
                       f"then {doing}")  # fmt: skip


def write(settings: Settings, record: PairUpgrade) -> None:
    record.updated_at = datetime.now(UTC)
    _write(record_path(settings), record.model_dump_json(indent=1, exclude={"stop_requested_by"}))


def request_stop(settings: Settings, username: str) -> None:
    _write(firmware.firmware_dir(settings) / STOP_FILE, username)


def _stop_requested_by(settings: Settings) -> str | None:
    try:
        return (firmware.firmware_dir(settings) / STOP_FILE).read_text().strip() or "?"
    except OSError:  # none asked
        return None


def clear_stop(settings: Settings) -> None:
    (firmware.firmware_dir(settings) / STOP_FILE).unlink(missing_ok=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
    firmware.write_atomically(path, text)
