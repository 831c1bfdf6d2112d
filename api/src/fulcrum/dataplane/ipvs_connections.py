"""The IPVS connection table, read from /proc/net/ip_vs_conn.

Each line is one connection: protocol, client (From), virtual address (To), backend (Dest), state
and seconds to expiry. The kernel prints IPv4 addresses as 8 hexadecimal digits and IPv6 ones in
colon notation (in brackets on some kernels), ports as 4 hexadecimal digits. The netlink
interface this package uses for services has no connection dump, so the proc file it is.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IpvsConnection:
    protocol: str
    client: str
    client_port: int
    virtual: str
    virtual_port: int
    backend: str
    backend_port: int
    state: str
    expires_seconds: int


@dataclass(frozen=True)
class ConnectionFilter:
    virtual: tuple[str, int | None] | None = None  # a service: its address and port
    backend: tuple[str, int | None] | None = None
    client: str | None = None
    state: str | None = None

    def matches(self, connection: IpvsConnection) -> bool:
        return (
            _endpoint_matches(self.virtual, connection.virtual, connection.virtual_port)
            and _endpoint_matches(self.backend, connection.backend, connection.backend_port)
            and (self.client is None or connection.client == self.client)
            and (self.state is None or connection.state == self.state)
        )


@dataclass(frozen=True)
class ConnectionPage:
    entries: list[IpvsConnection]
    count: int  # connections matching the filter
    states: dict[str, int]  # of those, per state
    total: int  # connections in the table


def _endpoint_matches(wanted: tuple[str, int | None] | None, address: str, port: int) -> bool:
    return wanted is None or (wanted[0] == address and wanted[1] in (None, port))


def read_page(path: Path, selection: ConnectionFilter, limit: int, offset: int) -> ConnectionPage:
    """One pass over the table, keeping only the page: the table can hold a million entries."""
    entries: list[IpvsConnection] = []
    states: Counter[str] = Counter()
    total = matched = 0
    for connection in parse(path):
        total += 1
        if not selection.matches(connection):
            continue
        if offset <= matched < offset + limit:
            entries.append(connection)
        matched += 1
        states[connection.state] += 1
    return ConnectionPage(entries=entries, count=matched, states=dict(states), total=total)


def established_keys(path: Path) -> set[str] | None:
    """The ESTABLISHED connections as "PROTOCOL CLIENT PORT VIRTUAL PORT" (the same on both nodes of
    a pair: the sync daemon copies a connection with its client and virtual address); None when
    there is no table to read (no IPVS)."""
    try:
        return {connection_key(c) for c in parse(path) if c.state == "ESTABLISHED"}
    except FileNotFoundError:
        return None


def connection_key(connection: IpvsConnection) -> str:
    c = connection
    return f"{c.protocol} {c.client} {c.client_port} {c.virtual} {c.virtual_port}"


def parse(path: Path) -> Iterator[IpvsConnection]:
    with path.open(encoding="ascii", errors="replace") as lines:
        next(lines, None)  # the header
        for line in lines:
            fields = line.split()
            if len(fields) < 9:
                continue
            yield IpvsConnection(
                protocol=fields[0],
                client=_address(fields[1]),
                client_port=int(fields[2], 16),
                virtual=_address(fields[3]),
                virtual_port=int(fields[4], 16),
                backend=_address(fields[5]),
                backend_port=int(fields[6], 16),
                state=fields[7],
                expires_seconds=int(fields[8]),
            )


def _address(field: str) -> str:
    field = field.strip("[]")
    if ":" in field:
        return str(ipaddress.IPv6Address(field))
    return str(ipaddress.IPv4Address(int(field, 16)))
