"""The backup archive before encryption: a gzip'd tar of a manifest, a consistent copy of the
database, the served TLS certificate and key, and the SSH host keys this process may read.

The database is copied with SQLite's online backup API (`sqlite3.Connection.backup`) while the API
keeps running, then trimmed of what is this node's passing state (sessions, login throttles, peer
nonces, events) and, unless asked for, of the HA pair key; VACUUM then rewrites the file so that
deleted rows do not linger in its free pages.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError
from sqlalchemy import make_url

from fulcrum import __version__
from fulcrum.errors import BackupRejected, Conflict
from fulcrum.schemas.backup import BackupIncludes, BackupManifest
from fulcrum.settings import Settings

ARCHIVE_FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "fulcrum.db"
TLS_CERTIFICATE = "tls/certificate.pem"
TLS_KEY = "tls/key.pem"
SSH_PREFIX = "ssh/"
# Unpacked, an archive may be at most this large (a gzip bomb is refused, not unpacked).
MAX_UNPACKED = 2 << 30
MAX_MEMBERS = 64

# Rows that are this node's passing state, not its configuration: never in a backup.
NOT_BACKED_UP = (
    "ha_pairing_code",
    "ha_peer_nonces",
    "login_failures_by_account",
    "login_failures_by_address",
    "events",
    "alert_conditions",
)
# The peer link's keys: the pairing's, and on a cluster's writer each member's. In a backup only
# when the admin asks for "the pair key".
PAIR_KEY_TABLES = ("ha_pairing", "cluster_members")


@dataclass
class Unpacked:
    """An archive unpacked into a temporary directory (removed when the `unpacked` block ends)."""

    manifest: BackupManifest
    database: Path
    tls: tuple[str, str] | None
    ssh_host_keys: dict[str, bytes] = field(default_factory=dict)


def database_path(settings: Settings) -> Path:
    assert settings.database_url is not None
    url = make_url(settings.database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        raise Conflict("backups need the database in an SQLite file; this API's is not")
    return Path(url.database)


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of the live database, whatever writers do meanwhile."""
    with (
        contextlib.closing(sqlite3.connect(source)) as live,
        contextlib.closing(sqlite3.connect(target)) as copy,
    ):
        live.backup(copy)


def _count(db: sqlite3.Connection, sql: str) -> int:
    return int(db.execute(sql).fetchone()[0])


def _trim(copy: Path, include_pair_key: bool) -> tuple[str, BackupIncludes]:
    """Remove what a backup never carries; return the schema revision and what is left."""
    with contextlib.closing(sqlite3.connect(copy)) as db:
        present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in (*NOT_BACKED_UP, *(() if include_pair_key else PAIR_KEY_TABLES)):
            if table in present:  # a database at an older schema may lack some
                db.execute(f"DELETE FROM {table}")  # noqa: S608  (names from the constants above)
        db.execute("DELETE FROM auth_tokens WHERE kind = 'session'")  # sessions end with the node
        db.commit()
        db.execute("VACUUM")
        revision = db.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        includes = BackupIncludes(
            revisions=_count(db, "SELECT count(*) FROM revisions"),
            users=_count(db, "SELECT count(*) FROM users"),
            api_tokens=_count(db, "SELECT count(*) FROM auth_tokens"),
            pair_key=include_pair_key
            and any(
                _count(db, f"SELECT count(*) FROM {table}") > 0  # noqa: S608  (names from the constant)
                for table in PAIR_KEY_TABLES
                if table in present
            ),
        )
    return str(revision), includes


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


def _readable(path: Path | None, skipped: list[str], what: str) -> bytes | None:
    if path is None or not path.exists():
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        skipped.append(f"{what} {path}: {exc.strerror}")
        return None


