"""High-availability and appliance-wide settings: VIP groups (shared), node and firewall."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base


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
