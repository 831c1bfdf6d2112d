"""The editable (candidate) configuration of virtual services and their backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from fulcrum.db import Base


class Service(Base):
    __tablename__ = "services"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    address: Mapped[str] = mapped_column(String(45))
    ports: Mapped[list[int]] = mapped_column(JSON)
    fwmark: Mapped[int | None] = mapped_column(Integer, unique=True)
    protocol: Mapped[str] = mapped_column(String(8))
    # Everything else about the service (scheduler, forwarding, persistence, health check, ...)
    # is validated as a whole by fulcrum.config.snapshot.Service and kept as one document.
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    backends: Mapped[list[Backend]] = relationship(
        back_populates="service",
        cascade="all, delete-orphan",
        order_by="Backend.id",
        lazy="selectin",
    )


class Backend(Base):
    __tablename__ = "backends"
    __table_args__ = (UniqueConstraint("service_id", "address", "port"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    service_id: Mapped[int] = mapped_column(ForeignKey("services.id", ondelete="CASCADE"), index=True)
    address: Mapped[str] = mapped_column(String(45))
    port: Mapped[int | None] = mapped_column(Integer)
    weight: Mapped[int] = mapped_column(Integer, default=1)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Thresholds, health-check override, description.
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    service: Mapped[Service] = relationship(back_populates="backends")
