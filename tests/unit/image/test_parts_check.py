"""make parts-check (image/check-parts): the Debian image and the Buildroot build carry the same parts.
It runs for real on this tree, and on copies of its inputs with a part added to one build only."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CHECK = REPO / "image/check-parts"
INPUTS = [
    "image/parts.tsv",
    "image/packages.list",
    "image/constraints.txt",
    "buildroot/configs/fulcrum_x86_64_defconfig",
    *(
        str(path.relative_to(REPO))
        for path in (REPO / "buildroot/package").glob("*/Config.in")
    ),
]


def run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHECK), "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in INPUTS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "api").mkdir()
    (tmp_path / "webui").mkdir()
    return tmp_path


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_the_tree_has_no_drift() -> None:
    result = run_check(REPO)
    assert result.returncode == 0, result.stderr
    assert "0 problems" in result.stdout


def test_a_copy_of_the_tree_has_no_drift(tree: Path) -> None:
    assert run_check(tree).returncode == 0


def test_a_debian_package_without_a_row_fails_and_is_named(tree: Path) -> None:
    append(tree / "image/packages.list", "haproxy\n")
    result = run_check(tree)
    assert result.returncode == 1
    assert (
        "image/packages.list has haproxy, which no row of image/parts.tsv names"
        in result.stderr
    )


def test_a_buildroot_package_without_a_row_fails_and_is_named(tree: Path) -> None:
    append(
        tree / "buildroot/configs/fulcrum_x86_64_defconfig", "BR2_PACKAGE_HAPROXY=y\n"
    )
    result = run_check(tree)
    assert result.returncode == 1
    assert (
        "enables BR2_PACKAGE_HAPROXY, which no row of image/parts.tsv names"
        in result.stderr
    )


def test_a_part_one_build_loses_fails_for_either_build(tree: Path) -> None:
    packages = tree / "image/packages.list"
    packages.write_text(packages.read_text().replace("rauc-service\n", ""))
    defconfig = tree / "buildroot/configs/fulcrum_x86_64_defconfig"
    defconfig.write_text(
        defconfig.read_text().replace("BR2_PACKAGE_FULCRUM_WEBUI=y\n", "")
    )
    result = run_check(tree)
    assert result.returncode == 1
    assert "(A/B firmware updates): the Debian image lost rauc-service" in result.stderr
    assert (
        "(dashboard): the Buildroot build lost BR2_PACKAGE_FULCRUM_WEBUI"
        in result.stderr
    )


def test_a_part_only_one_build_has_needs_a_reason(tree: Path) -> None:
    append(tree / "image/packages.list", "haproxy\n")
    append(tree / "image/parts.tsv", "layer 7 proxy\thaproxy\t-\n")
    result = run_check(tree)
    assert result.returncode == 1
    assert (
        "(layer 7 proxy): one build has no such part ('-'), and the row does not say why"
        in result.stderr
    )
    parts = tree / "image/parts.tsv"
    parts.write_text(
        parts.read_text().replace(
            "haproxy\t-\n", "haproxy\t-\ta test of the reason column\n"
        )
    )
    assert run_check(tree).returncode == 0


def test_every_uvicorn_extra_is_selected_or_marked_not_needed() -> None:
    rows = [
        line.split("\t") for line in (REPO / "image/parts.tsv").read_text().splitlines()
    ]
    extras = {
        row[1].removeprefix("pip:"): row
        for row in rows
        if row[0].startswith("uvicorn extra:")
    }
    assert set(extras) == {
        "httptools",
        "watchfiles",
        "PyYAML",
        "uvloop",
        "websockets",
        "python-dotenv",
    }
    for name, row in extras.items():
        assert row[2] != "-" or row[3].strip(), (
            f"{name}: not selected in Buildroot and no reason given"
        )
