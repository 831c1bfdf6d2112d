"""The login throttle: failed logins counted per account and per address, in the database.

After `FREE_FAILURES` failures an account, or an address, waits before its next try:
`FIRST_LOCKOUT`, then twice as long after each further failure, at most `MAX_LOCKOUT` (about
20 guesses an hour at one account, where a typing user waits half a minute). A success clears only what
concerns the account that succeeded: its own count, and its failures from that address. So a
valid login as one user never buys more guesses at another (an attacker alternating wrong admin
passwords with a viewer login they know is throttled all the same), and a user's success
elsewhere leaves the attacker's address as slow as it was. Counts are forgotten an hour after
their last failure, which also bounds the tables."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from fulcrum.errors import TooManyRequests
from fulcrum.models import AccountLoginFailures, AddressLoginFailures
from fulcrum.models._types import utcnow

FREE_FAILURES = 5
FIRST_LOCKOUT = timedelta(seconds=30)
MAX_LOCKOUT = timedelta(minutes=5)
FORGET_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class Lockout:
    failures: int
    locked_until: datetime | None  # None: the next try is allowed now


def _lockout(failures: int, last_failed_at: datetime | None, now: datetime) -> Lockout:
    if last_failed_at is None or now - last_failed_at > FORGET_AFTER:
        return Lockout(0, None)
    if failures < FREE_FAILURES:
        return Lockout(failures, None)
    doublings = min(
        failures - FREE_FAILURES, 16
    )  # past MAX_LOCKOUT anyway; a bigger power would overflow timedelta
    wait = min(MAX_LOCKOUT, FIRST_LOCKOUT * 2**doublings)
    until = last_failed_at + wait
    return Lockout(failures, until if until > now else None)


def account_lockouts(session: Session, usernames: list[str]) -> dict[str, Lockout]:
    now = utcnow()
    rows = session.scalars(select(AccountLoginFailures).where(AccountLoginFailures.username.in_(usernames)))
    return {row.username: _lockout(row.failures, row.last_failed_at, now) for row in rows}


def _address_lockout(session: Session, address: str, now: datetime) -> Lockout:
    failures, last = session.execute(
        select(func.sum(AddressLoginFailures.failures), func.max(AddressLoginFailures.last_failed_at)).where(
            AddressLoginFailures.address == address, AddressLoginFailures.last_failed_at > now - FORGET_AFTER
        )
    ).one()
    # MAX is NULL when no failure is recorded, though SQLAlchemy types it as the column; and over a
    # TypeDecorator column it comes back naive: it is UTC.
    latest = cast("datetime | None", last)
    return _lockout(failures or 0, latest.replace(tzinfo=now.tzinfo) if latest else None, now)


def check(session: Session, address: str, username: str) -> None:
    """Refuse a try while the account or the address must wait. Reads only."""
    now = utcnow()
    account = account_lockouts(session, [username]).get(username, Lockout(0, None))
    by_address = _address_lockout(session, address, now)
    for lockout, whose in ((account, "for this account"), (by_address, f"from {address}")):
        if lockout.locked_until is not None:
            wait = max(1, round((lockout.locked_until - now).total_seconds()))
            raise TooManyRequests(f"too many failed logins {whose}; try again in {wait} s", retry_after=wait)


def failed(session: Session, address: str, username: str) -> None:
    now = utcnow()
    session.execute(
        delete(AccountLoginFailures).where(AccountLoginFailures.last_failed_at < now - FORGET_AFTER)
    )
    session.execute(
        delete(AddressLoginFailures).where(AddressLoginFailures.last_failed_at < now - FORGET_AFTER)
    )
    account = session.get(AccountLoginFailures, username) or AccountLoginFailures(
        username=username, failures=0
    )
    from_address = session.get(AddressLoginFailures, (address, username)) or AddressLoginFailures(
        address=address, username=username, failures=0
    )
    for row in (account, from_address):
        row.failures += 1
        row.last_failed_at = now
        session.add(row)
    session.flush()


def succeeded(session: Session, address: str, username: str) -> None:
    session.execute(delete(AccountLoginFailures).where(AccountLoginFailures.username == username))
    session.execute(
        delete(AddressLoginFailures).where(
            AddressLoginFailures.address == address, AddressLoginFailures.username == username
        )
    )


def unlock(session: Session, username: str) -> None:
    """An admin lets the account try again now: its failures are forgotten, from every address."""
    session.execute(delete(AccountLoginFailures).where(AccountLoginFailures.username == username))
    session.execute(delete(AddressLoginFailures).where(AddressLoginFailures.username == username))
