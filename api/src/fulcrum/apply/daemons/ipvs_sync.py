"""The kernel's IPVS connection-sync daemons as a managed daemon.

keepalived starts them (`lvs_sync_daemon` in keepalived.conf, so they own no file here) but
keepalived 2.2.7 leaves them running when a reload drops that line: after keepalived's load, this
stops them when the configuration wants no connection sync, and verify reads back that none runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from fulcrum.apply import sync_daemons
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.tools import ToolError
from fulcrum.config.snapshot import ConfigSnapshot


class IpvsSyncDaemons:
    name = "ipvs_sync"

    def __init__(self, prefix: Sequence[str] = ()) -> None:
        self.prefix = tuple(prefix)

    def render(self, snapshot: ConfigSnapshot) -> str:
        return "no file: keepalived.conf configures connection sync"

    def validate(self) -> Checked:
        return Checked("nothing to validate: keepalived -t checks lvs_sync_daemon")

    def reject(self) -> None:
        """Nothing was staged."""

    def discard(self) -> None:
        """Nothing was staged."""

    def precondition(self) -> tuple[bool, str]:
        return True, "the sync daemons run only where IPVS does, which keepalived's precondition checks"

    def install(self) -> str:
        return "no file to install"

    def load(self, snapshot: ConfigSnapshot) -> str:
        if sync_daemons.wants_sync(snapshot):
            return "connection sync is on: keepalived runs the daemon for its VRRP state"
        return sync_daemons.stop_unwanted(snapshot, self.prefix) or "connection sync is off: none was running"

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        if sync_daemons.wants_sync(snapshot):
            return Checked("connection sync is on: keepalived starts the daemon once VRRP has a state")
        try:
            running = sync_daemons.running(self.prefix)
        except ToolError as error:
            if "not installed" in str(error):
                return Checked("ipvsadm is not installed: IPVS sync daemons not checked")
            raise
        if running:
            raise ToolError(f"connection sync is off but the kernel still runs: {'; '.join(running)}")
        return Checked("connection sync is off: no sync daemon runs")

    def undo(self, loaded: bool) -> str:
        # keepalived's undo reloads the previous keepalived.conf, which restarts the daemons it wants.
        return "nothing to undo: keepalived's reload of the previous config restarts wanted sync daemons"
