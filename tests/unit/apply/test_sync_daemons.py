"""Stopping the IPVS sync daemons that keepalived leaves behind when connection sync is turned off.

The host kernel has no IPVS, so `ipvsadm` is a recording script here, put first on PATH through
the engine's command prefix; the real daemons are stopped and checked in the VM lab
(tests/kernel/test_ha_failover.py, test_without_connection_sync_the_echo_session_breaks).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from applytest import make_snapshot

from fulcrum.apply import sync_daemons
from fulcrum.apply.tools import ToolError

MASTER = "master sync daemon (mcast=eth2, syncid=51, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"
BACKUP = "backup sync daemon (mcast=eth2, syncid=51, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"


def fake_ipvsadm(tmp_path: Path, listing: str, status: int = 0) -> tuple[tuple[str, ...], Path]:
    """A command prefix whose `ipvsadm` prints `listing` for --list and records every call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls"
    script = bin_dir / "ipvsadm"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >>{calls}\n'
        'if [ "$1" = --list ]; then\n'
        f"  cat <<'EOF'\n{listing}\nEOF\n"
        f"  exit {status}\n"
        "fi\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return ("env", f"PATH={bin_dir}:/usr/bin:/bin"), calls


def test_sync_is_wanted_only_with_a_sync_interface_and_a_vrrp_instance_to_follow() -> None:
    assert sync_daemons.wants_sync(make_snapshot(node={"name": "lb1", "vrrp_interface": "eth0", "sync_interface": "eth2"}))
    assert not sync_daemons.wants_sync(make_snapshot())
    assert not sync_daemons.wants_sync(
        make_snapshot(node={"name": "lb1", "vrrp_interface": "eth0", "sync_interface": "eth2"}, vip_groups=[])
    )


def test_both_leftover_daemons_are_stopped_when_sync_is_off(tmp_path: Path) -> None:
    prefix, calls = fake_ipvsadm(tmp_path, f"{MASTER}\n{BACKUP}")
    done = sync_daemons.stop_unwanted(make_snapshot(), prefix)
    assert done == "stopped the IPVS master and backup sync daemon (connection sync is off)"
    assert calls.read_text().splitlines() == ["--list --daemon", "--stop-daemon master", "--stop-daemon backup"]


def test_nothing_is_stopped_while_sync_is_wanted_or_nothing_runs(tmp_path: Path) -> None:
    prefix, calls = fake_ipvsadm(tmp_path, MASTER)
    wanted = make_snapshot(node={"name": "lb1", "vrrp_interface": "eth0", "sync_interface": "eth2"})
    assert sync_daemons.stop_unwanted(wanted, prefix) == ""
    assert not calls.exists()  # not even listed: keepalived owns the daemons then

    idle_prefix, idle_calls = fake_ipvsadm(tmp_path / "idle", "")
    assert sync_daemons.stop_unwanted(make_snapshot(), idle_prefix) == ""
    assert idle_calls.read_text().splitlines() == ["--list --daemon"]


def test_a_kernel_without_ipvs_runs_no_daemon_but_other_failures_are_errors(tmp_path: Path) -> None:
    no_ipvs, _ = fake_ipvsadm(tmp_path / "a", "Can't initialize ipvs: Protocol not available", status=2)
    assert sync_daemons.stop_unwanted(make_snapshot(), no_ipvs) == ""
    broken, _ = fake_ipvsadm(tmp_path / "b", "Memory allocation problem", status=1)
    with pytest.raises(ToolError, match="ipvsadm --list --daemon failed: Memory allocation problem"):
        sync_daemons.stop_unwanted(make_snapshot(), broken)
