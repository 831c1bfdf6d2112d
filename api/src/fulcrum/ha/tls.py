"""TLS on the peer link: the certificate this node serves, and connections that accept only the
peer's pinned certificate.

Appliances serve self-signed certificates, so no CA can vouch for the peer. Instead each node
sends the SHA-256 of its certificate (DER) inside the authenticated pairing transcript, and every
later connection to the peer checks the certificate it presents against that pin right after the
handshake, before a byte of the request (password hashes, the whole configuration) is sent. A
chain to a CA and the host name are not checked: the pin is stricter than both.
"""

from __future__ import annotations

import hashlib
import ssl
from pathlib import Path

PEM_BEGIN = "-----BEGIN CERTIFICATE-----"
PEM_END = "-----END CERTIFICATE-----"


def fingerprint(der: bytes) -> str:
    return hashlib.sha256(der).hexdigest()


def served_fingerprint(certfile: Path | None) -> str | None:
    """The fingerprint of the certificate the API serves: the first one of its PEM file (the
    leaf; any chain follows it). None when the API serves plain HTTP (no file set)."""
    if certfile is None:
        return None
    pem = certfile.read_text()
    start = pem.find(PEM_BEGIN)
    end = pem.find(PEM_END, start)
    if start < 0 or end < 0:
        raise ValueError(f"{certfile} holds no PEM certificate")
    return fingerprint(ssl.PEM_cert_to_DER_cert(pem[start : end + len(PEM_END)]))


class CertificateNotPinned(ssl.SSLCertVerificationError):
    """The peer presented a certificate other than the pinned one."""

    def __init__(self, presented: str | None, pinned: str) -> None:
        super().__init__(f"certificate SHA-256 {presented} is not the pinned {pinned}")
        self.presented = presented
        self.pinned = pinned


class _CheckedSocket(ssl.SSLSocket):
    def do_handshake(self, block: bool = False) -> None:
        super().do_handshake(block)
        context = self.context
        assert isinstance(context, PeerContext)
        der = self.getpeercert(binary_form=True)
        context.presented = fingerprint(der) if der else None
        if context.pin is not None and context.presented != context.pin:
            raise CertificateNotPinned(context.presented, context.pin)


class PeerContext(ssl.SSLContext):
    """A client context whose connections fail unless the server presents the pinned certificate
    (pin None: any certificate, recorded in `presented`; only pairing connects like that)."""

    sslsocket_class = _CheckedSocket
    pin: str | None
    presented: str | None


def peer_context(pin: str | None) -> PeerContext:
    context = PeerContext(ssl.PROTOCOL_TLS_CLIENT)
    # No CA can vouch for a self-signed appliance: the pin, checked after the handshake, does.
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.pin = pin
    context.presented = None
    return context


def not_pinned(error: BaseException) -> CertificateNotPinned | None:
    """The pin refusal behind a connection error (httpx and httpcore wrap it), if it is one."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, CertificateNotPinned):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
