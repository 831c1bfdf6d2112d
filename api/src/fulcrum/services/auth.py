"""Passwords (argon2id), bearer tokens, login throttling and first-run setup."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from fulcrum.errors import Conflict, LoginFailed, TooManyRequests
from fulcrum.models import AuthToken, Role, TokenKind, User
from fulcrum.models._types import utcnow
from fulcrum.services import audit

_hasher = PasswordHasher()
# Verifying against this when the user does not exist keeps the response time the same, so a
# login attempt cannot tell which usernames exist.
_DUMMY_HASH = _hasher.hash("fulcrum-no-such-user")

TOKEN_PREFIX = {TokenKind.SESSION: "fus_", TokenKind.API: "ful_"}


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def _token_digest(secret: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough: no dictionary to search.
    return hashlib.sha256(secret.encode()).hexdigest()


def issue_token(session: Session, user: User, kind: TokenKind, name: str, lifetime: timedelta | None) -> tuple[AuthToken, str]:
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
    if token is None or (token.expires_at is not None and token.expires_at <= utcnow()) or token.user.disabled:
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

    def flush(self, session: Session) -> int:
        with self._lock:
            seen, self._seen = self._seen, {}
        for token_id, at in seen.items():
            token = session.get(AuthToken, token_id)
            if token is not None:
                token.last_used_at = at
        session.flush()
        return len(seen)


def revoke_token(session: Session, secret: str) -> None:
    token = session.scalar(select(AuthToken).where(AuthToken.token_hash == _token_digest(secret)))
    if token is not None:
        session.delete(token)
        session.flush()


class LoginThrottle:
    """Slows password guessing: after 5 failures from one source, each further try waits longer."""

    def __init__(self, free_failures: int = 5, max_lockout: float = 300.0) -> None:
        self._free = free_failures
        self._max = max_lockout
        self._failures: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def check(self, source: str) -> None:
        with self._lock:
            count, last = self._failures.get(source, (0, 0.0))
        if count < self._free:
            return
        wait = min(self._max, 2 ** (count - self._free)) - (time.monotonic() - last)
        if wait > 0:
            raise TooManyRequests(f"too many failed logins from {source}; try again in {wait:.0f} s")

    def failed(self, source: str) -> None:
        with self._lock:
            count, _ = self._failures.get(source, (0, 0.0))
            self._failures[source] = (count + 1, time.monotonic())

    def succeeded(self, source: str) -> None:
        with self._lock:
            self._failures.pop(source, None)


def needs_setup(session: Session) -> bool:
    return session.scalar(select(func.count()).select_from(User)) == 0


def create_first_admin(session: Session, source: str, username: str, password: str) -> User:
    """First-run setup. Works only while no account exists: there is no default password."""
    if not needs_setup(session):
        raise Conflict("setup is already done: an account exists; log in instead")
    user = User(username=username, password_hash=hash_password(password), role=Role.ADMIN.value)
    session.add(user)
    session.flush()
    audit.record(session, audit.Actor(username, source, user.id), "setup.first_admin", username)
    return user


def login(session: Session, throttle: LoginThrottle, source: str, username: str, password: str, lifetime: timedelta) -> tuple[User, AuthToken, str]:
    throttle.check(source)
    user = session.scalar(select(User).where(User.username == username))
    valid = verify_password(user.password_hash if user else _DUMMY_HASH, password)
    if user is None or not valid or user.disabled:
        throttle.failed(source)
        audit.record(session, audit.Actor(username[:64], source), "auth.login", username[:64], success=False)
        raise LoginFailed("wrong username or password")
    throttle.succeeded(source)
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
    token, secret = issue_token(session, user, TokenKind.SESSION, "browser session", lifetime)
    audit.record(session, audit.Actor(user.username, source, user.id), "auth.login", user.username)
    return user, token, secret


def expires(token: AuthToken) -> datetime:
    assert token.expires_at is not None
    return token.expires_at
