"""At boot, fulcrum-firstboot puts the network the API manages where networkd reads it and sets the
host name (overlay/usr/lib/fulcrum/firstboot, install_managed_network): the function runs for real
with bash, /data's and /run's paths pointed at a temporary directory, udevadm and hostname stubbed
to record their calls."""

from __future__ import annotations

import subprocess
from pathlib import Path

FIRSTBOOT = Path(__file__).resolve().parents[3] / "overlay/usr/lib/fulcrum/firstboot"


def run_install(tmp_path: Path, files: dict[str, str]) -> tuple[list[str], list[str]]:
    """The files copied to the runtime directory, and the stubbed commands run."""
    network, runtime = tmp_path / "network", tmp_path / "run-network"
    network.mkdir()
    for name, text in files.items():
        (network / name).write_text(text)
    calls = tmp_path / "calls"
    script = f"""
        set -euo pipefail
        source <(sed '$d' {FIRSTBOOT})  # every function, without running main
        NETWORK_DIR={network} RUNTIME_NETWORK_DIR={runtime}
        udevadm() {{ echo "udevadm $*" >>{calls}; }}
        hostname() {{ echo "hostname $*" >>{calls}; }}
        install_managed_network
    """
    subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True, timeout=60)
    copied = sorted(p.name for p in runtime.iterdir()) if runtime.exists() else []
    return copied, calls.read_text().splitlines() if calls.exists() else []


def test_the_managed_files_are_copied_and_the_nics_renamed(tmp_path: Path) -> None:
    files = {
        "10-fulcrum-mgmt.link": "[Link]\n",
        "20-fulcrum-bond0.netdev": "[NetDev]\n",
        "30-fulcrum-mgmt.network": "[Network]\n",
        "30-fulcrum-mgmt.network.prev": "old",
        "80-fulcrum-mgmt.network": "console's",
        "timesyncd.conf": "[Time]\n",
        "hostname": "lb1\n",
    }
    copied, calls = run_install(tmp_path, files)
    assert copied == ["10-fulcrum-mgmt.link", "20-fulcrum-bond0.netdev", "30-fulcrum-mgmt.network"]
    assert calls == ["udevadm trigger --action=add --subsystem-match=net --settle", "hostname lb1"]


def test_nothing_managed_changes_nothing_and_a_hostile_host_name_is_ignored(tmp_path: Path) -> None:
    copied, calls = run_install(tmp_path, {"hostname": "lb1;reboot\n"})
    assert copied == [] and calls == []
