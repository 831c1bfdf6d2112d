"""Checking an uploaded certificate chain and key, and writing them in place.

An upload is a PEM chain (the server's certificate first, then each intermediate, each issued by
the next) and the PEM private key of the first. Every check an admin would otherwise discover in a
browser's error page is made here, before anything is written, and reported as a 422 naming the
field: the PEM parses, the key is unencrypted and of a kind browsers accept, it belongs to the
certificate, the chain is in order, nothing in it is expired or not yet valid, the certificate is
for a server (not a CA, serverAuth if it restricts its use) and names the box by subject
alternative names (browsers ignore the common name). The files are replaced atomically; the
server (fulcrum.serve) loads them on its next TLS connection.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from fulcrum.errors import ConfigInvalid

MIN_RSA_BITS = 2048
ACCEPTED_CURVES = (ec.SECP256R1, ec.SECP384R1, ec.SECP521R1)  # the curves browsers negotiate
MAX_CHAIN_LENGTH = 8
CHAIN_FIELD = "certificate_chain"
KEY_FIELD = "private_key"

ServerKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def invalid(field: str, message: str) -> ConfigInvalid:
    return ConfigInvalid([{"loc": ["body", field], "msg": message, "type": "value_error"}])


@dataclass(frozen=True)
class CertificateInfo:
    subject: str
    issuer: str
    names: list[str]
    not_before: datetime
    not_after: datetime
    fingerprint: str  # SHA-256 of the DER, as the HA peer pins it
    chain_length: int
    self_signed: bool


def describe(chain: list[x509.Certificate]) -> CertificateInfo:
    leaf = chain[0]
    return CertificateInfo(
        subject=leaf.subject.rfc4514_string(),
        issuer=leaf.issuer.rfc4514_string(),
        names=subject_alternative_names(leaf),
        not_before=leaf.not_valid_before_utc,
        not_after=leaf.not_valid_after_utc,
        fingerprint=hashlib.sha256(leaf.public_bytes(serialization.Encoding.DER)).hexdigest(),
        chain_length=len(chain),
        self_signed=leaf.issuer == leaf.subject,
    )


def subject_alternative_names(certificate: x509.Certificate) -> list[str]:
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    names = extension.value
    return [
        *names.get_values_for_type(x509.DNSName),
        *(str(ip) for ip in names.get_values_for_type(x509.IPAddress)),
    ]


def read_served(certfile: Path) -> CertificateInfo:
    return describe(x509.load_pem_x509_certificates(certfile.read_bytes()))


def parse_chain(pem: str) -> list[x509.Certificate]:
    if "-----BEGIN CERTIFICATE-----" not in pem:
        raise invalid(
            CHAIN_FIELD, "no PEM certificate found: paste the server's certificate, then any intermediates"
        )
    try:
        chain = x509.load_pem_x509_certificates(pem.encode())
    except ValueError as error:
        raise invalid(CHAIN_FIELD, f"a certificate in the chain is not valid PEM: {error}") from None
    if len(chain) > MAX_CHAIN_LENGTH:
        raise invalid(
            CHAIN_FIELD, f"the chain has {len(chain)} certificates; at most {MAX_CHAIN_LENGTH} are served"
        )
    return chain


def parse_key(pem: str) -> ServerKey:
    if "PRIVATE KEY-----" not in pem:
        raise invalid(KEY_FIELD, "no PEM private key found")
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except TypeError:
        raise invalid(KEY_FIELD, "the private key is encrypted: upload it without a passphrase") from None
    except ValueError:
        raise invalid(KEY_FIELD, "the private key is not a valid PEM RSA or EC key") from None
    except Exception:  # noqa: BLE001  cryptography raises UnsupportedAlgorithm and others for odd key types
        raise invalid(KEY_FIELD, "the private key is of a type this appliance does not serve") from None
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < MIN_RSA_BITS:
            raise invalid(
                KEY_FIELD, f"an RSA key of {key.key_size} bits is too weak: at least {MIN_RSA_BITS}"
            )
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey):
        if not isinstance(key.curve, ACCEPTED_CURVES):
            raise invalid(
                KEY_FIELD, f"EC curve {key.curve.name} is not one browsers accept: use P-256, P-384 or P-521"
            )
        return key
    raise invalid(
        KEY_FIELD,
        f"a {type(key).__name__.removeprefix('_')} key is not served: "
        f"use RSA ({MIN_RSA_BITS} bits or more) or EC",
    )


def public_der(key: Any) -> bytes:
    spki = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return bytes(spki)


def check_chain(chain: list[x509.Certificate], key: ServerKey, now: datetime) -> None:
    leaf = chain[0]
    if public_der(leaf.public_key()) != public_der(key.public_key()):
        matching = [
            i
            for i, c in enumerate(chain[1:], start=2)
            if public_der(c.public_key()) == public_der(key.public_key())
        ]
        if matching:  # the key is right, the chain is out of order
            raise invalid(
                CHAIN_FIELD,
                "the private key does not belong to the first certificate of the chain "
                f"(it belongs to certificate {matching[0]} "
                "of the chain): put the server's certificate first",
            )
        raise invalid(KEY_FIELD, "the private key does not belong to the first certificate of the chain")
    for position, (certificate, issuer) in enumerate(itertools.pairwise(chain), start=1):
        try:
            certificate.verify_directly_issued_by(issuer)
        except (ValueError, TypeError, InvalidSignature):
            raise invalid(
                CHAIN_FIELD,
                f"certificate {position} ({certificate.subject.rfc4514_string()}) "
                f"is not issued by certificate {position + 1} "
                f"({issuer.subject.rfc4514_string()}): order the chain server first, then each issuer",
            ) from None
    for position, certificate in enumerate(chain, start=1):
        name = certificate.subject.rfc4514_string()
        if certificate.not_valid_after_utc <= now:
            raise invalid(
                CHAIN_FIELD,
                f"certificate {position} ({name}) expired on {certificate.not_valid_after_utc.isoformat()}",
            )
        if certificate.not_valid_before_utc > now:
            raise invalid(
                CHAIN_FIELD,
                f"certificate {position} ({name}) is not valid before "
                f"{certificate.not_valid_before_utc.isoformat()}",
            )
    check_server_use(leaf)


def check_server_use(leaf: x509.Certificate) -> None:
    try:
        if leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            raise invalid(CHAIN_FIELD, "the first certificate is a CA certificate, not a server's")
    except x509.ExtensionNotFound:
        pass
    try:
        usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = None
    if usages is not None and ExtendedKeyUsageOID.SERVER_AUTH not in usages:
        raise invalid(
            CHAIN_FIELD,
            "the first certificate's extended key usage does not include TLS server authentication",
        )
    if not subject_alternative_names(leaf):
        raise invalid(
            CHAIN_FIELD,
            "the first certificate names no host in subject alternative names (DNS or IP): "
            "browsers ignore the common name",
        )


@dataclass(frozen=True)
class ValidatedUpload:
    chain_pem: bytes
    key_pem: bytes
    info: CertificateInfo


def validate_upload(chain_pem: str, key_pem: str, now: datetime | None = None) -> ValidatedUpload:
    chain = parse_chain(chain_pem)
    key = parse_key(key_pem)
    check_chain(chain, key, now or datetime.now(UTC))
    # Written back canonically: only the certificates and the key, nothing else that was pasted.
    chain_out = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    key_out = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ValidatedUpload(chain_out, key_out, describe(chain))


def write_atomically(path: Path, content: bytes, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(descriptor, mode)
        os.write(descriptor, content)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def install(upload: ValidatedUpload, certfile: Path, keyfile: Path) -> None:
    """Key first, then the certificate: the server reloads when the certificate changes, and a
    reload that finds a key not matching it keeps serving what it had (fulcrum.serve)."""
    write_atomically(keyfile, upload.key_pem, 0o600)
    write_atomically(certfile, upload.chain_pem, 0o644)
    directory = os.open(certfile.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
