"""Alerts: where events are sent (channels), which ones (rules), and the open conditions that
de-duplicate them. Node-local: never replicated (see fulcrum.alerts for why)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base
from fulcrum.models._types import UTCDateTime, utcnow


class AlertChannel(Base):
    """An e-mail, webhook or syslog destination, with its delivery cursor and last outcome.

    `secret` (the SMTP password or the webhook's HMAC key) is write-only in the API; at rest it is
    as safe as the database file, like the HA pair key (fulcrum.db.protect_database_file)."""

    __tablename__ = "alert_channels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    type: Mapped[str] = mapped_column(String(16))  # smtp, webhook, syslog
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    secret: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # The outbox cursor: every event with an id up to this one has been delivered or skipped.
    last_event_id: Mapped[int] = mapped_column(Integer, default=0)
    last_success_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def has_secret(self) -> bool:
        return self.secret is not None


class AlertRule(Base):
    """Events of these kinds, at or above this severity, go to the channel; an open condition is
    reminded of every `reminder_minutes` while it lasts (None: no reminder)."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("alert_channels.id", ondelete="CASCADE"), index=True)
    kinds: Mapped[list[str]] = mapped_column(JSON, default=list)
    min_severity: Mapped[str] = mapped_column(String(16), default="warning")
    reminder_minutes: Mapped[int | None] = mapped_column(Integer, nullable=True)


class AlertCondition(Base):
    """A condition (a backend down, the peer unreachable) alerted on a channel and not yet
    cleared: the same condition reported again is not sent again."""

    __tablename__ = "alert_conditions"
    __table_args__ = (UniqueConstraint("channel_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("alert_channels.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    message: Mapped[str] = mapped_column(Text)
    severity: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(32))
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_sent_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
