"""The certificate the dashboard and API serve: showing it, and replacing it with an uploaded one
(checked by tls_validation; the HA peer pins it before it is served)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from fulcrum.errors import Conflict
from fulcrum.ha import membership
from fulcrum.ha.runtime import HaRuntime
from fulcrum.schemas.tls import CertificateUpload, ServedCertificate
from fulcrum.services import audit
from fulcrum.settings import Settings
from fulcrum.telemetry.hub import Telemetry
from fulcrum.tls import csr as tls_csr
from fulcrum.tls import expiry as tls_expiry
from fulcrum.tls.validation import CertificateInfo, install, read_served, validate_upload


def served_files(settings: Settings) -> tuple[Path, Path]:
    if settings.tls_certfile is None or settings.tls_keyfile is None:
        raise Conflict(
            "this API serves plain HTTP (FULCRUM_TLS_CERTFILE and FULCRUM_TLS_KEYFILE are not set): "
            "no certificate to show or replace"
        )
    return settings.tls_certfile, settings.tls_keyfile


def as_schema(info: CertificateInfo) -> ServedCertificate:
    return ServedCertificate(
        subject=info.subject,
        issuer=info.issuer,
        names=info.names,
        not_before=info.not_before,
        not_after=info.not_after,
        fingerprint_sha256=info.fingerprint,
        chain_length=info.chain_length,
        self_signed=info.self_signed,
    )


def get_served(settings: Settings) -> ServedCertificate | None:
    """None: the API serves plain HTTP."""
    if settings.tls_certfile is None:
        return None
    return as_schema(read_served(settings.tls_certfile))


def replace_served(
    session: Session, actor: audit.Actor, settings: Settings, runtime: HaRuntime, upload: CertificateUpload
) -> ServedCertificate:
    """Validate, have the HA peer pin it, then install: served from the next connection on."""
    certfile, keyfile = served_files(settings)
    now = datetime.now(UTC)
    from_csr = upload.private_key is None
    key = tls_csr.pending_key_pem(settings) if upload.private_key is None else upload.private_key
    validated = validate_upload(upload.certificate_chain, key, now)
    before = runtime.served_certificate
    membership.pin_on_peer_before_serving(session, runtime, validated.info.fingerprint)
    audit.record(
        session,
        actor,
        "tls.certificate",
        validated.info.subject,
        {
            "fingerprint": validated.info.fingerprint,
            "previous": before,
            "names": validated.info.names,
            "key_from_csr": from_csr,
            "not_after": validated.info.not_after.isoformat(),
        },
    )
    install(validated, certfile, keyfile)
    runtime.served_certificate = validated.info.fingerprint
    if from_csr:
        tls_csr.discard(settings)
    tls_expiry.raise_if_due(
        session, runtime.telemetry, validated.info, now
    )  # one valid for less than 30 days
    return as_schema(validated.info)


def start_expiry_watch(settings: Settings, telemetry: Telemetry) -> asyncio.Task[None] | None:
    """The periodic expiry check of the served certificate (none over plain HTTP)."""
    certfile = settings.tls_certfile
    if certfile is None:
        return None
    return asyncio.create_task(tls_expiry.watch(telemetry, lambda: read_served(certfile)))
