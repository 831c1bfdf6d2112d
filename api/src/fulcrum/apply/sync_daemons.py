"""The kernel's IPVS connection-sync daemons: keepalived starts them, but does not always stop them.

keepalived runs the master daemon on the VRRP MASTER and the backup daemon on the BACKUP
(`lvs_sync_daemon`), but keepalived 2.2.7 leaves both running when a reload drops
`lvs_sync_daemon` from its configuration: connection sync stayed on after it was turned off (found
in the VM lab, tests/kernel/test_ha_failover.py). So after every reload the apply stops them
when the configuration wants no connection sync (the ipvs_sync managed daemon, daemons/ipvs_sync.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from fulcrum.apply.tools import ToolError, run_tool
from fulcrum.config.snapshot import ConfigSnapshot

KINDS = ("master", "backup")


def wants_sync(snapshot: ConfigSnapshot) -> bool:
    """Whether the rendered keepalived.conf runs the sync daemons (it needs a VRRP instance to follow)."""
    return snapshot.node.sync_interface is not None and bool(snapshot.vip_groups)


def running(prefix: Sequence[str] = ()) -> list[str]:
    """The daemons as `ipvsadm --list --daemon` shows them: "master sync daemon (mcast=eth2, ...)".
    None where the kernel has no IPVS (the host tests' kernel): nothing can run there."""
    run = run_tool(["ipvsadm", "--list", "--daemon"], prefix)
    if run.returncode != 0:
        if "Can't initialize ipvs" in run.output:
            return []
        raise ToolError(f"ipvsadm --list --daemon failed: {run.output.strip()}")
    return [line.strip() for line in run.output.splitlines() if line.strip()]


def stop_unwanted(snapshot: ConfigSnapshot, prefix: Sequence[str] = ()) -> str:
    """Stop the sync daemons if the configuration wants none; what was done ("" for nothing)."""
    if wants_sync(snapshot):
        return ""
    try:
        daemons = running(prefix)
    except ToolError as error:
        if "not installed" in str(error):
            return "ipvsadm is not installed: IPVS sync daemons not checked"
        raise
    stopped = []
    for kind in KINDS:
        if any(line.startswith(kind) for line in daemons):
            run = run_tool(["ipvsadm", "--stop-daemon", kind], prefix)
            if run.returncode != 0:
                raise ToolError(f"ipvsadm --stop-daemon {kind} failed: {run.output.strip()}")
            stopped.append(kind)
    return f"stopped the IPVS {' and '.join(stopped)} sync daemon (connection sync is off)" if stopped else ""
