"""Events from the data plane: health-check results, VRRP transitions, applies."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base
from fulcrum.models._types import UTCDateTime, utcnow


class Event(Base):
    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)  # backend_up, backend_down, vrrp_state, ...
    severity: Mapped[str] = mapped_column(String(16))  # info, warning, critical
    service: Mapped[str | None] = mapped_column(String(63), index=True)
    backend: Mapped[str | None] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
