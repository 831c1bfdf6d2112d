"""A socketserver answering from a thread of its own for the length of a `with` block: the receivers
and stand-in peers that tests run inside their own process."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

Server = TypeVar("Server", bound=socketserver.BaseServer)


@contextmanager
def serving(server: Server, poll_interval: float = 0.5) -> Iterator[Server]:
    """`server`, serving until the block ends; then shut down, closed and its thread joined."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
