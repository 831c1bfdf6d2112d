"""ASGI middleware that dates every answer of the peer endpoints and signs the answer to every
authenticated peer request.

Every answer carries X-Fulcrum-Time, this node's clock as it answers (the peer measures the skew
between the clocks from it, a refusal included). The peer endpoints' signature check leaves
(key, request nonce) in the request state; whatever the endpoint or the error handler then
answers is buffered, signed over status, nonce, time and body, and sent with X-Fulcrum-Signature.
Unauthenticated requests get unsigned answers.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fulcrum.ha import clock
from fulcrum.ha.peer_auth import SIGNATURE, TIME, response_signature

STATE_KEY = "fulcrum_peer_signing"


class SignPeerResponses:
    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        chunks: list[bytes] = []

        async def buffered(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = dict(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            assert start is not None
            body = b"".join(chunks)
            answered = f"{clock.now():.3f}"
            headers = [*start.get("headers", []), (TIME.lower().encode(), answered.encode())]
            signing = scope.get("state", {}).get(STATE_KEY)
            if signing is not None:
                key, nonce = signing
                headers.append(
                    (
                        SIGNATURE.lower().encode(),
                        response_signature(key, start["status"], nonce, answered, body).encode(),
                    )
                )
            start["headers"] = headers
            await send(start)
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, buffered)