def write(
    settings: Settings,
    node_name: str,
    include_pair_key: bool,
    target: BinaryIO,
    host_keys: dict[str, bytes],
    skipped: list[str],
) -> BackupManifest:
    """Write the archive of this node to `target`, with sshd's host keys as the privileged helper
    read them, and what could not be read in `skipped`."""
    with tempfile.TemporaryDirectory(prefix="fulcrum-backup-") as scratch:
        copy = Path(scratch) / DATABASE
        copy_database(database_path(settings), copy)
        schema_revision, includes = _trim(copy, include_pair_key)
        certificate = _readable(settings.tls_certfile, skipped, "TLS certificate")
        key = _readable(settings.tls_keyfile, skipped, "TLS key")
        includes.tls = certificate is not None and key is not None
        includes.ssh_host_keys = sorted(host_keys)
        manifest = BackupManifest(
            format=ARCHIVE_FORMAT,
            fulcrum_version=__version__,
            schema_revision=schema_revision,
            node_name=node_name,
            created_at=datetime.now(UTC),
            includes=includes,
            skipped=skipped,
        )
        with tarfile.open(fileobj=target, mode="w:gz") as tar:
            _add(tar, MANIFEST, manifest.model_dump_json(indent=2).encode())
            tar.add(copy, DATABASE, recursive=False, filter=_private)
            if certificate is not None and key is not None:
                _add(tar, TLS_CERTIFICATE, certificate)
                _add(tar, TLS_KEY, key)
            for name, data in host_keys.items():
                _add(tar, SSH_PREFIX + name, data)
    return manifest


def _private(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
    return info


def _invalid(message: str) -> BackupRejected:
    return BackupRejected(f"the backup's contents are not valid: {message}", "invalid")


def _parse_manifest(data: bytes) -> BackupManifest:
    try:
        raw: Any = json.loads(data)
        if isinstance(raw, dict) and isinstance(raw.get("format"), int) and raw["format"] > ARCHIVE_FORMAT:
            raise BackupRejected(
                f"the backup's archive format is {raw['format']}, newer than this version of Fulcrum "
                f"understands ({ARCHIVE_FORMAT}): restore it on a newer version",
                "newer_format",
            )
        return BackupManifest.model_validate(raw)
    except (ValueError, ValidationError) as exc:
        raise _invalid(f"its manifest cannot be read ({str(exc)[:200]})") from None


@contextlib.contextmanager
def unpacked(archive: BinaryIO) -> Iterator[Unpacked]:
    """Unpack the decrypted archive. Only the names this module writes are read, as plain files,
    into a fresh directory: nothing in the archive chooses a path on this machine."""
    with tempfile.TemporaryDirectory(prefix="fulcrum-restore-") as scratch:
        database = Path(scratch) / DATABASE
        files: dict[str, bytes] = {}
        total = 0
        try:
            with tarfile.open(fileobj=archive, mode="r:gz") as tar:
                for count, member in enumerate(tar):
                    total += member.size
                    if count >= MAX_MEMBERS or total > MAX_UNPACKED:
                        raise _invalid("it holds more than a backup can")
                    if not member.isfile():
                        continue
                    source = tar.extractfile(member)
                    assert source is not None
                    if member.name == DATABASE:
                        with database.open("wb") as out:
                            while block := source.read(1 << 20):
                                out.write(block)
                    elif member.name in (MANIFEST, TLS_CERTIFICATE, TLS_KEY) or (
                        member.name.startswith(SSH_PREFIX) and "/" not in member.name[len(SSH_PREFIX) :]
                    ):
                        files[member.name] = source.read()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise _invalid(f"its archive cannot be unpacked ({exc})") from None
        if MANIFEST not in files or not database.exists():
            raise _invalid("its manifest or its database is missing")
        manifest = _parse_manifest(files[MANIFEST])
        tls = None
        if TLS_CERTIFICATE in files and TLS_KEY in files:
            try:
                tls = files[TLS_CERTIFICATE].decode("ascii"), files[TLS_KEY].decode("ascii")
            except UnicodeDecodeError:
                raise _invalid("its TLS certificate or key is not PEM text") from None
        ssh = {name[len(SSH_PREFIX) :]: data for name, data in files.items() if name.startswith(SSH_PREFIX)}
        yield Unpacked(manifest, database, tls, ssh)
