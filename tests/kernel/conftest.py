"""Kernel tests: real IPVS, keepalived and namespaces, inside the VM (tests/kernel/run-in-vm)."""

import sys
from pathlib import Path

import pytest

# Make tests/lab importable as `lab`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lab  # noqa: E402

IPVS_PROC = Path("/proc/net/ip_vs")


def pytest_collection_modifyitems(config, items):
    """Skip kernel tests where IPVS is missing (e.g. `pytest tests/kernel` on the host): the VM
    runner loads ip_vs first, and fails if no kernel test ran."""
    if IPVS_PROC.exists():
        return
    skip = pytest.mark.skip(reason=f"no IPVS in this kernel ({IPVS_PROC} missing): run tests/kernel/run-in-vm")
    for item in items:
        if item.get_closest_marker("kernel"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def cleanup_scope(request):
    """Everything a test creates through `lab` (namespaces, processes, sockets) is undone after it."""
    with lab.scope(request.node.nodeid) as scope:
        yield scope
