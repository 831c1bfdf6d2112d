"""The appliance's own network: the desired configuration and the kernel's interfaces."""

from __future__ import annotations

from pydantic import BaseModel

from fulcrum.config.network import NetworkConfig

NetworkSettings = NetworkConfig


class KernelInterface(BaseModel):
    """One interface as the kernel has it now."""

    name: str
    kind: str  # physical, bond, vlan, bridge, veth, loopback, ...
    mac: str
    driver: str | None
    operstate: str
    carrier: bool
    speed_mbps: int | None
    mtu: int
    addresses: list[str]
    prefixed_addresses: list[str]  # the same with their prefix length: "192.0.2.2/24"
    dynamic_addresses: list[str]  # of those, the ones with a lifetime (DHCP, SLAAC)
    counters: dict[str, int]
    bond_members: list[str]
    bond_master: str | None
    configured: bool  # the managed network names it (by name or, for a NIC, by MAC)


class KernelRoute(BaseModel):
    """One unicast route as the kernel has it now (any table but the kernel's local one)."""

    destination: str  # with its prefix length: "0.0.0.0/0" and "::/0" are the default routes
    gateway: str | None  # None: on-link, or a multipath route
    interface: str | None
    table: int  # 254: the main table
    protocol: str  # who made it: kernel, boot (by hand or the console), static, dhcp, ra, bgp, ...
    metric: int | None


class ClockStatus(BaseModel):
    """The system clock as the kernel disciplines it (adjtimex), and the NTP servers configured."""

    synchronised: bool  # timedatectl's "System clock synchronized": maximum error under 16 s
    state: str  # the kernel's clock state: ok, unsynchronised, or a leap second's
    offset_us: float  # the last offset from the time source that the kernel is slewing away
    max_error_us: int
    estimated_error_us: int
    # The managed network's; while it is not managed, those of timesyncd's configuration (the image's).
    ntp_servers: list[str]
