"""Restoring a backup: reading the upload (decrypt, unpack, migrate its database forward), then
either filling a fresh appliance with it (before any account exists, the rule of first-run setup)
or making its configuration the candidate of a running one, to be reviewed and committed as a new
revision like any other change.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError
from sqlalchemy import Table, delete, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session, sessionmaker

from fulcrum import migrate
from fulcrum.apply.client import Applier, ApplierError
from fulcrum.apply.host_keys import HostKeys
from fulcrum.backup import archive, crypto
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.db import Base, begin_write, end_read, make_engine
from fulcrum.errors import BackupRejected, ConfigInvalid, Conflict
from fulcrum.ha.runtime import HaRuntime
from fulcrum.models import AlertChannel, Event, Role, User
from fulcrum.schemas.backup import BackupManifest
from fulcrum.schemas.tls import CertificateUpload
from fulcrum.services import audit, auth
from fulcrum.services import revisions as revision_service
from fulcrum.services.candidate import candidate_snapshot, load_snapshot
from fulcrum.settings import Settings
from fulcrum.tls import certificate as tls_certificate
from fulcrum.tls.validation import install, validate_upload

# What a fresh appliance takes from a backup, parents before children. Every other table is this
# node's passing state (archive.NOT_BACKED_UP); tests/api/test_backup.py checks that each table is
# one or the other.
RESTORED = (
    "users",
    "auth_tokens",
    "services",
    "backends",
    "vip_groups",
    "node_settings",
    "network_settings",  # node-local like node_settings: a re-flashed box gets its own network back
    "bgp_settings",  # node-local too: the box's own BGP neighbors (their passwords travel encrypted)
    "firewall_settings",
    "revisions",
    "audit_log",
    "alert_channels",
    "alert_rules",
    *archive.PAIR_KEY_TABLES,
)
USER_TABLES = ("users", "auth_tokens")
BATCH = 500


@dataclass
class Outcome:
    manifest: BackupManifest
    notes: list[str] = field(default_factory=list)


@dataclass
class Opened:
    """A readable backup: its manifest and files, its database migrated to this version's schema."""

    unpacked: archive.Unpacked
    notes: list[str] = field(default_factory=list)

    @property
    def manifest(self) -> BackupManifest:
        return self.unpacked.manifest


def _migrate_forward(database: Path, revision: str, notes: list[str]) -> None:
    from alembic.script import ScriptDirectory  # here: the API's start-up does without Alembic
    from alembic.util.exc import CommandError

    url = f"sqlite:///{database}"
    scripts = ScriptDirectory.from_config(migrate.alembic_config(url))
    try:
        scripts.get_revision(revision)
    except CommandError:
        raise BackupRejected(
            f"the backup's database has schema revision {revision}, which this version of Fulcrum does "
            "not know: it was made by a newer version; restore it there or upgrade this appliance first",
            "newer_format",
        ) from None
    head = scripts.get_current_head()
    if revision != head:
        notes.append(f"the backup's database was migrated from schema revision {revision} to {head}")
    migrate.upgrade(url)


@contextlib.contextmanager
def opened(upload: BinaryIO, size: int, passphrase: str) -> Iterator[Opened]:
    """Decrypt and unpack an uploaded backup; BackupRejected says why it cannot be."""
    with tempfile.TemporaryFile(prefix="fulcrum-restore-") as plain:
        crypto.decrypt(upload, size, passphrase, plain)
        plain.seek(0)
        with archive.unpacked(plain) as unpacked:
            notes: list[str] = []
            _migrate_forward(unpacked.database, unpacked.manifest.schema_revision, notes)
            yield Opened(unpacked, notes)


@contextlib.contextmanager
def _archive_connection(opened: Opened) -> Iterator[Connection]:
    engine = make_engine(f"sqlite:///{opened.unpacked.database}")
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def _tables(names: tuple[str, ...]) -> list[Table]:
    return [Base.metadata.tables[name] for name in names]


def _replace_rows(session: Session, source: Connection, tables: list[Table]) -> None:
    """Make `tables` hold exactly the archive's rows (both databases are at this schema now)."""
    for table in reversed(tables):
        session.execute(delete(table))
    for table in tables:
        rows = source.execute(select(table)).mappings()
        for batch in rows.partitions(BATCH):
            session.execute(table.insert(), [dict(row) for row in batch])
    session.flush()
    session.expire_all()


def _restore_tls(settings: Settings, opened: Opened, runtime: HaRuntime, notes: list[str]) -> None:
    tls = opened.unpacked.tls
    if tls is None:
        notes.append("the backup has no TLS certificate: this node keeps its own")
        return
    if settings.tls_certfile is None or settings.tls_keyfile is None:
        notes.append("this API serves plain HTTP: the backup's TLS certificate was not installed")
        return
    try:
        validated = validate_upload(*tls, datetime.now(UTC))
    except ConfigInvalid as exc:
        notes.append(f"the backup's TLS certificate was not installed: {exc.message}")
        return
    install(validated, settings.tls_certfile, settings.tls_keyfile)
    runtime.served_certificate = validated.info.fingerprint


