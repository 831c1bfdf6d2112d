"""The image booted with UEFI firmware (OVMF), and its firmware handling (test_image_pair.py runs
these on B, which boots with UEFI while A boots with BIOS: one boot serves both).

UEFI: the kernel says UEFI booted it, on a read-only root. Firmware: the API reports its two root
slots from the RAUC service (slot A booted), and checks uploaded bundles with the appliance's own
keyring (the development CA) as the unprivileged API user: a small bundle signed with the
development key is kept, one signed with another CA's key is refused and deleted. Afterwards no
unit has failed (rauc-service is D-Bus activated on the read-only root).
"""

from __future__ import annotations

from pathlib import Path

from appliance import Appliance
from lab.api_client import ApiClient
from lab.bundles import make_bundles
from test_appliance import assert_no_failed_units, assert_read_only_root

OCTETS = {"Content-Type": "application/octet-stream"}


def assert_booted_by_uefi(vm: Appliance) -> None:
    with vm.shell() as run:
        assert run("test -d /sys/firmware/efi && echo booted-by-uefi", 30) == "booted-by-uefi"
        assert_read_only_root(run)


def assert_firmware_slots_and_bundle_checks(vm: Appliance, api: ApiClient, scratch: Path) -> None:
    bundles = make_bundles(scratch)
    status = api.get("/firmware")
    assert status["ab_system"] is True and status["detail"] is None, status
    assert status["compatible"] == "fulcrum-x86_64" and status["booted"] == "A", status
    slots = {slot["bootname"]: slot for slot in status["slots"]}
    assert set(slots) == {"A", "B"}, status
    assert slots["A"]["state"] == "booted" and slots["A"]["device"] == "/dev/disk/by-partlabel/root-a", slots

    kept = api.request("POST", "/firmware/bundle", content=bundles.good.read_bytes(), headers=OCTETS)
    assert kept.status_code == 201, kept.text
    assert kept.json()["version"] == "2.0.0"
    refused = api.request("POST", "/firmware/bundle", content=bundles.other_key.read_bytes(), headers=OCTETS)
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"].startswith("the bundle is not signed by a key this appliance trusts")
    assert api.get("/firmware")["bundle"] == kept.json()

    with vm.shell() as run:
        assert run("ls /data/fulcrum/firmware", 30).split() == ["bundle.json", "bundle.raucb"]
        assert_no_failed_units(run)
