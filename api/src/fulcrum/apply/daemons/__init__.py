"""The daemons the apply engine manages, each an implementation of `ManagedDaemon` (protocol.py).

A new daemon is a class implementing that protocol, added to `standard_daemons` at its place in
the order: the engine's loop does not change.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fulcrum.apply.daemons.frr import FrrDaemon
from fulcrum.apply.daemons.ipvs_sync import IpvsSyncDaemons
from fulcrum.apply.daemons.keepalived import KeepalivedDaemon, ReadbackTiming
from fulcrum.apply.daemons.networkd import NetworkdDaemon
from fulcrum.apply.daemons.nftables import NftablesDaemon
from fulcrum.apply.daemons.protocol import Checked, ManagedDaemon
from fulcrum.apply.fitness import AnnounceFitness
from fulcrum.apply.keepalived_control import KeepalivedControl

if TYPE_CHECKING:
    from fulcrum.apply.engine import EngineConfig

__all__ = ["Checked", "ManagedDaemon", "standard_daemons"]


def standard_daemons(config: EngineConfig) -> list[ManagedDaemon]:
    """The appliance's daemons in apply order: the network first (VIPs and the sync daemon need
    its interfaces), the firewall before keepalived brings services up, and the sync daemons after
    keepalived, which starts them; BGP last, announcing the VIPs once the data plane serves them.
    The network only where networkd manages the machine, FRR only where it is configured."""
    prefix = config.command_prefix
    control = KeepalivedControl(
        pidfile=config.keepalived_pidfile, start_argv=config.keepalived_start, prefix=prefix
    )
    readback = ReadbackTiming(config.readback_timeout, config.readback_settle, config.readback_interval)
    network: list[ManagedDaemon] = [NetworkdDaemon(config.network, prefix)] if config.network else []
    maintenance = config.runtime.maintenance_file
    fitness = AnnounceFitness(Path(maintenance) if maintenance else None, config.keepalived_pidfile)
    frr: list[ManagedDaemon] = [FrrDaemon(config.frr, fitness, prefix)] if config.frr else []
    return [
        *network,
        NftablesDaemon(config.nftables_file, prefix),
        KeepalivedDaemon(config.keepalived_conf, control, config.runtime, readback, prefix),
        IpvsSyncDaemons(prefix),
        *frr,
    ]
