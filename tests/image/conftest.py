"""tests/image: the appliance image booted under emulation (make test-image)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance import BASE_IMAGE, EXTRA_NIC_MACS, REPO, Appliance, new_disk

RESULTS = Path(__file__).resolve().parent / "results"
BUILD_TIMEOUT = 3600


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "image: boots the appliance image in qemu (make test-image)")


@pytest.fixture(scope="session")
def image() -> Path:
    """The built image; `make vm-image` rebuilds it only when its inputs changed."""
    subprocess.run(["make", "-f", "image/image.mk", "vm-image"], cwd=REPO, check=True, timeout=BUILD_TIMEOUT)
    assert BASE_IMAGE.is_file(), f"make vm-image did not produce {BASE_IMAGE}"
    return BASE_IMAGE


@pytest.fixture
def results(request: pytest.FixtureRequest) -> Path:
    folder = RESULTS / f"{time.strftime('%Y%m%d-%H%M%S')}-{request.node.name}"
    folder.mkdir(parents=True)
    return folder


def _booted(image: Path, results: Path, firmware: str, extra_nics: int = 0) -> Iterator[Appliance]:
    """A fresh appliance on a new disk over the image, booted."""
    disk = new_disk(image, results / "disk.qcow2")
    vm = Appliance(disk=disk, results=results, firmware=firmware, extra_nics=extra_nics)
    vm.start()
    try:
        yield vm
    finally:
        vm.stop()
        for scratch in results.glob("disk.*"):  # the logs stay; the disk is large
            scratch.unlink()


@pytest.fixture
def appliance(image: Path, results: Path) -> Iterator[Appliance]:
    """Booted with BIOS, and two NICs besides the management one, for the managed network's bond."""
    yield from _booted(image, results, "bios", extra_nics=len(EXTRA_NIC_MACS))


@pytest.fixture(scope="session")
def tcp_backend() -> Iterator[int]:
    """A live TCP port on this host, which the guest reaches as 10.0.2.2 (qemu user networking):
    a real backend for keepalived's TCP health check."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        server.close()
