"""The image booted with UEFI firmware (OVMF), and its firmware handling, under software emulation.

UEFI: the image boots to a working API asking for its first admin, on a read-only root, and the
kernel says UEFI booted it (test_appliance.py boots with BIOS). Firmware: the API reports its two
root slots from the RAUC service (slot A booted), and checks uploaded bundles with the appliance's
own keyring (the development CA) as the unprivileged API user: a small bundle signed with the
development key is kept, one signed with another CA's key is refused and deleted. After boot and
uploads, no unit has failed (rauc-service is D-Bus activated on the read-only root).

One boot under TCG for both (each boot costs minutes): 3 to 6 minutes, plus `make vm-image` when
its inputs changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance import Appliance
from lab.bundles import make_bundles
from test_appliance import assert_no_failed_units, assert_read_only_root, first_run_setup

pytestmark = pytest.mark.image

OCTETS = {"Content-Type": "application/octet-stream"}


def test_uefi_boot_firmware_slots_and_bundle_checks(uefi_appliance: Appliance, tmp_path: Path) -> None:
    appliance = uefi_appliance
    bundles = make_bundles(tmp_path)
    appliance.wait_for_menu()
    seconds = appliance.wait_for_api()
    print(f"\nUEFI boot to API: {seconds:.0f} s")
    with appliance.api() as api:
        assert api.get("/setup").json() == {"needs_setup": True}
    with appliance.shell() as run:
        assert run("test -d /sys/firmware/efi && echo booted-by-uefi", 30) == "booted-by-uefi"
        assert_read_only_root(run)
    token = first_run_setup(appliance)

    with appliance.api(token) as api:
        status = api.get("/firmware").json()
        assert status["ab_system"] is True and status["detail"] is None, status
        assert status["compatible"] == "fulcrum-x86_64" and status["booted"] == "A", (
            status
        )
        slots = {slot["bootname"]: slot for slot in status["slots"]}
        assert set(slots) == {"A", "B"}, status
        assert (
            slots["A"]["state"] == "booted"
            and slots["A"]["device"] == "/dev/disk/by-partlabel/root-a"
        )

        kept = api.post(
            "/firmware/bundle", content=bundles.good.read_bytes(), headers=OCTETS
        )
        assert kept.status_code == 201, kept.text
        assert kept.json()["version"] == "2.0.0"
        refused = api.post(
            "/firmware/bundle", content=bundles.other_key.read_bytes(), headers=OCTETS
        )
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"].startswith(
            "the bundle is not signed by a key this appliance trusts"
        )
        assert api.get("/firmware").json()["bundle"] == kept.json()

    with appliance.shell() as run:
        assert run("ls /data/fulcrum/firmware", 30).split() == [
            "bundle.json",
            "bundle.raucb",
        ]
        assert_no_failed_units(run)
