"""VIP groups, node-local settings and the management firewall policy."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from fulcrum.config import snapshot
from fulcrum.schemas._partial import derived_model

VipGroupCreate = derived_model("VipGroupCreate", snapshot.VipGroup)
VipGroupUpdate = derived_model("VipGroupUpdate", snapshot.VipGroup, optional=True)


class _ReadBase(BaseModel):
    model_config = ConfigDict(from_attributes=True)


VipGroupRead = derived_model("VipGroupRead", snapshot.VipGroup, base=_ReadBase, id=(int, ...))


class VipGroupsList(BaseModel):
    data: list[VipGroupRead]
    count: int


NodeSettings = snapshot.Node
# PATCH /node: only the fields sent change (a form that shows some settings keeps the others).
NodeSettingsUpdate = derived_model("NodeSettingsUpdate", snapshot.Node, optional=True)
FirewallSettings = snapshot.Firewall


# --- the HA pair: operator endpoints (/ha) ------------------------------------------------------

VrrpState = Literal["MASTER", "BACKUP", "FAULT", "UNKNOWN"]
HaRole = Literal["active", "standby", "fault", "maintenance", "standalone", "unknown"]
# incompatible: the peer runs a version that cannot read this node's configuration (it is not sent).
SyncStateName = Literal[
    "unpaired", "in_sync", "peer_behind", "peer_ahead", "conflict", "unreachable", "incompatible"
]


class GroupState(BaseModel):
    name: str
    # Read from the data plane (which of the group's addresses the node holds, whether keepalived's
    # VRRP process runs, maintenance, tracked interfaces), with keepalived's notifications.
    state: VrrpState
    since: datetime | None  # since when the node is in this state
    vips_held: list[str] = Field(default_factory=list)  # the group's addresses the node holds now


class HaNode(BaseModel):
    name: str
    role: HaRole
    groups: list[GroupState]
    maintenance: bool
    writer: bool  # edits are accepted here (the one-writer rule)
    priority: int
    certificate: str | None  # SHA-256 of the TLS certificate this node serves; None: plain HTTP
    software_version: str  # the booted slot's bundle version, else the API's
    config_schema: int  # the shared configuration's format this node writes (fulcrum.ha.wire)
    # A paired node with VIP groups whose role cannot be read: since when, and whether that has
    # lasted long enough to be an alarm (the ha.role_unknown event is raised then).
    role_unknown_since: datetime | None = None
    role_unknown_alarm: bool = False


class ActiveNode(BaseModel):
    """Who holds the VIPs, as this node sees it: its own data plane, and the peer's last answer."""

    name: str | None  # the active node; None when neither node is active (or the peer cannot be asked)
    local: bool  # the active node is this one
    url: str | None  # the peer's API, when the peer is the active node (where changes are made)
    split_brain: bool  # both nodes hold VIPs: `name` is this node, and the peer is active too


class HaPeer(BaseModel):
    name: str
    url: str
    reachable: bool
    last_seen: datetime | None
    unreachable_since: datetime | None
    role: HaRole | None  # as the peer last reported it
    groups: list[GroupState]
    applied_revision: int | None
    writer: bool | None
    certificate: str | None  # SHA-256 of the peer's certificate, pinned at pairing; None: plain HTTP
    # The peer presents another certificate than the pinned one: every connection is refused
    # (the ha.peer_untrusted alarm). Its SHA-256.
    untrusted_certificate: str | None
    # Seconds the peer's clock is ahead of this node's (negative: behind), measured on the last
    # poll; peer requests are refused beyond 30 s, the ha.clock_skew alarm comes at 10 s.
    clock_offset: float | None
    # As the peer last reported them; None before the first answer, or from a node too old to say.
    software_version: str | None
    protocol: int | None
    config_schema: int | None


class HaSync(BaseModel):
    state: SyncStateName
    local_revision: int | None
    local_hash: str | None  # shared_hash of this node's head revision
    peer_revision: int | None
    peer_hash: str | None
    since: datetime | None  # in this state since
    message: str


class ConnSync(BaseModel):
    enabled: bool  # node.sync_interface is set
    interface: str | None
    # keepalived runs the IPVS sync daemon as master on the VRRP MASTER, as backup otherwise.
    local_daemon: Literal["master", "backup", "off"]
    local_connections: int | None  # IPVS connection entries (active + inactive); None without IPVS
    peer_connections: int | None


class SplitBrain(BaseModel):
    active: bool
    since: datetime | None
    groups: list[str]
    holding: bool  # this node stepped down (maintenance) to end it


