"""What an apply reports back: the contract between the API and the (privileged) apply engine."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from fulcrum.dataplane.ipvs_table import IpvsTable
from fulcrum.dataplane.vip_guard import BackendWarning


class ApplyStep(StrEnum):
    """The steps of an apply, in order. Each runs for every managed daemon in turn (the report
    names the daemon); a failure names the step and the daemon it happened in."""

    RENDER = "render"  # the daemon's files written as FILE.new
    VALIDATE = "validate"  # the daemon's own checker on FILE.new (keepalived -t, nft -c)
    DATAPLANE = "dataplane"  # can the daemon run here at all (keepalived: is IPVS present)?
    INSTALL = "install"  # FILE.new -> FILE (previous kept as FILE.prev)
    LOAD = "load"  # the daemon takes the files (nft -f, SIGHUP or start)
    VERIFY = "verify"  # read back what the daemon made of them (the nftables table, IPVS)
    RECORD = "record"  # the applied revision is written to the engine's state file (no daemon)
    ROLLBACK = "rollback"  # a daemon back on FILE.prev after a failure (no daemon: the state file)


class ApplyOutcome(StrEnum):
    APPLIED = "applied"  # the kernel matches the revision
    VALIDATED = "validated"  # files pass the real validators; no data plane to apply to
    FAILED = "failed"  # nothing changed, or the previous config was restored


class StepReport(BaseModel):
    step: ApplyStep
    daemon: str | None = None  # the managed daemon the step ran for; None for the engine's own
    ok: bool
    seconds: float
    detail: str = ""  # the tool's own output on failure, a summary on success


class ApplyResult(BaseModel):
    outcome: ApplyOutcome
    revision: int
    failed_step: ApplyStep | None = None
    failed_daemon: str | None = None  # the daemon failed_step failed for (None: the engine's own step)
    message: str = ""  # one sentence an operator can act on; includes the tool's message
    steps: list[StepReport] = Field(default_factory=list)
    rolled_back: bool = False  # the previous files and kernel state were restored
    disk_full: bool = False  # the failure was a write finding no space left (ENOSPC, EDQUOT)
    warnings: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.outcome != ApplyOutcome.FAILED


class DataplaneStatus(BaseModel):
    ipvs_available: bool
    ipvs_detail: str  # e.g. "IPVS 1.2.1 (size=4096)" or why it is unavailable
    keepalived_running: bool
    keepalived_version: str | None
    nft_version: str | None
    applied_revision: int | None  # the last revision the engine applied, from its state file
    applied_digest: str | None = None  # ConfigSnapshot.digest() of that revision
    # An apply of this revision was interrupted (the helper died after replacing live files); the
    # API should re-apply `applied_revision` to be sure the kernel matches it.
    interrupted_revision: int | None = None
    # BGP, where FRR is managed and the live configuration announces VIPs (else None): whether this
    # node announces them now, and its fitness to (fulcrum.apply.fitness), e.g. why it withdrew them.
    bgp_announcing: bool | None = None
    bgp_fitness: str | None = None


class BgpNeighborView(BaseModel):
    address: str
    remote_asn: int | None
    state: str  # bgpd's: Established, Active, Connect, OpenSent, Idle, ...
    up_seconds: float | None  # how long the session has been established (None while it is not)
    prefixes_sent: int  # the routes this node announces to that neighbor, every address family
    last_reset: str | None  # bgpd's word for the last time the session went down
    bfd: str | None  # the BFD session's status (up, down, init, adminDown); None: no BFD with it


class BgpView(BaseModel):
    """This node's BGP as FRR runs it now: whether it announces, why (fulcrum.apply.fitness), the
    prefixes its bgpd originates and each neighbor's session. `managed` is False where FRR is not
    one of the engine's daemons; `error` says why FRR could not be asked."""

    managed: bool
    announcing: bool | None = None
    fitness: str | None = None
    originated: list[str] = []
    neighbors: list[BgpNeighborView] = []
    error: str | None = None


class InterfaceView(BaseModel):
    name: str
    up: bool  # administratively up with a carrier, as keepalived judges a tracked interface
    addresses: list[str]  # without prefix length


class VrrpView(BaseModel):
    """What the data plane shows of VRRP now, for the HA status to read each VIP group's state
    from (fulcrum.ha.local): the interfaces with their addresses, and whether keepalived's VRRP
    process runs. Where IPVS is unavailable nothing was applied, so there is nothing to read."""

    ipvs_available: bool
    vrrp_running: bool
    interfaces: list[InterfaceView] = Field(default_factory=list)


class DataplaneStats(BaseModel):
    """The live IPVS table with per-service and per-real-server counters and rates."""

    ipvs_available: bool
    ipvs_detail: str
    table: IpvsTable | None = None  # None when IPVS is unavailable
    backend_warnings: list[BackendWarning] = Field(default_factory=list)  # the DR/TUN guardrail's


class RebootRefused(RuntimeError):
    """The machine was not restarted: this node has no reboot command, or it failed."""


class RebootResult(BaseModel):
    message: str  # what the helper did: the restart has been started, the node goes away next