def _restore_ssh(applier: Applier, opened: Opened, notes: list[str]) -> None:
    """sshd's host keys belong to root: the privileged helper checks and installs them."""
    files = opened.unpacked.ssh_host_keys
    if not files:
        notes.append("the backup has no SSH host keys: this node keeps its own")
        return
    try:
        keys = HostKeys(files={name: data.decode("ascii") for name, data in files.items()})
        installed = applier.install_ssh_host_keys(keys)
    except (UnicodeDecodeError, ValidationError, ApplierError) as error:
        notes.append(f"the backup's SSH host keys were not installed: {_first_line(error)}")
        return
    notes.append(f"SSH host keys: {installed.message}")


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:300]


def restore_fresh(
    session: Session,
    source_address: str,
    settings: Settings,
    runtime: HaRuntime,
    applier: Applier,
    opened: Opened,
) -> Outcome:
    """First-run restore: the backup's accounts, configuration, history and (if it has them) TLS
    certificate, SSH host keys and pair key become this node's. Allowed only while no account
    exists, exactly like first-run setup, checked again under the write lock (two of them may race)."""
    end_read(session)
    begin_write(session)
    if not auth.needs_setup(session):
        raise Conflict("setup is already done: an account exists; restore from System → Backup instead")
    with _archive_connection(opened) as source:
        _replace_rows(session, source, _tables(RESTORED))
    # Alerts go on from this node's events, which do not come from the backup.
    last_event = session.scalar(select(func.max(Event.id))) or 0
    session.execute(update(AlertChannel).values(last_event_id=last_event))
    outcome = Outcome(opened.manifest, list(opened.notes))
    _restore_tls(settings, opened, runtime, outcome.notes)
    _restore_ssh(applier, opened, outcome.notes)
    audit.record(
        session,
        audit.Actor("setup", source_address),
        "backup.restore",
        opened.manifest.node_name,
        {"fresh": True, **_described(opened.manifest)},
    )
    return outcome


def _archive_configuration(source: Connection) -> ConfigSnapshot:
    with Session(bind=source) as archived:
        running = revision_service.running(archived)
        if running is not None:
            snapshot = revision_service.snapshot_of(running)
            assert snapshot is not None
            return snapshot
        return candidate_snapshot(archived)


@dataclass(frozen=True)
class Replaced:
    """What a restore on a running appliance replaces besides the configuration, as asked."""

    users: bool = False
    tls: bool = False
    ssh: bool = False


def restore_as_candidate(
    session: Session,
    actor: audit.Actor,
    settings: Settings,
    runtime: HaRuntime,
    applier: Applier,
    opened: Opened,
    replaced: Replaced,
) -> Outcome:
    """On a running appliance: the backup's running configuration becomes the candidate (reviewed
    and committed like any change); accounts, the TLS certificate and the SSH host keys are
    replaced only if asked. Replacing the accounts ends every session, this one's too."""
    end_read(session)
    begin_write(session)
    outcome = Outcome(opened.manifest, list(opened.notes))
    with _archive_connection(opened) as source:
        load_snapshot(session, _archive_configuration(source))
        if replaced.users:
            _replace_rows(session, source, _tables(USER_TABLES))
            admins = select(func.count()).select_from(User).where(User.role == Role.ADMIN.value)
            if not session.scalar(admins):
                raise BackupRejected(
                    "the backup has no admin account: its accounts were not restored", "invalid"
                )
    if replaced.tls:
        if opened.unpacked.tls is None:
            outcome.notes.append("the backup has no TLS certificate: this node keeps its own")
        else:
            chain, key = opened.unpacked.tls
            tls_certificate.replace_served(
                session, actor, settings, runtime, CertificateUpload(certificate_chain=chain, private_key=key)
            )
    if replaced.ssh:
        _restore_ssh(applier, opened, outcome.notes)
    audit.record(
        session,
        actor,
        "backup.restore",
        opened.manifest.node_name,
        {
            "fresh": False,
            "users": replaced.users,
            "tls": replaced.tls,
            "ssh": replaced.ssh,
            **_described(opened.manifest),
        },
    )
    return outcome


def _described(manifest: BackupManifest) -> dict[str, object]:
    return {
        "created_at": manifest.created_at.isoformat(),
        "fulcrum_version": manifest.fulcrum_version,
        "schema_revision": manifest.schema_revision,
        "revisions": manifest.includes.revisions,
    }


def apply_restored(sessions: sessionmaker[Session], applier: Applier) -> None:
    """After a first-run restore: make the data plane run the restored running revision, as a
    start-up does (its outcome is in the audit log)."""
    with revision_service.commit_lock, sessions() as session, session.begin():
        revision_service.reapply_running(session, applier)
