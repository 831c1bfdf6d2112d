"""Network namespaces, and doing things inside one from this process.

A socket belongs to the namespace of the thread that created it, for its whole life. So
`socket()` creates it in a short-lived thread that has joined the namespace (setns) and hands
it back: the test then uses it normally, without a subprocess per request.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import socket as _socket
import threading
from collections.abc import Callable
from typing import Any

from lab.cmd import cmd, ns_name
from lab.defer import defer

_CLONE_NEWNET, _CLONE_NEWNS = 0x40000000, 0x00020000
_MS_RDONLY, _MS_REC, _MS_SLAVE, _MNT_DETACH = 0x1, 0x4000, 0x80000, 0x2
_libc = ctypes.CDLL(None, use_errno=True)


class NetNS:
    """A network namespace with a unique name, deleted when the cleanup scope ends (or, used
    as a context manager, when the block ends)."""

    def __init__(self, label: str, *, create: bool = True):
        # Unique across tests and runs; `ip netns` names are file names under /run/netns.
        self.name = f"fl{secrets.token_hex(3)}-{label}"
        if create:
            create_namespaces([self])
            self.ip("link", "set", "lo", "up")

    def delete(self) -> None:
        if os.path.exists(f"/run/netns/{self.name}"):
            cmd(["ip", "netns", "delete", self.name])

    def cmd(self, argv: list, **kwargs):
        return cmd(argv, ns=self, **kwargs)

    def ip(self, *args) -> None:
        cmd(["ip", "-n", self.name, *args])

    def ip_batch(self, lines: list[str]) -> None:
        """Several `ip` commands (without the leading "ip") in one process."""
        if lines:
            cmd(["ip", "-n", self.name, "-batch", "-"], input="".join(f"{line}\n" for line in lines))

    def sysctl(self, key: str, value) -> None:
        """Set a sysctl of this namespace (net.*), without a process: /proc/sys/net is per namespace."""
        path = "/proc/sys/" + key.replace(".", "/")

        def write() -> None:
            with open(path, "w") as handle:
                handle.write(str(value))

        run_in(self, write)

    def __enter__(self) -> NetNS:
        return self

    def __exit__(self, *exc) -> None:
        self.delete()

    def __repr__(self) -> str:
        return f"NetNS({self.name})"


def create_namespaces(namespaces: list[NetNS]) -> None:
    """Create namespaces in one `ip` process; each is deleted when the cleanup scope ends."""
    for ns in namespaces:
        defer(ns.delete)  # first: a batch that fails half-way leaves some behind
    cmd(["ip", "-batch", "-"], input="".join(f"netns add {ns.name}\n" for ns in namespaces))


def enter(ns) -> None:
    """Move the calling thread into namespace `ns` (the whole process, if it has one thread)."""
    with open(f"/run/netns/{ns_name(ns)}") as handle:
        _check(_libc.setns(handle.fileno(), _CLONE_NEWNET), f"setns into {ns_name(ns)}")


def switch_process(ns) -> None:
    """What `ip netns exec NAME` does to the process before it executes the command (iproute2's
    netns_switch): into namespace `ns`, in a mount namespace of its own whose mounts do not
    propagate back, with a /sys that shows `ns`'s interfaces. For a single-threaded process."""
    enter(ns)
    _check(_libc.unshare(_CLONE_NEWNS), "unshare the mount namespace")
    _check(_libc.mount(b"", b"/", b"none", _MS_SLAVE | _MS_REC, None), "make / a slave mount")
    flags = 0
    if _libc.umount2(b"/sys", _MNT_DETACH) != 0 and os.statvfs("/sys").f_flag & os.ST_RDONLY:
        flags = _MS_RDONLY  # a read-only sysfs cannot be shadowed by a read-write one
    _check(_libc.mount(ns_name(ns).encode(), b"/sys", b"sysfs", flags, None), "mount the namespace's /sys")


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def run_in(ns, fn: Callable[..., Any], *args) -> Any:
    """fn(*args) in a thread that has joined namespace `ns`; its result or exception."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            enter(ns)
            outcome["value"] = fn(*args)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name=f"in-{ns_name(ns)}")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def socket(ns, family: int = _socket.AF_INET, kind: int = _socket.SOCK_STREAM) -> _socket.socket:
    """A socket living in namespace `ns`."""
    return run_in(ns, _socket.socket, family, kind)


def proc_net(ns, name: str) -> str:
    """/proc/net/<name> (tcp, udp, ...) as seen from inside `ns`."""

    def read() -> str:
        with open(f"/proc/self/task/{threading.get_native_id()}/net/{name}") as handle:
            return handle.read()

    return run_in(ns, read)


def listening(ns, port: int, proto: str = "tcp") -> bool:
    """Whether a socket in `ns` listens on (tcp) or is bound to (udp) `port`, IPv4 or IPv6."""
    listen_state = "0A" if proto == "tcp" else "07"  # TCP_LISTEN; unconnected UDP shows TCP_CLOSE
    for table in (proto, proto + "6"):
        for line in proc_net(ns, table).splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == listen_state:
                return True
    return False


def established_peer_ports(ns, port: int) -> set[int]:
    """The remote ports of the established IPv4 TCP connections to local `port` in `ns`: on a DR
    backend, the client ports of the flows it serves."""
    ports = set()
    for line in proc_net(ns, "tcp").splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # TCP_ESTABLISHED
            ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports
