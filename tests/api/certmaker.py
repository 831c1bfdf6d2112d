"""Real certificates for the TLS tests, made with `cryptography`: a root, an intermediate and
server certificates with any validity, names and key."""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

ServerKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ServerKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def pem(*certificates: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


@dataclass
class Issued:
    certificate: x509.Certificate
    key: ServerKey


def issue(
    name: str,
    issuer: Issued | None = None,
    *,
    ca: bool = False,
    names: list[str] | None = None,
    key: ServerKey | None = None,
    not_before: datetime | None = None,
    not_after: datetime | None = None,
) -> Issued:
    key = key or new_key()
    now = datetime.now(UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.certificate.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - timedelta(minutes=5))
        .not_valid_after(not_after or now + timedelta(days=90))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        alternative: list[x509.GeneralName] = []
        for entry in names:
            try:
                alternative.append(x509.IPAddress(ipaddress.ip_address(entry)))
            except ValueError:
                alternative.append(x509.DNSName(entry))
        builder = builder.add_extension(x509.SubjectAlternativeName(alternative), critical=False)
    return Issued(builder.sign(issuer.key if issuer else key, hashes.SHA256()), key)


def chain(server_names: list[str] | None = None) -> tuple[Issued, Issued, Issued]:
    """A root, an intermediate it issued, and a server certificate the intermediate issued."""
    root = issue("Test Root", ca=True)
    intermediate = issue("Test Intermediate", root, ca=True)
    server = issue("lb.example.net", intermediate, names=server_names or ["lb.example.net", "127.0.0.1"])
    return root, intermediate, server


def server_context(server: Issued, *intermediates: Issued) -> ssl.SSLContext:
    """A TLS server's context presenting `server` (and the intermediates after it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:  # load_cert_chain reads only files
        chain_file, key_file = Path(directory, "chain.pem"), Path(directory, "key.pem")
        chain_file.write_text(pem(server.certificate, *(i.certificate for i in intermediates)))
        key_file.write_text(key_pem(server.key))
        context.load_cert_chain(chain_file, key_file)
    return context
