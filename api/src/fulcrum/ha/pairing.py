"""Pairing two nodes: a one-time code shown on one (B), typed into the other (A).

A and B run an X25519 exchange. Each side proves it knows the code with an HMAC over the whole
transcript so far, keyed with the code's hash, so a man in the middle without the code can neither
pose as B nor swap the public keys; the pair key is HKDF(shared secret, salt=code hash,
info="fulcrum pair v2"). The code is 12 characters from a 32-letter alphabet (60 bits), lives 10
minutes, is used once, and is burnt after 10 wrong tries: the chance that guessing ever pairs is
10 in 2^60, so the worst anyone who reaches the port can do is burn the code. Not even that from
one address: each source address gets 3 wrong tries per code, then 429 (the exchange is not
even tried), so burning it takes several addresses. Only its hash is stored; the exchange is
keyed with that hash, so the code is never needed again after it is shown.

The offer also carries the fingerprint (SHA-256) of the TLS certificate A serves and of the one B
presented to A, so both are covered by the MACs: B refuses when A saw another certificate than
the one B serves (something terminates TLS between them), and each side pins the other's
(fulcrum.ha.tls). Over plain HTTP (the lab) both are absent.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from sqlalchemy.orm import Session

from fulcrum.models._types import utcnow
from fulcrum.models.ha import HaPairing, HaPairingCode

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no I, O, 0, 1: nothing to misread
CODE_LENGTH = 12
CODE_LIFETIME = timedelta(minutes=10)
MAX_FAILURES = 10
FAILURES_PER_SOURCE = 3
PROTOCOL = "fulcrum pair v2"  # v2: the certificates in the offer


class PairingRefused(Exception):
    """The other side did not prove it knows the code, or no valid code exists."""


class SourceLimited(PairingRefused):
    """This source address used up its wrong tries for the code on offer."""


def new_code() -> str:
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return "-".join(raw[i : i + 4] for i in range(0, CODE_LENGTH, 4))


def normalize(code: str) -> str:
    return "".join(code.split()).replace("-", "").upper()


def code_key(code: str) -> bytes:
    return hashlib.sha256(f"{PROTOCOL} code\n{normalize(code)}".encode()).digest()


def _mac(key: bytes, transcript: str) -> str:
    return hmac.new(key, transcript.encode(), hashlib.sha256).hexdigest()


# --- the exchange ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """A's first message."""

    node: str
    url: str
    certificate: str | None  # SHA-256 of the certificate A serves at url; None over plain HTTP
    peer_certificate: str | None  # of the one B presented to A; None over plain HTTP
    public_key: str  # X25519, 32 bytes hex
    nonce: str

    def transcript(self) -> str:
        certificates = (self.certificate or "-", self.peer_certificate or "-")
        return "\n".join((PROTOCOL, "offer", self.node, self.url, *certificates, self.public_key, self.nonce))


@dataclass(frozen=True)
class Answer:
    """B's reply."""

    node: str
    public_key: str
    nonce: str

    def transcript(self, offer: Offer) -> str:
        return "\n".join((offer.transcript(), "answer", self.node, self.public_key, self.nonce))


def make_offer(
    node: str, url: str, certificate: str | None = None, peer_certificate: str | None = None
) -> tuple[Offer, X25519PrivateKey]:
    private = X25519PrivateKey.generate()
    return Offer(
        node, url, certificate, peer_certificate, _public_hex(private), secrets.token_hex(16)
    ), private


def offer_mac(key: bytes, offer: Offer) -> str:
    return _mac(key, offer.transcript())


def answer_mac(key: bytes, offer: Offer, answer: Answer) -> str:
    return _mac(key, answer.transcript(offer))


def answer_offer(key: bytes, offer: Offer, mac: str, node: str) -> tuple[Answer, str, bytes]:
    """B: check A's proof of the code; return the answer, its MAC and the pair key."""
    if not hmac.compare_digest(offer_mac(key, offer), mac):
        raise PairingRefused("the pairing code is wrong")
    private = X25519PrivateKey.generate()
    answer = Answer(node, _public_hex(private), secrets.token_hex(16))
    return answer, answer_mac(key, offer, answer), _derive(private, offer.public_key, key)


