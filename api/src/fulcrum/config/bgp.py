"""This node's BGP: the VIPs announced to upstream routers through FRR (bgpd, bfdd), so that a
router spreads flows over the nodes by ECMP.

Node-local like `NetworkConfig`: every node has its own router-id and sessions, so this part of a
snapshot never replicates to the HA peer (fulcrum.services.lineage leaves it out).

Everything here is rendered into frr.conf, whose syntax is one command a line, `!` or `#` starting
a comment. Every string is restricted to characters that cannot end a line or start a comment, and
the two free-text fields FRR takes to the end of the line (password, description) also exclude
quotes and backslashes, so the renderer may place values verbatim (tests/unit/render/test_frr.py
proves it with hostile input, and `vtysh -C` checks every golden file).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from fulcrum.config.types import HostAddress, JsonInteger

# RFC 6793 four-octet AS numbers; 0 is reserved (RFC 7607) and FRR refuses it.
Asn = Annotated[int, Field(ge=1, le=4_294_967_295), JsonInteger]
# TCP-MD5 keys are at most 80 bytes (the kernel's TCP_MD5SIG_MAXKEYLEN). Printable ASCII without
# space, '!' and '#' (FRR comments), quotes, backslash and '?' (vtysh's help key).
SAFE_CHARACTERS = r"[A-Za-z0-9$%&()*+,\-./:;<=>@\[\]^_`{|}~]"
PASSWORD_PATTERN = rf"^{SAFE_CHARACTERS}{{1,80}}$"
Password = Annotated[str, StringConstraints(pattern=PASSWORD_PATTERN)]
# FRR keeps a neighbor's description to the end of the line: printable, single spaces inside,
# none of the characters above; 80 characters, as `show bgp neighbors` prints it whole.
DESCRIPTION_PATTERN = rf"^{SAFE_CHARACTERS}+(?: {SAFE_CHARACTERS}+)*$"
NeighborDescription = Annotated[str, StringConstraints(pattern=DESCRIPTION_PATTERN, max_length=80)]
# Standard communities (RFC 1997) are ASN:value, two 16-bit numbers; large ones (RFC 8092) are
# three 32-bit numbers. Ranges are checked below, the pattern only keeps the shape.
StandardCommunity = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,5}:[0-9]{1,5}$")]
LargeCommunity = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$")]
# FRR's neighbor timers: keepalive 1-65535 s (0 would send none), hold 3-65535 s (0 turns the
# dead-peer check off, which a load balancer never wants).
Keepalive = Annotated[int, Field(ge=1, le=65535), JsonInteger]
HoldTime = Annotated[int, Field(ge=3, le=65535), JsonInteger]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Timers(Strict):
    keepalive: Keepalive
    hold: HoldTime

    @model_validator(mode="after")
    def _order(self) -> Self:
        if self.keepalive >= self.hold:
            raise ValueError(
                f"keepalive: {self.keepalive} s must be shorter than the hold time {self.hold} s "
                "(usually a third of it), or the session drops between two keepalives"
            )
        return self


class Neighbor(Strict):
    """An upstream router this node announces the VIPs to."""

    address: HostAddress
    remote_asn: Asn
    password: Password | None = None  # TCP-MD5 (RFC 2385); write-only in the API
    bfd: StrictBool = True  # a dead node's routes go in well under a second
    timers: Timers | None = None  # None: FRR's datacenter defaults (keepalive 3 s, hold 9 s)
    description: NeighborDescription | None = None


class BgpConfig(Strict):
    enabled: StrictBool = True
    asn: Asn
    router_id: ipaddress.IPv4Address
    neighbors: list[Neighbor] = Field(default_factory=list, max_length=16)
    communities: list[StandardCommunity] = Field(default_factory=list, max_length=32)
    large_communities: list[LargeCommunity] = Field(default_factory=list, max_length=32)
    # The VIPs to announce, as /32 and /128. None: every address of the enabled services.
    announce: list[HostAddress] | None = Field(default=None, max_length=1024)

    def announces(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        """Whether an enabled service at `address` has its VIP announced (the caller checks that the
        service is enabled: without a list of its own, BGP announces every enabled service)."""
        return self.enabled and (self.announce is None or address in self.announce)

    @model_validator(mode="after")
    def _values(self) -> Self:
        if self.router_id.is_unspecified or self.router_id.is_multicast or self.router_id.is_loopback:
            raise ValueError(
                f"router_id: {self.router_id} cannot identify a router; use a unicast IPv4 address"
            )
        seen: set[str] = set()
        for index, neighbor in enumerate(self.neighbors):
            if str(neighbor.address) in seen:
                raise ValueError(f"neighbors[{index}].address: {neighbor.address} is listed twice")
            seen.add(str(neighbor.address))
        for index, community in enumerate(self.communities):
            if any(int(part) > 65535 for part in community.split(":")):
                raise ValueError(f"communities[{index}]: {community}: both parts are 0-65535")
        for index, community in enumerate(self.large_communities):
            if any(int(part) > 4_294_967_295 for part in community.split(":")):
                raise ValueError(f"large_communities[{index}]: {community}: every part is 0-4294967295")
        for field in ("communities", "large_communities"):
            values: list[str] = getattr(self, field)
            if len(set(values)) != len(values):
                raise ValueError(f"{field}: lists a community twice")
        if self.announce is not None and len(set(self.announce)) != len(self.announce):
            raise ValueError("announce: lists an address twice")
        return self
