"""The backup's encryption: AES-256-GCM from `cryptography` (OpenSSL), keyed by scrypt from the
admin's passphrase, in fixed-size chunks (the STREAM construction of Hoang, Reyhanitabar, Rogaway
and Vizár, 2015, which age and Tink's streaming AEAD also use).

Why this and not age: `cryptography` is already a dependency of the API (HA pairing, TLS), is
packaged by Debian and Buildroot, and wraps OpenSSL's AES-GCM and scrypt; age would add a binary
or a Rust extension to both images for the same two primitives. Nothing here is a primitive of its
own: only how the two are called.

Layout (all integers big-endian)::

    header   magic "FULCRUMB" | format (1 byte) | scrypt log2(N), r, p (1 byte each)
             | salt (16 bytes) | nonce prefix (7 bytes) | archive length (8 bytes)
    check    the GCM tag of nothing, under the nonce prefix | 0xffffffff | 0x02, the header as
             associated data: a wrong passphrase is told apart from a damaged archive
    chunks   AES-256-GCM of 64 KiB of the archive each (the last one shorter, possibly empty),
             nonce = prefix | chunk counter (4 bytes) | 1 on the last chunk else 0, the header
             as associated data

Every chunk is authenticated with its position and with whether it is the last: chunks cannot be
reordered, dropped or cut off without the decryption failing, and the header (format, KDF
parameters) cannot be changed either. The archive is encrypted and decrypted a chunk at a time,
so neither needs it in memory. The archive's length in the header (the archive is written to a
file before it is encrypted) lets a cut-off upload be named as such rather than as damaged.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from fulcrum.errors import BackupRejected

MAGIC = b"FULCRUMB"
FORMAT = 1
CHUNK = 64 * 1024
TAG = 16
SALT = 16
NONCE_PREFIX = 7
# scrypt at N=2^16, r=8: 64 MiB and about a quarter of a second here; an archive may ask for at
# most N=2^17 (128 MiB), so an upload cannot make the appliance spend more than that before its
# header is authenticated.
LOG_N, R, P = 16, 8, 1
MAX_LOG_N = 17
_HEADER = struct.Struct(f">8sBBBB{SALT}s{NONCE_PREFIX}sQ")
HEADER_SIZE = _HEADER.size
_CHECK_COUNTER = 0xFFFFFFFF
MAX_CHUNKS = _CHECK_COUNTER  # the check's counter is never a chunk's


@dataclass(frozen=True)
class _Header:
    log_n: int
    r: int
    p: int
    salt: bytes
    prefix: bytes
    length: int

    def pack(self) -> bytes:
        return _HEADER.pack(MAGIC, FORMAT, self.log_n, self.r, self.p, self.salt, self.prefix, self.length)

    def encrypted_length(self) -> int:
        """The length of all the chunks: every one a tag longer than its part of the archive."""
        return self.length + (self.length // CHUNK + 1) * TAG


def _key(passphrase: str, header: _Header) -> AESGCM:
    kdf = Scrypt(salt=header.salt, length=32, n=1 << header.log_n, r=header.r, p=header.p)
    return AESGCM(kdf.derive(passphrase.encode()))


def _nonce(prefix: bytes, counter: int, flag: int) -> bytes:
    return prefix + struct.pack(">IB", counter, flag)


def encrypt(source: BinaryIO, length: int, passphrase: str) -> Iterator[bytes]:
    """The encrypted archive of the `length` bytes `source` holds, a chunk at a time; the first
    item (the header) costs the key derivation."""
    header = _Header(LOG_N, R, P, os.urandom(SALT), os.urandom(NONCE_PREFIX), length)
    aad = header.pack()
    aead = _key(passphrase, header)
    yield aad + aead.encrypt(_nonce(header.prefix, _CHECK_COUNTER, 2), b"", aad)
    counter = 0
    chunk = source.read(CHUNK)
    while True:
        following = source.read(CHUNK)
        last = not following
        yield aead.encrypt(_nonce(header.prefix, counter, int(last)), chunk, aad)
        if last:
            return
        counter += 1
        chunk = following


def _read_header(source: BinaryIO) -> tuple[_Header, bytes]:
    raw = source.read(HEADER_SIZE)
    if len(raw) < len(MAGIC) or raw[: len(MAGIC)] != MAGIC:
        raise BackupRejected(
            "this is not a Fulcrum backup (its first bytes are not FULCRUMB)", "not_a_backup"
        )
    if len(raw) < HEADER_SIZE:
        raise BackupRejected("the backup is truncated: it ends inside its header", "truncated")
    _, version, log_n, r, p, salt, prefix, length = _HEADER.unpack(raw)
    if version > FORMAT:
        raise BackupRejected(
            f"the backup's encryption format is {version}, newer than this version of Fulcrum "
            f"understands ({FORMAT}): restore it on the version that made it or a newer one",
            "newer_format",
        )
    if version < 1 or not (10 <= log_n <= MAX_LOG_N) or not (1 <= r <= 16) or not (1 <= p <= 4):
        raise BackupRejected(
            "the backup's header is damaged (impossible key-derivation settings)", "tampered"
        )
    return _Header(log_n, r, p, salt, prefix, length), raw


def decrypt(source: BinaryIO, size: int, passphrase: str, target: BinaryIO) -> None:
    """Write the archive to `target`, or raise BackupRejected saying why it cannot be read:
    wrong passphrase, tampered with, truncated, or a newer format. `size` is the whole upload's.
    `target` may hold a part of the archive when an error is raised: the caller discards it."""
    header, aad = _read_header(source)
    check = source.read(TAG)
    if len(check) < TAG:
        raise BackupRejected("the backup is truncated: it ends inside its header", "truncated")
    missing = HEADER_SIZE + TAG + header.encrypted_length() - size
    if missing > 0:
        raise BackupRejected(f"the backup is truncated: {missing} bytes of it are missing", "truncated")
    if missing < 0:
        raise BackupRejected(f"the backup has {-missing} bytes more than it was made with", "tampered")
    aead = _key(passphrase, header)
    try:
        aead.decrypt(_nonce(header.prefix, _CHECK_COUNTER, 2), check, aad)
    except InvalidTag:
        raise BackupRejected(
            "wrong passphrase: the backup cannot be decrypted with it (or its header was changed)",
            "wrong_passphrase",
        ) from None
    counter = 0
    chunk = source.read(CHUNK + TAG)
    while True:
        following = source.read(CHUNK + TAG)
        last = not following
        try:
            target.write(aead.decrypt(_nonce(header.prefix, counter, int(last)), chunk, aad))
        except InvalidTag:
            raise BackupRejected(
                f"the backup was changed or damaged after it was made (chunk {counter} fails its "
                "authentication); nothing was restored",
                "tampered",
            ) from None
        if last:
            return
        counter += 1
        if counter >= MAX_CHUNKS:
            raise BackupRejected("the backup is longer than the format allows", "tampered")
        chunk = following
