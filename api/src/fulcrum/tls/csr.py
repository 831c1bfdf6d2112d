"""A certificate signing request made on the box: the key is generated here and never leaves it
(kept beside the served key, 0600, never returned); the CA's signed certificate is then uploaded
without a key (PUT /tls/certificate), and installed with this pending key if it matches.
A new request replaces the pending one."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from sqlalchemy.orm import Session

from fulcrum.errors import Conflict, NotFound
from fulcrum.schemas.tls import CsrRead, CsrRequest, KeyType
from fulcrum.services import audit
from fulcrum.settings import Settings
from fulcrum.tls.validation import ServerKey, parse_key, write_atomically

PENDING_KEY = "pending.key"
PENDING_CSR = "pending.csr"


@dataclass(frozen=True)
class PendingFiles:
    key: Path
    csr: Path


def pending_files(settings: Settings) -> PendingFiles:
    keyfile = settings.tls_keyfile
    if keyfile is None:
        raise Conflict(
            "this API serves plain HTTP (FULCRUM_TLS_KEYFILE is not set): no certificate to request"
        )
    return PendingFiles(keyfile.with_name(PENDING_KEY), keyfile.with_name(PENDING_CSR))


def new_key(kind: KeyType) -> ServerKey:
    if kind == KeyType.RSA_2048:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == KeyType.RSA_3072:
        return rsa.generate_private_key(public_exponent=65537, key_size=3072)
    if kind == KeyType.EC_P384:
        return ec.generate_private_key(ec.SECP384R1())
    return ec.generate_private_key(ec.SECP256R1())


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def describe(csr: x509.CertificateSigningRequest) -> CsrRead:
    names = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    listed = [
        *names.get_values_for_type(x509.DNSName),
        *(str(ip) for ip in names.get_values_for_type(x509.IPAddress)),
    ]
    return CsrRead(
        subject=csr.subject.rfc4514_string(),
        names=listed,
        csr=csr.public_bytes(serialization.Encoding.PEM).decode(),
    )


def create(session: Session, actor: audit.Actor, settings: Settings, request: CsrRequest) -> CsrRead:
    files = pending_files(settings)
    key = new_key(request.key_type)
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, request.common_name)]
    if request.organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, request.organization))
    if request.country:
        attributes.append(x509.NameAttribute(NameOID.COUNTRY_NAME, request.country))
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name(attributes))
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in request.names]), critical=False)
        .sign(key, hashes.SHA256())
    )
    shown = describe(csr)
    audit.record(
        session, actor, "tls.csr", shown.subject, {"names": shown.names, "key_type": request.key_type.value}
    )
    write_atomically(
        files.key,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        0o600,
    )
    write_atomically(files.csr, csr.public_bytes(serialization.Encoding.PEM), 0o644)
    return shown


def current(settings: Settings) -> CsrRead | None:
    """None: no request is pending (or the API serves plain HTTP)."""
    if settings.tls_keyfile is None:
        return None
    try:
        return describe(x509.load_pem_x509_csr(pending_files(settings).csr.read_bytes()))
    except FileNotFoundError:
        return None


def pending_key_pem(settings: Settings) -> str:
    """The pending request's key, for an upload of the certificate signed for it (no key sent)."""
    files = pending_files(settings)
    try:
        pem = files.key.read_text()
    except FileNotFoundError:
        raise NotFound(
            "no private_key was uploaded and no certificate signing request is pending for one"
        ) from None
    parse_key(pem)
    return pem


def discard(settings: Settings) -> None:
    """The signed certificate was installed with the pending key (now the served one)."""
    files = pending_files(settings)
    files.key.unlink(missing_ok=True)
    files.csr.unlink(missing_ok=True)
