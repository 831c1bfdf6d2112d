"""What the two nodes of a pair send each other (the /peer endpoints), validated on receipt."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from fulcrum.config.types import Name
from fulcrum.models.user import Role
from fulcrum.schemas.auth import Username
from fulcrum.schemas.ha import GroupState, HaRole, PairUpgrade, PeerUrl, Transition

Hex32 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Hex64 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


# The peer API's version: 1 was every node before this field. Both nodes of a pair may run different
# versions while the pair is upgraded one node at a time, so a message's fields only ever grow, and
# a receiver ignores the ones it does not know (from version 2 on).
# 3: the firmware endpoints a pair upgrade drives on the standby (/peer/firmware...).
PROTOCOL = 3
# The shared configuration's format as ConfigPush carries it: raised when a version adds to it
# what an older node cannot read. A node does not push to a peer that reads only an older one
# (fulcrum.ha.replication.push says so, until the peer is upgraded too).
CONFIG_SCHEMA = 1
SoftwareVersion = Annotated[str, StringConstraints(pattern=r"^[0-9A-Za-z.+~_-]{1,64}$")]


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Offer(_Message):
    node: Name
    url: PeerUrl
    certificate: Hex64 | None  # SHA-256 of the certificate the offering node serves at url
    peer_certificate: Hex64 | None  # of the certificate the answering node presented to it
    public_key: Hex64
    nonce: Hex32
    mac: Hex64


class Answer(_Message):
    node: Name
    public_key: Hex64
    nonce: Hex32
    mac: Hex64


class Head(_Message):
    revision: int
    shared_hash: Hex64
    lineage: Hex64


MAX_ESTABLISHED_KEYS = 50_000


class EstablishedConnections(_Message):
    """A node's ESTABLISHED connections (ipvs_connections.established_keys), for a returning peer
    that waits until every one of them is in its synced table before it takes the VIPs back."""

    keys: list[Annotated[str, StringConstraints(max_length=120)]] = Field(max_length=MAX_ESTABLISHED_KEYS)
    more: bool  # it holds more than it sends: the peer compares counts instead


class PeerStatus(_Message):
    """A node's answer to its peer's poll: enough to decide who writes and who is behind."""

    name: Name
    priority: int
    role: HaRole
    groups: list[GroupState]
    maintenance: bool
    writer: bool
    head: Head | None
    history: list[Hex64] = Field(max_length=50)
    users_hash: Hex64
    connections: int | None
    # ESTABLISHED entries of the services (synced ones included): what a returning node compares.
    established: int | None = None
    conn_sync_daemon: Literal["master", "backup", "off"]
    transitions: list[Transition]
    time: datetime
    # From protocol 2 on; an older node sends none of the three.
    protocol: int = Field(default=1, ge=1)
    config_schema: int = Field(default=1, ge=1)
    software_version: SoftwareVersion | None = None
    # The last pair upgrade this node drove (fulcrum.ha.upgrade_record); a node before it sends none.
    pair_upgrade: PairUpgrade | None = None


class UserRecord(_Message):
    username: Username
    role: Role
    password_hash: Annotated[
        str, StringConstraints(pattern=r"^\$argon2(id|i|d)\$[A-Za-z0-9$=,+/.]+$", max_length=255)
    ]
    disabled: bool


class ConfigPush(_Message):
    """A node's shared configuration (its head revision's shared part) and its users. Only a
    forced push (pairing) may come without configuration: then it carries the users alone."""

    shared: dict[str, Any] | None
    users: list[UserRecord] = Field(max_length=10_000)
    shared_hash: Hex64 | None
    lineage: Hex64 | None
    history: list[Hex64] = Field(max_length=50)
    origin_revision: int | None
    origin_node: Name
    force: bool = False  # the operator chose this node's configuration to win a conflict


class ConfigReply(_Message):
    result: Literal["in_sync", "fast_forward", "forced", "peer_ahead"]
    revision: int | None  # the receiver's head revision after handling the push
    state: str | None
    shared_hash: Hex64 | None


class CertificateAnnouncement(_Message):
    """The sender now serves this certificate (renewed): pin it."""

    certificate: Hex64


class MaintenanceOrder(_Message):
    enabled: bool
    reason: Annotated[str, StringConstraints(max_length=200)] = ""


class ClusterMembership(_Message):
    """The writer that has just paired with this node makes it a member of its cluster."""

    writer: Name
