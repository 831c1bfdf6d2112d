"""Fixtures for the apply-engine tests: the real keepalived and nft, in throwaway namespaces.

Everything that loads rules or starts keepalived runs inside a network namespace created for the
test (`ip netns add fulcrum-test-<random>`) and deleted afterwards, even when the test fails, so
the host's own ruleset and daemons are never touched. The engine's validators run there too: the
namespace holds exactly the interfaces a snapshot names (keepalived -t refuses unknown ones).
Needs root, as keepalived and nft do on the appliance.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fulcrum.apply.daemon import ApplyServer
from fulcrum.apply.engine import ApplyEngine

from applytest import VRRP_INTERFACE, Netns, Paths, engine_config, stop_test_keepalived
from lab.serving import serving


@pytest.fixture
def netns() -> Iterator[Netns]:
    name = f"fulcrum-test-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        namespace = Netns(name)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        namespace.add_bridge(VRRP_INTERFACE)
        yield namespace
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.fixture
def paths(tmp_path: Path, netns: Netns) -> Iterator[Paths]:
    """Depends on `netns` so that a keepalived started in it is stopped before it is deleted."""
    layout = Paths(tmp_path)
    for directory in (layout.conf.parent, layout.state, layout.pidfile.parent):
        directory.mkdir(parents=True, exist_ok=True)
    yield layout
    stop_test_keepalived(layout.pidfile)


@pytest.fixture
def engine(paths: Paths, netns: Netns) -> ApplyEngine:
    return ApplyEngine(engine_config(paths, netns))


@pytest.fixture
def live_files(paths: Paths) -> dict[Path, bytes]:
    """Sentinel live files whose bytes a test can compare afterwards."""
    contents = {
        paths.conf: b"# live keepalived.conf: must not change\n",
        paths.nft: b"# live ruleset: must not change\n",
    }
    for path, content in contents.items():
        path.write_bytes(content)
    return contents


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Short: a Unix socket path must fit in 108 bytes, which pytest's tmp_path may not.
    with tempfile.TemporaryDirectory(prefix="applyd-", dir="/tmp") as directory:
        yield Path(directory)


@pytest.fixture
def server(engine: ApplyEngine, socket_dir: Path) -> Iterator[ApplyServer]:
    with serving(ApplyServer(socket_dir / "applyd.sock", engine), poll_interval=0.05) as server:
        yield server
