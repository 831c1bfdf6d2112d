"""A cluster of active nodes behind BGP ECMP, run from one writer (/cluster)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from fulcrum.apply.result import BgpView
from fulcrum.schemas.ha import SyncResult

ClusterRole = Literal["writer", "member", "none"]
# in_sync: the writer's shared configuration; behind: the writer sends it; conflict: the member
# has configuration the writer's history does not (only a forced sync replaces it); unreachable.
MemberSync = Literal["in_sync", "behind", "conflict", "unreachable"]


class ClusterNode(BaseModel):
    name: str
    url: str | None  # None for the writer seen from itself
    writer: bool
    local: bool  # the node answering this request
    reachable: bool | None  # None: not asked yet
    last_seen: datetime | None
    maintenance: bool | None  # drained: it announces nothing
    revision: int | None  # its head revision (its own numbering)
    shared_hash: str | None
    sync: MemberSync | None  # None for the writer itself
    sync_message: str
    connections: int | None  # IPVS connection entries of the services
    share: float | None  # its part of the cluster's connections (0..1), among the nodes that told
    software_version: str | None
    joined_at: datetime | None


class ClusterStatus(BaseModel):
    role: ClusterRole
    writer: str | None
    writer_url: str | None
    nodes: list[ClusterNode]
    message: str  # when the picture is incomplete: why (e.g. the writer cannot be asked)


class NodeBgp(BaseModel):
    name: str
    local: bool  # the node answering this request
    bgp: BgpView | None  # None: the node could not be asked (error says why)
    error: str


class ClusterBgp(BaseModel):
    nodes: list[NodeBgp]  # this node first where it is the writer or alone
    message: str  # when the picture is empty: why (a member could not ask the writer)


class JoinResult(BaseModel):
    member: str
    url: str
    sync: SyncResult  # the writer's configuration, pushed to the new member


class DrainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: StrictBool = True  # false: take traffic again


class MemberSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: StrictBool = False  # replace the member's configuration even if it has another history


class RemoveResult(BaseModel):
    member: str
    told: str = Field(description="what the member was told, or why it could not be")
