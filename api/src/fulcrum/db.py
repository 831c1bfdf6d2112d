"""Engine, sessions and the unit of work: commit once, at the request boundary."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

from fastapi import Depends, Request
from sqlalchemy import MetaData, create_engine, event, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

# Named constraints let Alembic's batch mode (SQLite) recreate tables without losing them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


BEGIN_OPTION = "fulcrum_begin"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WRITES_LATE = "fulcrum_writes_late"


P = ParamSpec("P")
R = TypeVar("R")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def make_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False} if url.startswith("sqlite") else {})
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
            # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin, so that
            # SAVEPOINTs and BEGIN IMMEDIATE behave as documented.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA busy_timeout=5000")  # first: the pragmas below may wait for a lock
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection: Connection) -> None:
            # Write transactions take the lock up front (BEGIN IMMEDIATE): a deferred one that
            # reads, then writes after another writer committed fails at once with "database is
            # locked" instead of waiting for busy_timeout.
            connection.exec_driver_sql(connection.get_execution_options().get(BEGIN_OPTION, "BEGIN"))

    return engine


def protect_database_file(url: str) -> None:
    """Make the SQLite file readable by this process's user only: it holds the HA pair key,
    password hashes and tokens' hashes. SQLite creates its -wal and -shm files with the database
    file's mode, so later ones follow; existing ones are fixed here too. The appliance's API runs
    with UMask=0077 already; this covers a database made before that, or by another process."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    for suffix in ("", "-wal", "-shm"):
        path = Path(parsed.database + suffix)
        if path.exists():
            os.chmod(path, 0o600)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_disk_full(error: BaseException) -> bool:
    """SQLite's SQLITE_FULL: a write (to the database, its WAL or a temporary file) found no room."""
    cause = error.orig if isinstance(error, OperationalError) else error
    return (
        isinstance(cause, sqlite3.Error) and getattr(cause, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    )


@contextmanager
def unit_of_work(session: Session) -> Iterator[Session]:
    """Commit on success, roll back on error, except errors that record what happened
    (a failed login, a failed apply): those commit and then propagate. A write that finds the
    disk full becomes DiskFull (507): SQLite has rolled it back, nothing committed before is lost."""
    from fulcrum.errors import AppError, DiskFull

    try:
        try:
            yield session
        except AppError as exc:
            if exc.keep_changes:
                session.commit()
            else:
                session.rollback()
            raise
        except BaseException:
            session.rollback()
            raise
        session.commit()
    except OperationalError as exc:
        if not is_disk_full(exc):
            raise
        session.rollback()
        raise DiskFull("the change was not saved; free space on the data disk and try again") from exc


def begin_write(session: Session) -> None:
    """Start the session's next transaction as a writer (SQLite: BEGIN IMMEDIATE)."""
    if session.bind is not None and session.bind.dialect.name == "sqlite" and not session.in_transaction():
        session.connection(execution_options={BEGIN_OPTION: "BEGIN IMMEDIATE"})


def end_read(session: Session) -> None:
    """End the current transaction without writing, so that nothing holds the database while a
    slow step runs (an apply takes seconds); call begin_write after it. (Beginning the write here
    would take SQLite's write lock at once and hold it through the slow step: keepalived's
    notifications, recorded meanwhile, then failed with "database is locked".)"""
    session.rollback()


def end_before_peers(session: Session) -> None:
    """End the request's (empty) write transaction before the endpoint talks to peers, which can
    take seconds: what follows writes in short transactions of its own (fulcrum.ha)."""
    session.commit()


def writes_late(endpoint: Callable[P, R]) -> Callable[P, R]:
    """Mark an endpoint that checks a password before it writes. Its session starts as a reader
    (in WAL mode readers neither wait for the writer nor hold it up), so the argon2 check (a tenth
    of a second, and a flood of logins brings many) runs holding no lock; the service ends the
    read before checking and calls `begin_write` only for its short write."""
    setattr(endpoint, _WRITES_LATE, True)
    return endpoint


def get_session(request: Request) -> Iterator[Session]:
    """One session per request: services only flush; the unit of work commits at the boundary."""
    with request.app.state.sessionmaker() as session, unit_of_work(session):
        if request.method not in SAFE_METHODS and not getattr(
            request.scope.get("endpoint"), _WRITES_LATE, False
        ):
            begin_write(session)
        yield session


# scope="function": the transaction commits before the response is sent, so a client's next
# request always sees what the previous one changed.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
