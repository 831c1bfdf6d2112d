"""The appliance's HTTPS server: uvicorn serving the API, with a certificate that can be replaced
while it runs (`python -m fulcrum.serve`, fulcrum-api.service).

uvicorn loads its certificate once, into one SSLContext. Here that context gets an SNI callback,
which OpenSSL calls on every handshake (with server_name None when the client sends none): when the
certificate file changed since it was last loaded, a fresh context is built from the files and the
connection is switched to it, so an uploaded certificate is served from the next connection on with
no restart and no dropped connection. A pair of files that does not load (the key not yet replaced,
say) keeps the previous context serving and is tried again on the next handshake.
"""

from __future__ import annotations

import argparse
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

log = logging.getLogger("fulcrum.serve")

FileStamp = tuple[int, int, int]  # inode, size, mtime in ns: os.replace always changes the inode


def stamp(path: Path) -> FileStamp | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


class ReloadingContext:
    """Holds the context connections are served with; replaces it when the files change."""

    def __init__(self, build: Callable[[], ssl.SSLContext], certfile: Path, keyfile: Path) -> None:
        self._build = build
        self._files = (certfile, keyfile)
        self._lock = threading.Lock()
        self._stamps = self._current_stamps()
        self.current = build()
        self.current.sni_callback = self._on_handshake

    def _current_stamps(self) -> tuple[FileStamp | None, ...]:
        return tuple(stamp(path) for path in self._files)

    def refresh(self) -> ssl.SSLContext:
        with self._lock:
            stamps = self._current_stamps()
            if stamps != self._stamps:
                try:
                    fresh = self._build()
                except (OSError, ssl.SSLError) as error:
                    log.warning(
                        "the new TLS certificate does not load yet; still serving the previous one: %s", error
                    )
                else:
                    fresh.sni_callback = self._on_handshake
                    self.current, self._stamps = fresh, stamps
                    log.info("serving the new TLS certificate from %s", self._files[0])
            return self.current

    def _on_handshake(
        self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, context: ssl.SSLContext
    ) -> None:
        current = self.refresh()
        if current is not context:
            connection.context = current


def reloading_factory(
    certfile: Path, keyfile: Path
) -> Callable[[uvicorn.Config, Callable[[], ssl.SSLContext]], ssl.SSLContext]:
    def factory(config: uvicorn.Config, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return ReloadingContext(default, certfile, keyfile).current

    return factory


def config(
    app: Any, host: str, port: int, certfile: Path | None, keyfile: Path | None, **options: Any
) -> uvicorn.Config:
    """uvicorn's configuration for `app` (an ASGI app or an import string), over HTTPS with a
    reloading certificate when `certfile` is set."""
    factory = reloading_factory(certfile, keyfile or certfile) if certfile is not None else None
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        ssl_context_factory=factory,
        **options,
    )


def listening_socket(host: str, port: int) -> socket.socket:
    """The listener for `host`: "::" is both families on one socket (IPV6_V6ONLY off; asyncio and
    uvicorn would make it IPv6 only), or IPv4's 0.0.0.0 alone where IPv6 is off in this kernel."""
    if host != "::":
        return _bound(socket.AF_INET6 if ":" in host else socket.AF_INET, host, port)
    try:
        return _bound(socket.AF_INET6, host, port, dual_stack=True)
    except OSError as error:
        log.warning("no IPv6 here (%s): listening on IPv4 only", error)
        return _bound(socket.AF_INET, "0.0.0.0", port)  # noqa: S104 -- "::" asked for every address


def _bound(family: socket.AddressFamily, host: str, port: int, *, dual_stack: bool = False) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if dual_stack:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def main() -> None:
    from fulcrum.settings import get_settings

    parser = argparse.ArgumentParser(
        description="Serve the Fulcrum API and dashboard (HTTPS when FULCRUM_TLS_CERTFILE is set)"
    )
    parser.add_argument("--host", default="127.0.0.1", help='"::": IPv6 and IPv4 on one socket')
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="info")
    arguments = parser.parse_args()
    settings = get_settings()
    server = uvicorn.Server(
        config(
            "fulcrum.main:create_app",
            arguments.host,
            arguments.port,
            settings.tls_certfile,
            settings.tls_keyfile,
            factory=True,
            proxy_headers=False,
            server_header=False,
            log_level=arguments.log_level,
        )
    )
    server.run(sockets=[listening_socket(arguments.host, arguments.port)])


if __name__ == "__main__":
    main()
