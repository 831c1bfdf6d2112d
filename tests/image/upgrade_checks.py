"""A/B firmware upgrades of the booted appliances through their APIs: a faulty one rolled back by
itself (test_appliance.py), a good one of both nodes of a pair (test_image_pair.py).

The bundles are cut from the image's own slot A by `make bundle` (image/make-bundle --rootfs), as a
release bundle is, signed with the development key. Before that, each root file system gets a
marker naming its version (debugfs writes it into the ext4 image: nothing is mounted), so the test
can see which system runs; the faulty one also gets a test-only fault, a drop-in that makes
fulcrum-api.service exit at once, as an upgrade whose API cannot start would.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from appliance import RAW_IMAGE, REPO, Appliance

MAKE_BUNDLE = REPO / "image/make-bundle"
OCTETS = {"Content-Type": "application/octet-stream"}
MARKER = "/etc/fulcrum-test-bundle"
API_FAULT = "[Service]\nExecStart=\nExecStart=/bin/false\n"
INSTALL_TIMEOUT = 1200.0
UPLOAD_TIMEOUT = 900.0
# The boot check marks a slot good once the appliance is healthy: after the API answers, a read of
# IPVS and the running revision, in Python under emulation.
VERDICT_TIMEOUT = 600.0


GOOD_VERSION = "9.0.2+upgrade-test"
FAULTY_VERSION = "9.0.3+api-fault-test"


def make_bundle(work: Path, version: str, fault: bool) -> Path:
    """A bundle of the raw image `make vm-image` built (the `image` fixture), marked `version`;
    with the API fault if `fault`."""
    base = work / "slot-a.ext4"
    _slot_a(RAW_IMAGE, base)
    bundle = _bundle(base, work, version, fault)
    base.unlink()
    return bundle


def upload_and_install(appliance: Appliance, token: str, bundle: Path, version: str) -> dict[str, Any]:
    """Upload the bundle, install it into the other slot; the firmware status once installed."""
    with appliance.api(token) as api:
        with bundle.open("rb") as body:
            kept = api.post("/firmware/bundle", content=body, headers=OCTETS, timeout=UPLOAD_TIMEOUT)
        assert kept.status_code == 201, kept.text
        assert kept.json()["version"] == version
        started = api.post("/firmware/install")
        assert started.status_code == 202, started.text
        upgrade = started.json()["upgrade"]
        assert upgrade["state"] == "installing" and upgrade["version"] == version, upgrade
        again = api.post("/firmware/install")
        assert again.status_code == 409, f"a second install while one runs: {again.text}"
        deleted = api.delete("/firmware/bundle")
        assert deleted.status_code == 409, f"the bundle RAUC is installing was deleted: {deleted.text}"
        status = _wait_for_state(appliance, api, ("installed", "install_failed"), INSTALL_TIMEOUT)
    assert status["upgrade"]["state"] == "installed", status
    target = {slot["bootname"]: slot for slot in status["slots"]}[status["upgrade"]["to_slot"]]
    assert target["version"] == version, status
    assert status["bundle"] is None, "the installed bundle was kept on /data"
    return status


def assert_upgraded(firmware: dict[str, Any], slot: str, version: str) -> None:
    upgrade = firmware["upgrade"]
    assert upgrade["state"] == "good" and upgrade["version"] == version, firmware
    assert firmware["booted"] == slot, firmware
    booted = {entry["bootname"]: entry for entry in firmware["slots"]}[slot]
    assert booted["version"] == version and booted["boot_status"] == "good", firmware


def assert_upgrade_rolled_back(firmware: dict[str, Any], version: str, tried: str, kept: str) -> None:
    """The faulty bundle went into slot `tried`, was found crashing and marked bad; slot `kept`
    runs again."""
    upgrade = firmware["upgrade"]
    assert upgrade["state"] == "rolled_back" and upgrade["version"] == version, firmware
    assert (upgrade["from_slot"], upgrade["to_slot"]) == (kept, tried), firmware
    assert "fulcrum-api.service" in (upgrade["reason"] or ""), firmware
    assert firmware["booted"] == kept, firmware
    slots = {entry["bootname"]: entry for entry in firmware["slots"]}
    assert slots[tried]["boot_status"] == "bad" and slots[kept]["boot_status"] == "good", firmware


def reboot_through_api(appliance: Appliance, token: str) -> None:
    with appliance.api(token) as api:
        answer = api.post("/firmware/reboot")
    assert answer.status_code == 202, answer.text
    appliance.booted_at = time.monotonic()
    appliance.wait_for_api_gone(300)


def wait_for_verdict(appliance: Appliance, token: str, states: tuple[str, ...], timeout: float) -> dict[str, Any]:
    """The firmware status once the last upgrade reached one of `states` and the booted slot is
    marked good (after a roll-back the boot check records it first, then checks the old slot)."""
    with appliance.api(token) as api:
        return _wait_for_state(appliance, api, states, timeout, booted_good=True)


def _wait_for_state(
    appliance: Appliance, api: httpx.Client, states: tuple[str, ...], timeout: float, booted_good: bool = False
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        appliance.drain_console()
        try:
            answer = api.get("/firmware")
        except httpx.TransportError as error:  # the node is restarting
            last = error
        else:
            last = answer.json() if answer.status_code == 200 else answer.text
            if isinstance(last, dict) and (last.get("upgrade") or {}).get("state") in states:
                booted = [slot for slot in last["slots"] if slot["bootname"] == last["booted"]]
                if not booted_good or (booted and booted[0]["boot_status"] == "good"):
                    return last
        time.sleep(5)
    raise AssertionError(f"the upgrade did not reach {states} in {timeout:g} s; last: {last}")


def _slot_a(image: Path, out: Path) -> None:
    table = subprocess.run(
        ["partx", "--show", "--noheadings", "--output", "START,SECTORS,NAME", str(image)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    start, sectors = next((int(a), int(b)) for a, b, name in (line.split() for line in table.splitlines())
                          if name == "root-a")  # fmt: skip
    subprocess.run(
        ["dd", f"if={image}", f"of={out}", "bs=1M", "iflag=skip_bytes,count_bytes", f"skip={start * 512}",
         f"count={sectors * 512}", "conv=sparse", "status=none"],
        check=True, timeout=600,
    )  # fmt: skip


def _bundle(base: Path, work: Path, version: str, fault: bool) -> Path:
    rootfs = work / f"rootfs-{version}.ext4"
    subprocess.run(["cp", "--sparse=always", str(base), str(rootfs)], check=True)
    (work / "marker").write_text(version + "\n")
    commands = [f"write {work / 'marker'} {MARKER}"]
    if fault:
        (work / "fault.conf").write_text(API_FAULT)
        commands += [
            "mkdir /etc/systemd/system/fulcrum-api.service.d",
            f"write {work / 'fault.conf'} /etc/systemd/system/fulcrum-api.service.d/test-fault.conf",
        ]
    (work / "debugfs.cmd").write_text("\n".join(commands) + "\n")
    subprocess.run(["debugfs", "-w", "-f", str(work / "debugfs.cmd"), str(rootfs)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    output = work / f"fulcrum-{version}.raucb"
    subprocess.run(
        [str(MAKE_BUNDLE), "--rootfs", str(rootfs), "--output", str(output)],
        check=True, capture_output=True, timeout=1200,
        env={**os.environ, "FULCRUM_BUNDLE_VERSION": version, "FULCRUM_BUNDLE_SQUASHFS_ARGS": "-comp lz4"},
    )  # fmt: skip
    rootfs.unlink()
    return output

