"""What a poll of the peer costs when nothing changes: over plain HTTP (the lab) no TLS state is
built per request. httpx's default context loads the CA bundle, which made over half of an idle
paired node's CPU when every poll (one each 2 s) built one."""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fulcrum.ha.peer_client import PeerAuthFailed, PeerClient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package
from lab.serving import serving  # noqa: E402


class _Unsigned(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def peer_url() -> Iterator[str]:
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), _Unsigned)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_polls_over_plain_http_build_no_tls_context_each(peer_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    original = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(args)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    client = PeerClient(peer_url, "lb1", b"k" * 32, pin=None)
    for _ in range(5):
        with pytest.raises(PeerAuthFailed, match="refused this node's signature"):
            client.get("/status")  # a real request, answered (401, unsigned) by the server above
    assert len(built) <= 1, f"{len(built)} TLS contexts built for 5 plain-HTTP polls"
