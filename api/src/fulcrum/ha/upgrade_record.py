"""The record of a pair upgrade (fulcrum.ha.pair_upgrade), a file beside the firmware bundle on
/data, which both slots share: the node that drives the upgrade reads it back after its own
restart, and each node sends its record to the peer with its status (fulcrum.ha.view), so that
the peer's dashboard follows an upgrade the other node drives."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fulcrum.schemas.ha import PairUpgrade
from fulcrum.services import firmware
from fulcrum.settings import Settings

PAIR_UPGRADE_FILE = "pair-upgrade.json"


def record_path(settings: Settings) -> Path:
    return firmware.firmware_dir(settings) / PAIR_UPGRADE_FILE


def read(settings: Settings) -> PairUpgrade | None:
    try:
        return PairUpgrade.model_validate_json(record_path(settings).read_text())
    except OSError:  # none, or unreadable: the peer status it travels in must not fail for it
        return None
    except ValueError:  # cut short, or not ours: no upgrade is known
        return None


def write(settings: Settings, record: PairUpgrade) -> None:
    path = record_path(settings)
    path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
    record.updated_at = datetime.now(UTC)
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(record.model_dump_json(indent=1))
    temporary.replace(path)
