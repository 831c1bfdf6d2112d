"""The support bundle: one tar.gz an admin downloads and sends to whoever helps them.

It holds versions, the rendered configuration files, the running revision, recent logs, the IPVS
table with counters (the `ipvsadm -Ln --stats` view, from the helper's netlink reader), the HA
status and the last apply results. Secrets are removed from every file of it: each secret this
node stores (the HA pair key, alert channel secrets such as the SMTP password and the webhook
key, password and token hashes) is replaced wherever it appears, and so is any `auth_pass`.
"""

from __future__ import annotations

import io
import json
import platform
import re
import subprocess
import tarfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum import __version__
from fulcrum.apply.client import Applier
from fulcrum.dataplane.ipvs_table import IpvsTable, endpoint
from fulcrum.models import AlertChannel, AuthToken, Revision, User
from fulcrum.models.ha import HaPairing, HaPairingCode
from fulcrum.schemas.logs import LogPage
from fulcrum.services import journal, revisions

REDACTED = "[redacted]"
RECENT_REVISIONS = 10
RECENT_LOG_ENTRIES = 2000
VERSION_COMMANDS = {
    "keepalived": ["keepalived", "--version"],
    "nftables": ["nft", "--version"],
    "ipvsadm": ["ipvsadm", "--version"],
}
AUTH_PASS = re.compile(r"(auth_pass\s+)\S+")


def build(
    session: Session,
    applier: Applier,
    ha_status: dict[str, Any],
    config_files: Iterable[Path],
    journal_directory: Path | None,
) -> bytes:
    members: dict[str, str] = {
        "versions.json": _json(_versions(applier)),
        "ha-status.json": _json(ha_status),
        "revisions.json": _json(_recent_revisions(session)),
        "ipvs.txt": _ipvs(applier),
        "logs.txt": _logs(journal_directory),
    }
    running = revisions.snapshot_of(revisions.running(session))
    if running is not None:
        members["config/running-revision.json"] = json.dumps(running.model_dump(mode="json"), indent=2)
    for path in config_files:
        try:
            members[f"config/{path.name}"] = path.read_text(errors="replace")
        except OSError as error:
            members[f"config/{path.name}.missing"] = f"{path}: {error.strerror or error}\n"
    secrets = _secrets(session)
    return _tar({name: redact(text, secrets) for name, text in members.items()})


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):  # a secret inside another goes with it
        text = text.replace(secret, REDACTED)
    return AUTH_PASS.sub(rf"\g<1>{REDACTED}", text)


def _secrets(session: Session) -> set[str]:
    found = {
        *session.scalars(select(HaPairing.key)),
        *session.scalars(select(HaPairingCode.code_hash)),
        *session.scalars(select(AlertChannel.secret).where(AlertChannel.secret.is_not(None))),
        *session.scalars(select(User.password_hash)),
        *session.scalars(select(AuthToken.token_hash)),
    }
    return {secret for secret in found if secret and len(secret) >= 4}


def _versions(applier: Applier) -> dict[str, Any]:
    versions: dict[str, Any] = {
        "fulcrum": __version__,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "generated_at": datetime.now(UTC).isoformat(),
    }
    for name, command in VERSION_COMMANDS.items():
        try:
            done = subprocess.run(command, capture_output=True, timeout=5, check=False)
            versions[name] = (done.stdout or done.stderr).decode(errors="replace").strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError) as error:
            versions[name] = f"unknown: {error}"
    try:
        versions["dataplane"] = applier.status().model_dump(mode="json")
    except Exception as error:  # noqa: BLE001 (a helper that is down is part of what the bundle shows)
        versions["dataplane"] = f"the apply helper did not answer: {error}"
    return versions


def _recent_revisions(session: Session) -> list[dict[str, Any]]:
    rows = session.scalars(select(Revision).order_by(Revision.number.desc()).limit(RECENT_REVISIONS))
    return [
        {
            "number": row.number,
            "created_at": row.created_at.isoformat(),
            "author": row.author,
            "message": row.message,
            "state": row.state,
            "apply_result": row.apply_result,
        }
        for row in rows
    ]


def _ipvs(applier: Applier) -> str:
    try:
        stats = applier.stats()
    except Exception as error:  # noqa: BLE001 (as above)
        return f"the apply helper did not answer: {error}\n"
    if stats.table is None:
        return f"IPVS unavailable: {stats.ipvs_detail}\n"
    return f"{stats.ipvs_detail}\n" + ipvsadm_stats(stats.table)


def ipvsadm_stats(table: IpvsTable) -> str:
    """The table as `ipvsadm -Ln --stats` prints it (totals; bytes and packets in full)."""
    lines = [
        "Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes",
        "  -> RemoteAddress:Port",
    ]
    for service in table.services:
        key = service.key
        where = (
            f"FWM  {key.fwmark}"
            if key.fwmark is not None
            else (f"{(key.protocol or '').upper():<4} {endpoint(key.address or '', key.port or 0)}")
        )
        lines.append(f"{where:<33} {_counts(service.counters)}  {service.scheduler}")
        for server in service.real_servers:
            name = f"  -> {endpoint(server.address, server.port)}"
            lines.append(f"{name:<33} {_counts(server.counters)}  {server.forwarding} weight {server.weight}")
    return "\n".join(lines) + "\n"


def _counts(counters: Any) -> str:
    if counters is None:
        return ""
    return (
        f"{counters.conns:>8} {counters.inpkts:>8} {counters.outpkts:>8} "
        f"{counters.inbytes:>8} {counters.outbytes:>8}"
    )


def _logs(directory: Path | None) -> str:
    page: LogPage = journal.read(directory, journal.LogQuery(limit=RECENT_LOG_ENTRIES))
    if not page.available:
        return f"{page.reason}\n"
    return journal.as_text(reversed(page.entries))


def _json(document: Any) -> str:
    return json.dumps(document, indent=2, default=str) + "\n"


def _tar(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"fulcrum-support/{name}")
            info.size, info.mtime, info.mode = len(data), now, 0o600
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
