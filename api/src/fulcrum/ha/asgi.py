"""ASGI middleware that signs the answer to every authenticated peer request.

The peer endpoints' signature check leaves (key, request nonce) in the request state; whatever
the endpoint or the error handler then answers is buffered, signed over status, nonce and body,
and sent with X-Fulcrum-Signature. Unauthenticated requests get unsigned answers.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fulcrum.ha.peer_auth import SIGNATURE, response_signature

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
            signing = scope.get("state", {}).get(STATE_KEY)
            if signing is not None:
                key, nonce = signing
                headers = list(start.get("headers", []))
                headers.append((SIGNATURE.lower().encode(), response_signature(key, start["status"], nonce, body).encode()))
                start["headers"] = headers
            await send(start)
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send=buffered)
