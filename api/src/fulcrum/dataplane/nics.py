"""The kernel's network interfaces as an operator picks among them: name, MAC, driver, link state,
speed, MTU, addresses and counters, from sysfs (world-readable, so the unprivileged API reads it)
and the addresses over rtnetlink (fulcrum.dataplane.links)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fulcrum.dataplane.links import Interface, read_interfaces

SYS_CLASS_NET = Path("/sys/class/net")
COUNTERS = (
    "rx_bytes",
    "tx_bytes",
    "rx_packets",
    "tx_packets",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
)


@dataclass(frozen=True)
class KernelNic:
    name: str
    kind: str  # physical, bond, vlan, bridge, veth, loopback, or the kernel's device type
    mac: str
    driver: str | None
    operstate: str  # up, down, lowerlayerdown, unknown, ... (the kernel's RFC 2863 state)
    carrier: bool
    speed_mbps: int | None  # None: unknown (no link, or a virtual device)
    mtu: int
    addresses: list[str] = field(default_factory=list)
    prefixed_addresses: list[str] = field(default_factory=list)  # "192.0.2.2/24"
    dynamic_addresses: list[str] = field(default_factory=list)  # of those, from DHCP or SLAAC
    counters: dict[str, int] = field(default_factory=dict)
    bond_members: list[str] = field(default_factory=list)
    bond_master: str | None = None


def read_nics(root: Path = SYS_CLASS_NET) -> list[KernelNic]:
    """Every interface of this network namespace, by name. Raises OSError if sysfs is missing."""
    interfaces = {i.name: i for i in read_interfaces()}
    return [_nic(path, interfaces.get(path.name)) for path in sorted(root.iterdir())]


def _nic(path: Path, interface: Interface | None) -> KernelNic:
    members = _read(path / "bonding" / "slaves")
    master = path / "master"
    return KernelNic(
        name=path.name,
        kind=_kind(path),
        mac=_read(path / "address") or "",
        driver=(path / "device" / "driver").resolve().name if (path / "device" / "driver").exists() else None,
        operstate=_read(path / "operstate") or "unknown",
        carrier=_read(path / "carrier") == "1",
        speed_mbps=_speed(_read(path / "speed")),
        mtu=int(_read(path / "mtu") or 0),
        addresses=sorted(interface.addresses) if interface else [],
        prefixed_addresses=sorted(interface.prefixed) if interface else [],
        dynamic_addresses=sorted(interface.dynamic) if interface else [],
        counters={name: int(_read(path / "statistics" / name) or 0) for name in COUNTERS},
        bond_members=members.split() if members else [],
        bond_master=master.resolve().name if master.exists() else None,
    )


def _kind(path: Path) -> str:
    uevent = dict(line.split("=", 1) for line in (_read(path / "uevent") or "").splitlines() if "=" in line)
    if "DEVTYPE" in uevent:
        return uevent["DEVTYPE"]
    if (path / "device").exists():
        return "physical"
    return "loopback" if _read(path / "type") == "772" else "virtual"


def _speed(text: str | None) -> int | None:
    try:
        speed = int(text or "")
    except ValueError:
        return None
    return speed if speed > 0 else None


def _read(path: Path) -> str | None:
    """A sysfs attribute, or None where the device does not have it (or says EINVAL: no link)."""
    try:
        return path.read_text().strip()
    except OSError:
        return None
