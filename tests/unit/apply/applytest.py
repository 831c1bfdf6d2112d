"""Helpers shared by the apply-engine tests (fixtures are in conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fulcrum.apply.engine import EngineConfig
from fulcrum.apply.keepalived_control import keepalived_argv, pid_of
from fulcrum.config.snapshot import ConfigSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package

from lab.wait import WaitTimeout, wait_until  # noqa: E402

IPVS_PRESENT = Path("/proc/net/ip_vs").exists()
# The interface VRRP runs on in test snapshots; created as a bridge (no extra kernel module).
VRRP_INTERFACE = "vrrp0"


@dataclass(frozen=True)
class Netns:
    name: str

    @property
    def prefix(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.name)

    def run(self, *argv: str) -> str:
        return subprocess.run([*self.prefix, *argv], check=True, capture_output=True, text=True).stdout

    def add_bridge(self, name: str) -> None:
        subprocess.run(["ip", "-n", self.name, "link", "add", name, "type", "bridge"], check=True)
        subprocess.run(["ip", "-n", self.name, "link", "set", name, "up"], check=True)


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "keepalived.conf"

    @property
    def nft(self) -> Path:
        return self.root / "etc" / "fulcrum.nft"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def pidfile(self) -> Path:
        return self.root / "run" / "keepalived.pid"


def stop_test_keepalived(pidfile: Path) -> None:
    """Stop the keepalived a test started (identified by its own pidfile), and wait for it."""
    pid = pid_of(pidfile)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    try:
        wait_until(lambda: pid_of(pidfile) is None, 15, what=f"keepalived {pid} to exit")
    except WaitTimeout:
        os.kill(pid, signal.SIGKILL)


def engine_config(paths: Paths, netns: Netns, **overrides: Any) -> EngineConfig:
    settings: dict[str, Any] = {
        "state_dir": paths.state,
        "keepalived_conf": paths.conf,
        "nftables_file": paths.nft,
        "keepalived_pidfile": paths.pidfile,
        "keepalived_start": keepalived_argv(paths.conf, paths.pidfile, paths.pidfile.parent),
        "command_prefix": netns.prefix,
        "readback_timeout": 2.0,
        **overrides,
    }
    return EngineConfig(**settings)


def make_snapshot(**overrides: Any) -> ConfigSnapshot:
    """A small valid snapshot: one VIP group on VRRP_INTERFACE, a NAT and a fwmark service."""
    document: dict[str, Any] = {
        "node": {"name": "lb1", "vrrp_interface": VRRP_INTERFACE},
        "vip_groups": [{"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.10/24"]}],
        "services": [
            {
                "name": "web",
                "address": "192.0.2.10",
                "ports": [80],
                "backends": [{"address": "10.0.0.11"}, {"address": "10.0.0.12", "weight": 3}],
            },
            {
                "name": "tls",
                "address": "192.0.2.10",
                "ports": [443, 8443],
                "fwmark": 10,
                "forwarding": "dr",
                "backends": [{"address": "10.0.0.21"}],
            },
        ],
        "firewall": {"management_ports": [22, 443], "management_allow": ["10.0.0.0/8"]},
        **overrides,
    }
    return ConfigSnapshot.model_validate(document)


def vrrp_only_snapshot(router_id: int = 51) -> ConfigSnapshot:
    """No services: keepalived runs VRRP only, so it can run on a kernel without IPVS."""
    return make_snapshot(
        services=[],
        vip_groups=[{"name": "front", "virtual_router_id": router_id, "addresses": ["192.0.2.10/24"]}],
    )
