"""Whether this node is fit to announce the VIPs by BGP, and why not.

Asked by the FRR daemon at every render (an apply) and by `AnnouncementWatch` every second between
applies. A node that announces a VIP draws a share of the router's flows for it, so it announces
only while its data plane is kept: not in maintenance (the admin's drain), and keepalived running
(it programs IPVS and runs the health checks; without it the table is stale or gone, and the flows
the router sends here would be black-holed). The API is not asked: the data plane serves without
it, and a cluster whose APIs were all down (a bad upgrade) would otherwise withdraw everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fulcrum.apply.keepalived_control import pid_of
from fulcrum.apply.maintenance import in_maintenance


@dataclass(frozen=True)
class Fitness:
    fit: bool
    reason: str


FIT = Fitness(True, "fit to announce")


@dataclass(frozen=True)
class AnnounceFitness:
    maintenance_file: Path | None
    keepalived_pidfile: Path

    def __call__(self) -> Fitness:
        if self.maintenance_file is not None and in_maintenance(self.maintenance_file):
            return Fitness(False, "this node is in maintenance")
        if pid_of(self.keepalived_pidfile) is None:
            return Fitness(False, "keepalived is not running here, so IPVS is not kept")
        return Fitness(True, "keepalived runs and the node is not in maintenance")
