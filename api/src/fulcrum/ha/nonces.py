"""The nonces of accepted peer requests, in the database: a request captured on the wire cannot
be replayed, not even once after the receiving node restarts."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.orm import Session

from fulcrum.ha import clock
from fulcrum.models.ha import PeerNonce


class StoredNonces:
    """A peer_auth.NonceStore in the request's own transaction (a write transaction: see
    routers.peer). Only requests with a valid signature get here, so the table holds at most the
    peer's real traffic of the last minute or so; expired rows go as new ones come."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def first_use(self, nonce: str, until: float) -> bool:
        now = clock.now()
        self.session.execute(delete(PeerNonce).where(PeerNonce.expires_at < now))
        if self.session.get(PeerNonce, nonce) is not None:
            return False
        self.session.add(PeerNonce(nonce=nonce, expires_at=until))
        self.session.flush()
        return True
