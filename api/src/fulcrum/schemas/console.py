"""The appliance's console menu (tty1 and the serial port): its password protection, and the
management address it sets through the API."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from fulcrum.config.network import MacAddress
from fulcrum.schemas.revisions import RevisionRead

PRINTABLE_ASCII = r"^[ -~]*$"


def _typable_on_the_console(value: str) -> str:
    # The console is a Linux VT or a serial line with the default keymap: what it cannot type
    # (other characters, control characters; a newline would also end the line it is checked as)
    # would lock the operator out.
    if any(not " " <= character <= "~" for character in value):
        raise ValueError(
            "use printable ASCII only (letters, digits, punctuation, spaces): the console keyboard "
            "may not type other characters"
        )
    return value


ConsolePassword = Annotated[
    str,
    Field(min_length=12, max_length=256, json_schema_extra={"pattern": PRINTABLE_ASCII}),
    AfterValidator(_typable_on_the_console),
]


class ConsoleAccess(BaseModel):
    # On: the console menu asks for the console password before it shows anything it can change.
    password_required: bool
    changed_at: datetime | None  # when protection was turned on or its password last set


class ConsoleAccessUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    password_required: bool
    # Needed to turn protection on (the appliance's root account has no password); while it is
    # on, a new one replaces the old, and none keeps it. Only its hash is stored.
    password: ConsolePassword | None = None


class ConsoleManagementChange(BaseModel):
    """The console menu's "Set the management address": IPv4 on the management interface."""

    model_config = ConfigDict(extra="forbid")

    # The NIC the console manages (its MAC address, as fulcrum-firstboot chose it): needed only
    # while Fulcrum does not manage this node's network yet, to take it over on that NIC.
    mac: MacAddress | None = None
    dhcp: StrictBool = False
    # Static (dhcp false): the address with its prefix length, the default gateway, DNS servers.
    address: ipaddress.IPv4Interface | None = None
    gateway: ipaddress.IPv4Address | None = None
    dns: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = Field(default_factory=list, max_length=8)


class ConsoleManagementResult(BaseModel):
    interface: str  # the management interface's name
    revision: RevisionRead  # committed and confirmed
