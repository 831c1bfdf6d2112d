"""A node's part in its peer's pair upgrade (fulcrum.ha.pair_upgrade drives it from the active
node): take the bundle the peer streams, checked exactly like an admin's upload (`rauc info`
against this node's own keyring and compatible string), then install it and restart when the peer
says so, through the same firmware services as the node's own dashboard.

A bundle is too large to hold for the usual signature over the whole body, so the peer signs the
SHA-256 it declares (fulcrum.ha.peer_auth.CONTENT_SHA256): the signature is checked before the
body is read, the body against the declared SHA-256 once it is in, and nothing is kept unless both
hold.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from fulcrum.errors import Unauthorized
from fulcrum.ha.nonces import StoredNonces
from fulcrum.ha.peer_auth import PeerAuthError, SignedHeaders, remember_nonce
from fulcrum.schemas.firmware import FirmwareBundle
from fulcrum.services import audit, firmware
from fulcrum.settings import Settings


def accept_streamed_bundle(
    session: Session,
    actor: audit.Actor,
    settings: Settings,
    signed: SignedHeaders,
    declared_sha256: str,
    upload: firmware.Upload,
) -> FirmwareBundle:
    """Keep the peer's bundle as this node's waiting one, if it is what the peer signed and RAUC
    accepts it; else delete it and refuse."""
    if upload.sha256 != declared_sha256:
        upload.path.unlink(missing_ok=True)
        raise Unauthorized(
            "peer request refused: the bundle that arrived is not the one the peer signed (its SHA-256 "
            f"is {upload.sha256}, the signed one {declared_sha256}): altered or cut short on the way"
        )
    # RAUC checks it before any write: the database is not held while `rauc info` reads the bundle.
    bundle = firmware.accept(session, actor, settings, upload)
    try:
        # A replay can only bring the very bundle the peer signed, which is then kept already.
        remember_nonce(StoredNonces(session), signed)
    except PeerAuthError as error:
        raise Unauthorized(f"peer request refused: {error}") from None
    return bundle