def accept_answer(key: bytes, offer: Offer, private: X25519PrivateKey, answer: Answer, mac: str) -> bytes:
    """A: check B's proof of the code; return the pair key."""
    if not hmac.compare_digest(answer_mac(key, offer, answer), mac):
        raise PairingRefused(
            "the peer's answer does not prove it knows the code; is something between the nodes?"
        )
    return _derive(private, answer.public_key, key)


def _public_hex(private: X25519PrivateKey) -> str:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def _derive(private: X25519PrivateKey, peer_public_hex: str, key: bytes) -> bytes:
    try:
        shared = private.exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(peer_public_hex)))
    except ValueError as error:  # malformed or low-order public key
        raise PairingRefused(f"the public key is not usable: {error}") from None
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=key, info=PROTOCOL.encode()).derive(shared)


# --- what is stored ----------------------------------------------------------------------------


def current_pairing(session: Session) -> HaPairing | None:
    return session.get(HaPairing, 1)


def store_pairing(
    session: Session,
    peer_name: str,
    peer_url: str,
    key: bytes,
    initiator: bool,
    peer_certificate: str | None,
    own_certificate: str | None,
) -> HaPairing:
    row = HaPairing(
        id=1, peer_name=peer_name, peer_url=peer_url, key=key.hex(), initiator=initiator,
        peer_certificate=peer_certificate, announced_certificate=own_certificate,
    )  # fmt: skip
    session.add(row)
    session.flush()
    return row


def forget_pairing(session: Session) -> HaPairing | None:
    row = current_pairing(session)
    if row is not None:
        session.delete(row)
        session.flush()
    return row


def issue_code(session: Session, now: datetime | None = None) -> tuple[str, datetime]:
    """A new code, replacing any earlier one."""
    code = new_code()
    expires = (now or utcnow()) + CODE_LIFETIME
    row = session.get(HaPairingCode, 1) or HaPairingCode(id=1)
    row.code_hash = code_key(code).hex()
    row.expires_at = expires
    row.failures = 0
    row.failures_by_source = {}
    session.add(row)
    session.flush()
    return code, expires


def live_code_key(session: Session, source: str, now: datetime | None = None) -> bytes:
    """The key of the code on offer, or PairingRefused if none is valid (SourceLimited if it is,
    but not for tries from `source` any more)."""
    row = session.get(HaPairingCode, 1)
    if row is None:
        raise PairingRefused("this node shows no pairing code; create one on it first")
    if row.expires_at <= (now or utcnow()):
        raise PairingRefused("the pairing code has expired; create a new one")
    if row.failures >= MAX_FAILURES:
        raise PairingRefused(f"the pairing code was burnt after {MAX_FAILURES} wrong tries; create a new one")
    if row.failures_by_source.get(source, 0) >= FAILURES_PER_SOURCE:
        raise SourceLimited(
            f"{FAILURES_PER_SOURCE} wrong pairing codes came from {source}: no more tries from there "
            "for this code; create a new one"
        )
    return bytes.fromhex(row.code_hash)


def code_failed(session: Session, source: str) -> int:
    """Count a wrong try from `source`; returns the tries left from there."""
    row = session.get(HaPairingCode, 1)
    if row is None:
        return 0
    row.failures += 1
    tries = row.failures_by_source.get(source, 0) + 1
    row.failures_by_source = {
        **row.failures_by_source,
        source: tries,
    }  # a new dict: JSON columns track assignment
    session.flush()
    return max(0, min(MAX_FAILURES - row.failures, FAILURES_PER_SOURCE - tries))


def burn_code(session: Session) -> None:
    row = session.get(HaPairingCode, 1)
    if row is not None:
        session.delete(row)
        session.flush()


def pin_peer_certificate(session: Session, certificate: str) -> HaPairing | None:
    """The peer announced a renewed certificate (in a signed request): pin it."""
    row = current_pairing(session)
    if row is not None:
        row.peer_certificate = certificate
        session.flush()
    return row


def certificate_announced(session: Session, certificate: str) -> None:
    row = current_pairing(session)
    if row is not None:
        row.announced_certificate = certificate
        session.flush()
