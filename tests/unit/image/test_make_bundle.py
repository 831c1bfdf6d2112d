"""make bundle (image/make-bundle): the file system in slot A of a disk image, byte for byte and
without the rest of the partition, in a verity bundle signed with the development key, with the
tree's version and the appliance's compatible string. Run for real on a small GPT disk made here
(sfdisk, mke2fs) and read back with `rauc info` and `rauc extract`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MAKE_BUNDLE = REPO / "image/make-bundle"
KEYRING = REPO / "image/rauc/dev-keys/ca.cert.pem"
MiB = 1 << 20

pytestmark = pytest.mark.skipif(
    any(
        shutil.which(tool) is None
        for tool in ("rauc", "mksquashfs", "unsquashfs", "sfdisk", "mke2fs")
    ),
    reason="needs rauc, squashfs-tools, fdisk and e2fsprogs (scripts/setup-host installs them)",
)


def run(*command: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def make_disk(work: Path) -> tuple[Path, bytes]:
    """A GPT disk with the appliance's partition names; slot A (8 MiB) holds a smaller ext4 with a
    file, as the image's slot A holds a file system sized to its content."""
    files = work / "files"
    files.mkdir()
    (files / "random").write_bytes(os.urandom(256 * 1024))
    rootfs = work / "root-a.ext4"
    run("mke2fs", "-q", "-t", "ext4", "-L", "root-a", "-d", files, rootfs, "5M")
    disk = work / "disk.img"
    with disk.open("wb") as out:
        out.truncate(32 * MiB)
    layout = "label: gpt\nsize=1MiB, name=bios\nsize=2MiB, name=esp\nsize=8MiB, name=root-a\nsize=8MiB, name=root-b\n"
    subprocess.run(
        ["sfdisk", "--quiet", str(disk)],
        input=layout,
        text=True,
        check=True,
        timeout=60,
    )
    table = json.loads(run("sfdisk", "--json", disk).stdout)["partitiontable"]
    (start,) = [
        part["start"] for part in table["partitions"] if part["name"] == "root-a"
    ]
    with disk.open("r+b") as out:
        out.seek(start * table["sectorsize"])
        out.write(rootfs.read_bytes())
    return disk, rootfs.read_bytes()


def test_the_bundle_carries_slot_a_of_the_disk_signed_with_the_version_given(
    tmp_path: Path,
) -> None:
    disk, slot_a = make_disk(tmp_path)
    bundle = tmp_path / "out/fulcrum.raucb"
    run(
        MAKE_BUNDLE,
        "--disk",
        disk,
        "--output",
        bundle,
        FULCRUM_BUNDLE_VERSION="2.0.0-test",
    )

    info = json.loads(
        run(
            "rauc", f"--keyring={KEYRING}", "info", "--output-format=json", bundle
        ).stdout
    )
    assert info["compatible"] == "fulcrum-x86_64" and info["version"] == "2.0.0-test"
    assert [list(image) for image in info["images"]] == [["rootfs"]]

    run("rauc", f"--keyring={KEYRING}", "extract", bundle, tmp_path / "extracted")
    assert (tmp_path / "extracted/rootfs.ext4").read_bytes() == slot_a


def test_the_version_comes_from_the_tree(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs.ext4"
    (tmp_path / "files").mkdir()
    (tmp_path / "files/random").write_bytes(os.urandom(64 * 1024))
    run("mke2fs", "-q", "-t", "ext4", "-d", tmp_path / "files", rootfs, "4M")
    bundle = tmp_path / "bundle.raucb"
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "FULCRUM_BUNDLE_VERSION"
    }
    subprocess.run(
        [str(MAKE_BUNDLE), "--rootfs", str(rootfs), "--output", str(bundle)],
        check=True,
        capture_output=True,
        timeout=120,
        env=env,
    )
    info = json.loads(
        run(
            "rauc", f"--keyring={KEYRING}", "info", "--output-format=json", bundle
        ).stdout
    )
    commit = run("git", "-C", REPO, "rev-parse", "--short", "HEAD").stdout.strip()
    version = tomllib.loads((REPO / "api/pyproject.toml").read_text())["project"][
        "version"
    ]
    assert re.fullmatch(
        rf"{re.escape(version)}\+g{commit}(\.dirty)?", info["version"]
    ), info["version"]


def test_an_image_without_an_ext4_file_system_is_refused(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs.ext4"
    rootfs.write_bytes(os.urandom(1 << 20))
    made = subprocess.run(
        [str(MAKE_BUNDLE), "--rootfs", str(rootfs), "--output", str(tmp_path / "b.raucb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode != 0
    assert "does not hold an ext4 file system" in made.stderr, made.stderr
    assert not (tmp_path / "b.raucb").exists()
