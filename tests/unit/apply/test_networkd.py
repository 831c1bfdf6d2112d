"""The networkd daemon against a real systemd-networkd, in throw-away namespaces on this host
(lab.networkd). Veths stand in for NICs: they have no permanent MAC address, so the NICs are
matched by their current one (`permanent_mac: false`).

This host's kernel has neither the 8021q nor the bonding module (networkd says "Could not create
stacked netdev: Unknown device type"), so VLANs and bonds are read back in the kernel VM, not here.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fulcrum.apply.daemons import standard_daemons
from fulcrum.apply.daemons.networkd import NetworkdDaemon, NetworkPaths
from fulcrum.apply.engine_settings import engine_config
from fulcrum.apply.result import ApplyOutcome, ApplyStep
from fulcrum.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab.networkd import Networkd, available, engine, private_networkd, snapshot  # noqa: E402
from lab.wait import wait_until  # noqa: E402

@pytest.fixture
def networkd(tmp_path: Path) -> Iterator[Networkd]:
    if not available():
        pytest.skip("needs root, systemd-networkd and dbus-daemon")
    with private_networkd(tmp_path) as running:
        yield running


def network(macs: dict[str, str], **changes: Any) -> dict[str, Any]:
    return {
        "hostname": "lb-test",
        "management_interface": "nic0",
        "nics": [
            {"name": "nic0", "mac": macs["nic0"], "permanent_mac": False, "addresses": ["10.5.0.1/24", "fd05::1/64"]},
            {"name": "nic1", "mac": macs["nic1"], "permanent_mac": False, "addresses": ["10.6.0.1/24"], "mtu": 1400},
        ],
        "routes": [{"destination": "10.50.0.0/16", "gateway": "10.6.0.254", "metric": 20}],
        "gateway4": "10.5.0.254",
        **changes,
    }


def test_a_network_is_applied_and_read_back_from_the_kernel(tmp_path: Path, networkd: Networkd) -> None:
    daemon = NetworkdDaemon(NetworkPaths(networkd.directory, networkd.runtime, readback_timeout=20), networkd.prefix)
    result = engine(tmp_path, daemon).apply(snapshot(network(networkd.macs)), 1)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert {"10.5.0.1/24", "fd05::1/64"} <= networkd.addresses("nic0")
    assert "10.6.0.1/24" in networkd.addresses("nic1")
    assert networkd.ip("link", "show", "dev", "nic1")[0]["mtu"] == 1400
    routes = networkd.ip("route", "show")
    route = next(r for r in routes if r["dst"] == "10.50.0.0/16")
    assert (route["gateway"], route["dev"], route["metric"]) == ("10.6.0.254", "nic1", 20)
    assert any(r["dst"] == "default" and r["gateway"] == "10.5.0.254" for r in routes)
    assert networkd.hostname() == "lb-test"
    assert (networkd.runtime / "30-fulcrum-nic0.network").exists()
    verify = next(s for s in result.steps if s.step == ApplyStep.VERIFY)
    assert "read back 2 interfaces" in verify.detail

    # nic1 and its route go, an address changes: nic1's files leave the runtime directory, the
    # address moves.
    changed = network(networkd.macs, routes=[])
    changed["nics"] = changed["nics"][:1]
    changed["nics"][0]["addresses"] = ["10.5.0.2/24"]
    result = engine(tmp_path, daemon).apply(snapshot(changed), 2)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert not (networkd.runtime / "30-fulcrum-nic1.network").exists()
    assert (networkd.directory / "30-fulcrum-nic1.network.prev").exists()
    wait_until(lambda: networkd.addresses("nic0") & {"10.5.0.1/24", "10.5.0.2/24"}, 20, what="the new address alone",
               expect={"10.5.0.2/24"})


def test_a_network_the_kernel_cannot_match_is_rolled_back(tmp_path: Path, networkd: Networkd) -> None:
    daemon = NetworkdDaemon(NetworkPaths(networkd.directory, networkd.runtime, readback_timeout=5), networkd.prefix)
    assert engine(tmp_path, daemon).apply(snapshot(network(networkd.macs)), 1).outcome == ApplyOutcome.APPLIED
    before = sorted(p.name for p in networkd.runtime.iterdir())
    # A NIC that is not plugged in: valid, rendered and loaded, but the read-back cannot find it.
    ghost = network(networkd.macs, hostname="lb-ghost")
    ghost["nics"].append({"name": "ghost", "mac": "52:54:00:de:ad:01", "addresses": ["10.7.0.1/24"]})
    ghost["nics"][0]["addresses"] = ["10.5.0.3/24"]
    result = engine(tmp_path, daemon).apply(snapshot(ghost), 2)
    assert result.outcome == ApplyOutcome.FAILED and result.rolled_back
    assert result.failed_step == ApplyStep.VERIFY and "ghost: no such link" in result.message
    assert sorted(p.name for p in networkd.runtime.iterdir()) == before
    assert not (networkd.directory / "30-fulcrum-ghost.network").exists()
    wait_until(lambda: networkd.addresses("nic0") & {"10.5.0.1/24", "10.5.0.3/24"}, 20,
               what="the previous address back", expect={"10.5.0.1/24"})
    assert networkd.hostname() == "lb-test"


def test_an_unmanaged_network_touches_nothing(tmp_path: Path, networkd: Networkd) -> None:
    daemon = NetworkdDaemon(NetworkPaths(networkd.directory, networkd.runtime), networkd.prefix)
    result = engine(tmp_path, daemon).apply(snapshot(None), 1)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert list(networkd.runtime.iterdir()) == [] and not networkd.directory.exists()


def test_the_runtime_copies_are_readable_by_networkds_own_user(tmp_path: Path) -> None:
    """networkd runs as systemd-network, not root: the files copied to its runtime directory are
    world-readable whatever the helper's umask (fulcrum-applyd.service: UMask=0027). Found on the
    image, where networkd skipped every managed .netdev and .network ("Permission denied")."""
    daemon = NetworkdDaemon(NetworkPaths(tmp_path / "network", tmp_path / "run"))
    macs = {"nic0": "02:00:00:00:00:01", "nic1": "02:00:00:00:00:02"}
    daemon.render(snapshot(network(macs)))
    daemon.install()
    previous = os.umask(0o027)
    try:
        daemon._sync_runtime()
    finally:
        os.umask(previous)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "run").iterdir()}
    assert len(modes) == 4 and set(modes.values()) == {0o644}, modes


def test_networkd_is_in_the_engine_only_where_it_manages_the_machine(tmp_path: Path) -> None:
    lab = engine_config(Settings(data_dir=tmp_path))
    assert "networkd" not in [daemon.name for daemon in standard_daemons(lab)]
    appliance = engine_config(
        Settings(data_dir=tmp_path, network_dir=tmp_path / "network", networkd_runtime_dir=tmp_path / "run")
    )
    assert [daemon.name for daemon in standard_daemons(appliance)][:2] == ["networkd", "nftables"]


def test_giving_the_network_back_removes_fulcrums_files(tmp_path: Path, networkd: Networkd) -> None:
    daemon = NetworkdDaemon(NetworkPaths(networkd.directory, networkd.runtime, readback_timeout=20), networkd.prefix)
    assert engine(tmp_path, daemon).apply(snapshot(network(networkd.macs)), 1).outcome == ApplyOutcome.APPLIED
    result = engine(tmp_path, daemon).apply(snapshot(None), 2)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert list(networkd.runtime.iterdir()) == []
    assert not list(networkd.directory.glob("*.network")) and (networkd.directory / "30-fulcrum-nic0.network.prev").exists()
    wait_until(lambda: "unmanaged" in networkd.networkctl("list", "nic0"), 20, what="nic0 left to the console's file")
