"""Passwords (argon2id), bearer tokens, login and first-run setup."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from fulcrum.db import begin_write
from fulcrum.errors import Conflict, LoginFailed
from fulcrum.models import AuthToken, Role, TokenKind, User
from fulcrum.models._types import utcnow
from fulcrum.services import audit, login_throttle
from fulcrum.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")

# Verifying against a dummy hash when the user does not exist keeps the response time the same,
# so a login attempt cannot tell which usernames exist. Its parameters must be the hasher's own, or
# the two verifications would take different times (tests/api/test_auth.py checks them). For the
# default parameters it is stored rather than made at import: argon2's 64 MiB hash was a twentieth
# of the API's start-up.
_DEFAULT_DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$jKKp1G9nJ5i3nGgddyCatQ$lkA6h8GRsv/pFSGf9clrYR5IZxMAv8OWXrTnWEvEaEw"
)


@dataclass(frozen=True)
class _Passwords:
    hasher: PasswordHasher
    dummy_hash: str


_passwords = _Passwords(PasswordHasher(), _DEFAULT_DUMMY_HASH)


def configure_password_hashing(settings: Settings) -> None:
    """Hash new passwords with the settings' argon2id cost (at the API's start)."""
    global _passwords
    hasher = PasswordHasher(
        time_cost=settings.password_hash_time_cost,
        memory_cost=settings.password_hash_memory_kib,
        parallelism=settings.password_hash_parallelism,
    )
    for dummy in (_DEFAULT_DUMMY_HASH, _passwords.dummy_hash):
        if not hasher.check_needs_rehash(dummy):
            break
    else:  # other parameters than the stored dummy's: one hash, at start
        dummy = hasher.hash(secrets.token_urlsafe(16))
    _passwords = _Passwords(hasher, dummy)


TOKEN_PREFIX = {TokenKind.SESSION: "fus_", TokenKind.API: "ful_"}


def hash_password(password: str) -> str:
    return _passwords.hasher.hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return _passwords.hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def _token_digest(secret: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough: no dictionary to search.
    return hashlib.sha256(secret.encode()).hexdigest()


def issue_token(
    session: Session, user: User, kind: TokenKind, name: str, lifetime: timedelta | None
) -> tuple[AuthToken, str]:
    secret = TOKEN_PREFIX[kind] + secrets.token_urlsafe(32)
    token = AuthToken(
        user_id=user.id,
        kind=kind.value,
        name=name,
        token_hash=_token_digest(secret),
        prefix=secret[:10],
        expires_at=utcnow() + lifetime if lifetime else None,
    )
    session.add(token)
    session.flush()
    return token, secret


def token_for(session: Session, secret: str) -> AuthToken | None:
    """The live token for `secret`: not expired, its user not disabled. Reads only."""
    token = session.scalar(select(AuthToken).where(AuthToken.token_hash == _token_digest(secret)))
    if (
        token is None
        or (token.expires_at is not None and token.expires_at <= utcnow())
        or token.user.disabled
    ):
        return None
    return token


class TokenUsage:
    """When each token was last used, kept in memory and written now and then.

    Writing it on every request would turn every read into a write transaction.
    """

    def __init__(self) -> None:
        self._seen: dict[int, datetime] = {}
        self._lock = threading.Lock()

    def seen(self, token_id: int) -> None:
        with self._lock:
            self._seen[token_id] = utcnow()

    def take(self) -> dict[int, datetime]:
        with self._lock:
            seen, self._seen = self._seen, {}
        return seen

    def put_back(self, seen: dict[int, datetime]) -> None:
        """Uses taken but not written (the write failed): kept for the next write, unless a
        later use of the same token was seen meanwhile."""
        with self._lock:
            for token_id, at in seen.items():
                self._seen[token_id] = max(at, self._seen.get(token_id, at))

    @staticmethod
    def write(session: Session, seen: dict[int, datetime]) -> None:
        for token_id, at in seen.items():
            token = session.get(AuthToken, token_id)
            if token is not None:
                token.last_used_at = at
        session.flush()


def revoke_token(session: Session, secret: str) -> None:
    token = session.scalar(select(AuthToken).where(AuthToken.token_hash == _token_digest(secret)))
    if token is not None:
        session.delete(token)
        session.flush()


def needs_setup(session: Session) -> bool:
    return session.scalar(select(func.count()).select_from(User)) == 0


# Password hashing runs here, not on the request threads: each check costs about 0.1 s of CPU and
# 64 MiB, so a flood of logins is queued for half the cores while the other half, and every
# request thread, stay free for operators. Cancelling a queued check (its client went away)
# removes it from the queue.
_password_work = ThreadPoolExecutor(
    max_workers=max(1, (os.cpu_count() or 2) // 2), thread_name_prefix="password"
)


async def _hashing(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    return await asyncio.wrap_future(_password_work.submit(fn, *args, **kwargs))


def _check(stored_hash: str, password: str) -> tuple[bool, str | None]:
    """Whether `password` matches, and its new hash if the stored one uses outdated parameters."""
    if not verify_password(stored_hash, password):
        return False, None
    return True, hash_password(password) if _passwords.hasher.check_needs_rehash(stored_hash) else None


def _refuse_setup_once_done(session: Session) -> None:
    if not needs_setup(session):
        raise Conflict("setup is already done: an account exists; log in instead")


def _create_first_admin(
    session: Session, source: str, username: str, password_hash: str, lifetime: timedelta
) -> tuple[User, AuthToken, str]:
    begin_write(session)
    _refuse_setup_once_done(session)  # again, under the write lock: two setups may race
    user = User(username=username, password_hash=password_hash, role=Role.ADMIN.value)
    session.add(user)
    session.flush()
    audit.record(session, audit.Actor(username, source, user.id), "setup.first_admin", username)
    token, secret = issue_token(session, user, TokenKind.SESSION, "browser session", lifetime)
    return user, token, secret


async def create_first_admin(
    session: Session, source: str, username: str, password: str, lifetime: timedelta
) -> tuple[User, AuthToken, str]:
    """First-run setup, with its first session. Works only while no account exists: there is no
    default password. For an endpoint marked `writes_late`: the password is hashed holding no lock."""
    await run_in_threadpool(_refuse_setup_once_done, session)
    await run_in_threadpool(session.rollback)
    password_hash = await _hashing(hash_password, password)
    return await run_in_threadpool(_create_first_admin, session, source, username, password_hash, lifetime)


@dataclass(frozen=True)
class _LoginAttempt:
    source: str
    username: str
    user_id: int | None
    password_hash: str  # the account's, or a dummy: an unknown name costs the same time


def _start_login(session: Session, source: str, username: str) -> _LoginAttempt:
    login_throttle.check(session, source, username)
    user = session.scalar(select(User).where(User.username == username))
    attempt = _LoginAttempt(
        source, username, user.id if user else None, user.password_hash if user else _passwords.dummy_hash
    )
    session.rollback()  # the read ends: nothing is held while the password is checked
    return attempt


def _finish_login(
    session: Session, attempt: _LoginAttempt, valid: bool, rehashed: str | None, lifetime: timedelta
) -> tuple[User, AuthToken, str]:
    begin_write(session)
    # Again, under the write lock: failures recorded while this password was being checked count,
    # so a burst of concurrent guesses gets no more answers than a sequence would.
    login_throttle.check(session, attempt.source, attempt.username)
    user = session.get(User, attempt.user_id) if attempt.user_id is not None else None
    changed_meanwhile = user is not None and user.password_hash != attempt.password_hash
    if user is None or not valid or user.disabled or changed_meanwhile:
        login_throttle.failed(session, attempt.source, attempt.username)
        name = attempt.username[:64]
        audit.record(session, audit.Actor(name, attempt.source), "auth.login", name, success=False)
        raise LoginFailed("wrong username or password")
    login_throttle.succeeded(session, attempt.source, attempt.username)
    if rehashed is not None:
        user.password_hash = rehashed
    token, secret = issue_token(session, user, TokenKind.SESSION, "browser session", lifetime)
    audit.record(session, audit.Actor(user.username, attempt.source, user.id), "auth.login", user.username)
    return user, token, secret


async def login(
    session: Session, source: str, username: str, password: str, lifetime: timedelta
) -> tuple[User, AuthToken, str]:
    """Check a password and start a session. For an endpoint marked `writes_late`: the throttle and
    the account are read, the password is checked holding no lock, and only the outcome (throttle
    counts, audit record, session token) is written, under the write lock for milliseconds."""
    attempt = await run_in_threadpool(_start_login, session, source, username)
    valid, rehashed = await _hashing(_check, attempt.password_hash, password)
    return await run_in_threadpool(_finish_login, session, attempt, valid, rehashed, lifetime)


async def check_password_off_lock(session: Session, stored_hash: str, password: str) -> bool:
    """For an endpoint marked `writes_late`: end the read, then check the password holding no lock."""
    await run_in_threadpool(session.rollback)
    valid, _ = await _hashing(_check, stored_hash, password)
    return valid


async def hash_password_off_lock(password: str) -> str:
    return await _hashing(hash_password, password)


def expires(token: AuthToken) -> datetime:
    assert token.expires_at is not None
    return token.expires_at
