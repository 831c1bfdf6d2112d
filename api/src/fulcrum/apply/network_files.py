"""Reading the rendered network files back before anything loads them.

systemd-networkd has no `--check`: it logs and skips what it cannot parse, at run time. So the
staged files are parsed back here with the grammar networkd, timesyncd and resolved share
(`[Section]` lines and `Key=value` lines), and every section and key must be one the renderer
writes, with a value that stays on its line. A file that fails is never installed.
"""

from __future__ import annotations

import string

from fulcrum.apply.tools import ToolError

_LABEL = set(string.ascii_letters + string.digits + "-")

# Section -> the keys allowed in it, for every file the network renderer writes.
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "Match": frozenset({"PermanentMACAddress", "MACAddress", "Name", "Kind"}),
    "Link": frozenset({"Name", "MTUBytes", "ActivationPolicy", "RequiredForOnline"}),
    "NetDev": frozenset({"Name", "Kind"}),
    "Bond": frozenset({"Mode", "MIIMonitorSec", "TransmitHashPolicy", "LACPTransmitRate"}),
    "VLAN": frozenset({"Id"}),
    "Network": frozenset({"Address", "DHCP", "IPv6AcceptRA", "LinkLocalAddressing", "Bond", "VLAN"}),
    "Route": frozenset({"Destination", "Gateway", "Table", "Metric"}),
    "Time": frozenset({"NTP"}),
    "Resolve": frozenset({"DNS", "Domains"}),
}
_VALUE_FORBIDDEN = set("[]=#;\r\n\t\\\"'")


def parse_config(name: str, text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) of every setting in `text`; raises ToolError naming the bad line."""
    settings: list[tuple[str, str, str]] = []
    section: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        where = f"{name} line {number}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line[1:-1] if line.endswith("]") else None
            if section not in KNOWN_KEYS:
                raise ToolError(f"{where}: unknown section {line[:80]!r}")
            continue
        key, equals, value = line.partition("=")
        if section is None or not equals:
            raise ToolError(f"{where}: neither a section nor a Key=value line: {line[:80]!r}")
        if key not in KNOWN_KEYS[section]:
            raise ToolError(f"{where}: {key[:40]!r} is not a key of [{section}]")
        if _VALUE_FORBIDDEN & set(value) or value != value.strip():
            raise ToolError(f"{where}: the value of {key} has characters no setting needs: {value[:80]!r}")
        settings.append((section, key, value))
    return settings


def check_hostname(text: str) -> str:
    name = text.removesuffix("\n")
    if not name or "\n" in name or len(name) > 63 or not set(name) <= _LABEL:
        raise ToolError(f"hostname: {text[:80]!r} is not one host name label")
    return name
