"""Making a backup: the archive is written to a temporary file, then streamed out encrypted."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier, ApplierError
from fulcrum.backup import archive, crypto
from fulcrum.schemas.backup import BackupRequest
from fulcrum.services import audit
from fulcrum.services.candidate import node_settings
from fulcrum.settings import Settings


def export(
    session: Session, actor: audit.Actor, settings: Settings, applier: Applier, request: BackupRequest
) -> tuple[str, Iterator[bytes]]:
    """The backup's file name and its encrypted bytes. Recorded in the audit log, with what it
    includes and never the passphrase."""
    node = str(node_settings(session).get("name", "fulcrum"))
    skipped: list[str] = []
    host_keys = _ssh_host_keys(applier, skipped)
    # Closed by the stream when the response ends, not by a with block here.
    plain = tempfile.TemporaryFile(prefix="fulcrum-backup-")  # noqa: SIM115
    try:
        manifest = archive.write(settings, node, request.include_pair_key, plain, host_keys, skipped)
        size = plain.tell()
        plain.seek(0)
        chunks = crypto.encrypt(plain, size, request.passphrase)
        header = next(chunks)  # the key derivation, before the response starts
    except BaseException:
        plain.close()
        raise
    audit.record(
        session, actor, "backup.export", node, {"includes": manifest.includes.model_dump(), "bytes": size}
    )

    def stream() -> Iterator[bytes]:
        try:
            yield header
            yield from chunks
        finally:
            plain.close()

    return f"fulcrum-{node}-{manifest.created_at:%Y%m%d-%H%M%S}.fbk", stream()


def _ssh_host_keys(applier: Applier, skipped: list[str]) -> dict[str, bytes]:
    """sshd's host keys belong to root: the privileged helper reads them."""
    try:
        keys = applier.ssh_host_keys()
    except ApplierError as error:
        skipped.append(f"SSH host keys: the apply helper did not hand them over ({error})")
        return {}
    return {name: text.encode("ascii") for name, text in keys.files.items()}
