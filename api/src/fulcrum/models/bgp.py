"""This node's BGP settings (node-local, never replicated to the peer)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Integer
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base


class BgpSettings(Base):
    """One row once BGP is configured: a `fulcrum.config.bgp.BgpConfig` document.
    No row: this node runs no BGP."""

    __tablename__ = "bgp_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
