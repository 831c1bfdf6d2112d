"""High-availability and appliance-wide settings: VIP groups (shared), node and firewall, and the
HA pairing with the peer node."""

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

    Node-local: it never replicates. The key is the HKDF output of the pairing exchange.
    """

    __tablename__ = "ha_pairing"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    peer_name: Mapped[str] = mapped_column(String(63))
    peer_url: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(64))  # 32 bytes, hex
    paired_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    initiator: Mapped[bool] = mapped_column(Boolean)  # this node entered the peer's code


class HaPairingCode(Base):
    """The one-time code this node shows for pairing (one row at most), stored hashed."""

    __tablename__ = "ha_pairing_code"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    failures: Mapped[int] = mapped_column(Integer, default=0)
