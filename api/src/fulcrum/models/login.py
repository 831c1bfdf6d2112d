"""Failed logins, counted per account and per address, kept in the database so that a restart
does not hand an attacker a fresh set of guesses."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from fulcrum.db import Base
from fulcrum.models._types import UTCDateTime


class AccountLoginFailures(Base):
    """Failures against one account name, from any address. Names that have no account are
    counted too: a throttle that ignored them would tell which names exist."""

    __tablename__ = "login_failures_by_account"

    username: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    last_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class AddressLoginFailures(Base):
    """Failures from one address against one account name. The address's count is the sum over
    its rows; a success removes only the row of the account that succeeded."""

    __tablename__ = "login_failures_by_address"

    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    username: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    last_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
