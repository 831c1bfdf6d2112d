"""A namespace's IPVS table from /proc/net/ip_vs, read without starting a process.

Polling with ipvsadm costs a process start (0.3-1 s in the emulated VM), far coarser than the
health-check and reload times being measured. /proc/net/ip_vs is per network namespace, so a
thread that joined the LB's namespace reads it in milliseconds (lab.netns.proc_net).
"""

from __future__ import annotations

import ipaddress
import re

from lab.netns import proc_net


def _endpoint(hex_endpoint: str) -> str:
    address, port = hex_endpoint.rsplit(":", 1)
    if len(address) == 8:
        host = str(ipaddress.IPv4Address(int(address, 16)))
    else:  # IPv6: the kernel prints it bracketed, in full colon form
        host = f"[{ipaddress.IPv6Address(address.strip('[]'))}]"
    return f"{host}:{int(port, 16)}"


def parse(text: str) -> dict[str, dict[str, int]]:
    """{"TCP 10.77.0.100:80": {"10.77.1.21:80": weight, ...}, ...}"""
    table: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines()[3:]:
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "->" and current is not None:
            current[_endpoint(fields[1])] = int(fields[3])
        elif fields[0] in ("TCP", "UDP", "SCTP"):
            current = table.setdefault(f"{fields[0]} {_endpoint(fields[1])}", {})
        elif fields[0] == "FWM":
            current = table.setdefault(f"FWM {int(fields[1], 16)}", {})
    return table


def read(ns) -> dict[str, dict[str, int]]:
    return parse(proc_net(ns, "ip_vs"))


def count_real_servers(text: str) -> int:
    """The real servers in a /proc/net/ip_vs text, counted without parsing addresses: a poll of
    5,000 through `parse` costs seconds of the emulated CPU that the commit being timed needs."""
    return sum(1 for line in text.splitlines()[3:] if line.lstrip().startswith("->"))


def real_server_count(ns) -> int:
    return count_real_servers(proc_net(ns, "ip_vs"))



def _hex_endpoint(address: str, port: int) -> str:
    return f"{int(ipaddress.IPv4Address(address)):08X}:{port:04X}"


_SECTION = re.compile(r"^\S", re.M)


def weight_in(text: str, service: tuple[str, str, int], real: tuple[str, int]) -> int | None:
    """One IPv4 real server's weight in a /proc/net/ip_vs text (None: not there), found by regular
    expression rather than `parse`, which costs seconds of emulated CPU at 5,000 real servers."""
    protocol, address, port = service
    header = re.search(rf"^{protocol}\s+{_hex_endpoint(address, port)}\s", text, re.M)
    if header is None:
        return None
    following = _SECTION.search(text, header.end())
    end = following.start() if following else len(text)
    line = re.compile(rf"^\s+-> {_hex_endpoint(*real)}\s+\S+\s+(\d+)", re.M).search(text, header.end(), end)
    return int(line.group(1)) if line else None
