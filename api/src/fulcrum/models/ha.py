"""High-availability and appliance-wide settings: VIP groups (shared), node and firewall, the
HA pairing with the peer node and, on a cluster's writer, its members."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base
from fulcrum.models._types import UTCDateTime, utcnow


class VipGroup(Base):
    __tablename__ = "vip_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    virtual_router_id: Mapped[int] = mapped_column(Integer)
    addresses: Mapped[list[str]] = mapped_column(JSON)
    advert_interval: Mapped[float] = mapped_column(Float)
    preempt: Mapped[bool] = mapped_column(Boolean, default=False)


class NodeSettings(Base):
    """One row: this node's own settings (never replicated to the peer)."""

    __tablename__ = "node_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class FirewallSettings(Base):
    """One row: the management-access policy."""

    __tablename__ = "firewall_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class HaPairing(Base):
    """One row while this node is paired: who the peer is and the key that signs peer traffic.

    Node-local: it never replicates, and no API answer, event, audit entry or log line carries the
    key (the HKDF output of the pairing exchange). At rest it is as safe as the database file,
    which the API keeps readable by its own user only (fulcrum.db.protect_database_file).
    """

    __tablename__ = "ha_pairing"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    peer_name: Mapped[str] = mapped_column(String(63))
    peer_url: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(64))  # 32 bytes, hex
    paired_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    initiator: Mapped[bool] = mapped_column(Boolean)  # this node entered the peer's code
    # SHA-256 (hex) of the DER certificate the peer serves: every TLS connection to it must present
    # exactly this one. None on a plain-HTTP link (the lab), where there is no certificate.
    peer_certificate: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # This node's certificate as the peer has pinned it; a renewed certificate differs and is
    # announced to the peer in a signed request.
    announced_certificate: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The peer is the writer of a cluster this node is a member of (fulcrum.ha.cluster), not the
    # other node of an HA pair: this node takes the writer's configuration and never writes.
    cluster_writer: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class ClusterMember(Base):
    """On a cluster's writer, one row per member node: the same trust as a pairing, once per member
    (the pairing exchange's key, the member's certificate pinned). Node-local, like the pairing;
    no API answer, event, audit entry or log line carries the key."""

    __tablename__ = "cluster_members"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    url: Mapped[str] = mapped_column(String(255), unique=True)
    key: Mapped[str] = mapped_column(String(64))  # 32 bytes, hex
    certificate: Mapped[str | None] = mapped_column(String(64), nullable=True)  # SHA-256, pinned
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class HaPairingCode(Base):
    """The one-time code this node shows for pairing (one row at most), stored hashed."""

    __tablename__ = "ha_pairing_code"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    # wrong tries per source address: one address cannot burn the code for everyone
    failures_by_source: Mapped[dict[str, int]] = mapped_column(JSON, default=dict, server_default="{}")


class PeerNonce(Base):
    """The nonce of a peer request this node accepted, refused again until `expires_at` (unix
    time), by when the request's timestamp can no longer pass. Stored, so a restart forgets none."""

    __tablename__ = "ha_peer_nonces"

    nonce: Mapped[str] = mapped_column(String(32), primary_key=True)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
