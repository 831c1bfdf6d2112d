"""The appliance's own network settings (node-local, never replicated to the peer)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Integer
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base


class NetworkSettings(Base):
    """One row once the network is managed: a `fulcrum.config.network.NetworkConfig` document.
    No row: Fulcrum leaves the host's network alone."""

    __tablename__ = "network_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
