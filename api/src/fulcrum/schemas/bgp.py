"""This node's BGP as the API reads and writes it: TCP-MD5 passwords are write-only."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from fulcrum.config.bgp import SAFE_CHARACTERS, BgpConfig, Neighbor

# A password to set, or "" to remove the stored one.
PasswordChange = Annotated[str, StringConstraints(pattern=rf"^{SAFE_CHARACTERS}{{0,80}}$")]


class NeighborWrite(Neighbor):
    # None: keep this neighbor's stored password (matched by address); "": remove it.
    password: PasswordChange | None = None


class BgpWrite(BgpConfig):
    neighbors: list[NeighborWrite] = Field(default_factory=list, max_length=16)  # type: ignore[assignment]


class NeighborRead(Neighbor):
    password: None = None  # never shown
    has_password: bool


class BgpRead(BgpConfig):
    neighbors: list[NeighborRead]  # type: ignore[assignment]