class Transition(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    time: datetime
    node: str
    group: str
    from_: str | None = Field(alias="from")
    to: str
    reason: str


class HaStatus(BaseModel):
    node: HaNode
    # A cluster's writer or member (fulcrum.ha.cluster): the peer, if any, is then its writer,
    # not the other node of a pair; the cluster's own picture is GET /cluster.
    cluster: Literal["writer", "member", "none"] = "none"
    peer: HaPeer | None
    active: ActiveNode
    sync: HaSync
    conn_sync: ConnSync
    split_brain: SplitBrain
    transitions: list[Transition]


class PairingCode(BaseModel):
    code: str  # shown once; type it into the other node within 10 minutes
    expires_at: datetime


def _usable_origin(value: str) -> str:
    """The pattern allows what urllib or the resolver cannot use as an address: a port beyond 65535,
    unbalanced brackets, brackets round what is not an IPv6 address, a host name label longer than
    63 characters or empty. Said here, as a 422 naming the field."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise ValueError(f"not a usable address: {error}") from None
    host = parts.hostname or ""
    if not host or port == 0:
        raise ValueError("not a usable address: it needs a host (and a port from 1 to 65535, if any)")
    if "[" in parts.netloc or "]" in parts.netloc:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"not a usable address: [{host}] is not an IPv6 address") from None
        return value
    try:
        host.encode("idna")  # as the resolver will: labels of 1 to 63 characters
    except UnicodeError:
        raise ValueError("not a usable address: a host name's labels are 1 to 63 characters") from None
    return value


PeerUrl = Annotated[
    str,
    StringConstraints(pattern=r"^https?://[A-Za-z0-9.\-\[\]:]+/?$", max_length=200),
    AfterValidator(_usable_origin),
]


class PairRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    peer_url: PeerUrl  # the other node's API, e.g. https://10.0.0.2
    code: Annotated[str, StringConstraints(min_length=12, max_length=20)]
    # How the peer reaches this node; default: this node's address on the way to the peer, with
    # the scheme and port of peer_url.
    local_url: PeerUrl | None = None


SyncResultName = Literal[
    "in_sync",
    "fast_forward",
    "forced",
    "peer_ahead",
    "conflict",
    "failed",
    "nothing_to_push",
    "pulled",
    "incompatible",
]


class SyncResult(BaseModel):
    result: SyncResultName
    local_revision: int | None
    peer_revision: int | None
    message: str


class PairResult(BaseModel):
    peer_name: str
    peer_url: str
    sync: SyncResult  # this node's configuration, pushed to the peer (this node wins at pairing)


class ResolveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    winner: Literal["local", "peer"]


class MaintenanceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: StrictBool


class MaintenanceState(BaseModel):
    maintenance: bool
    file: str


class MakeActiveResult(BaseModel):
    handover_ms: int  # from asking the peer to step down until this node was MASTER of every group
    message: str


class DrillResult(BaseModel):
    handover_ms: int | None  # until the peer reported MASTER of every group; None: it did not
    probe_failed: int  # TCP connects to the service VIPs that failed during the drill
    probe_total: int
    probe_targets: list[str]
    connections_before: int | None  # IPVS connection entries here before the drill
    peer_connections_after: int | None  # and on the peer once it took over
    # The hand-back: from leaving maintenance here until this node was BACKUP or MASTER of every
    # group again; None: it was not within the deadline.
    handback_ms: int | None
    active_after: str | None  # the node MASTER of every group at the end; None: neither
    message: str


class HaDiff(BaseModel):
    in_sync: bool
    local_revision: int | None
    peer_revision: int | None
    local_hash: str | None
    peer_hash: str | None
    text: str  # unified diff of the shared configuration (and users), this node -> the peer


class UnpairResult(BaseModel):
    peer: str  # whether the peer was told


# --- the pair upgrade (fulcrum.ha.pair_upgrade) ----------------------------------------------------

PairUpgradeStepName = Literal[
    "send_bundle", "install_peer", "restart_peer", "install_self", "hand_over", "restart_self", "rejoin"
]
PairUpgradeStepState = Literal["pending", "running", "done", "skipped", "failed", "stopped"]


class PairUpgradeStep(BaseModel):
    name: PairUpgradeStepName
    state: PairUpgradeStepState
    started_at: datetime | None = None
    ended_at: datetime | None = None
    detail: str | None = None  # what was found or done; why it failed
    requested_at: datetime | None = None  # when the node was asked to install or restart


class PairUpgrade(BaseModel):
    version: str
    node: str  # the node that drives it: active when it started
    peer: str
    started_by: str
    state: Literal["running", "done", "failed", "stopped"]
    steps: list[PairUpgradeStep]
    started_at: datetime
    updated_at: datetime
    message: str | None = None
    boot_id: str | None = None  # this node's boot when it asked for its own restart
    stop_requested_by: str | None = None  # an admin asked it to stop: the next round of the driver does


class PairUpgradeStatus(BaseModel):
    upgrade: PairUpgrade | None  # the last pair upgrade this node drove, if any
    # The last one the peer drove, as its last answer to this node's poll said (at peer_seen_at):
    # how a standby follows the upgrade its active node drives, also while that node restarts.
    peer_upgrade: PairUpgrade | None = None
    peer_seen_at: datetime | None = None
