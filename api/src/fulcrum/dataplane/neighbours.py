"""The neighbour table (ARP for IPv4, neighbour discovery for IPv6), as `ip -json neigh` prints it:
a fixed command, read-only, no argument from a client."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

COMMAND = ["ip", "-json", "neigh", "show"]
TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Neighbour:
    address: str
    interface: str
    lladdr: str | None
    states: tuple[str, ...]
    router: bool


class NeighboursUnreadable(RuntimeError):
    pass


def read_neighbours() -> list[Neighbour]:
    try:
        done = subprocess.run(COMMAND, capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NeighboursUnreadable(f"ip neigh failed: {error}") from error
    if done.returncode != 0:
        raise NeighboursUnreadable(f"ip neigh failed: {done.stderr.decode(errors='replace').strip()[:500]}")
    return [
        Neighbour(
            address=item["dst"],
            interface=item.get("dev", ""),
            lladdr=item.get("lladdr"),
            states=tuple(item.get("state", ())),
            router="router" in item,
        )
        for item in json.loads(done.stdout or b"[]")
    ]
