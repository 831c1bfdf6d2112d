"""A TCP port of this process's namespace relayed, byte for byte, to an address inside a lab
namespace: how the demo puts each appliance's dashboard on one port of the host.

An appliance's API listens inside its node's namespace (keepalived's node-health check and the
peer reach it there). The browser arrives in the root namespace: on the host, or through qemu's
port forward into the VM. Each accepted connection gets a socket created in the node's namespace
(lab.netns.socket) and two threads copying each direction until either side closes, so long-lived
streams (the dashboard's server-sent events) pass unchanged.

    relay = PortRelay(("0.0.0.0", 8081), lb2, ("127.0.0.1", 8080)).start()   # stops with the scope
"""

from __future__ import annotations

import socket
import threading

from lab import netns
from lab.defer import defer

CHUNK = 65536


class PortRelay:
    def __init__(self, listen: tuple[str, int], ns, target: tuple[str, int]):
        self.listen, self.ns, self.target = listen, ns, target
        self._server: socket.socket | None = None
        self._stopped = threading.Event()

    def start(self) -> PortRelay:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(self.listen)
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, name=f"relay {self.listen[1]}", daemon=True).start()
        defer(self.stop)
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                downstream, _ = self._server.accept()
            except OSError:  # closed by stop()
                return
            threading.Thread(target=self._connect, args=(downstream,), daemon=True).start()

    def _connect(self, downstream: socket.socket) -> None:
        upstream = netns.socket(self.ns)
        try:
            upstream.connect(self.target)
        except OSError:
            upstream.close()
            downstream.close()  # the browser sees a reset connection, as with the API down
            return
        pumps = [threading.Thread(target=_pump, args=pair, daemon=True)
                 for pair in ((downstream, upstream), (upstream, downstream))]
        for pump in pumps:
            pump.start()
        for pump in pumps:
            pump.join()
        upstream.close()
        downstream.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends or fails, then end `sink`'s sending side (a half-close, as TCP)."""
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
