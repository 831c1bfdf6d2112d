"""What a parser's mapper produced, before and after validation with Fulcrum's own model.

Mappers build plain dicts in the shape of `fulcrum.config.snapshot`; `assemble` validates each
service and VIP group alone (an invalid one is reported at its line, the rest still import), then
the lot together, so the result is exactly what the candidate configuration would accept.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from fulcrum.config import snapshot as spec
from fulcrum.config.errors import located_errors
from fulcrum.importer.report import Origin, Report, ReportLine


@dataclass
class Draft:
    """One object to import and the directive it came from."""

    origin: Origin
    data: dict[str, Any]


@dataclass
class ImportDraft:
    services: list[Draft] = field(default_factory=list)
    vip_groups: list[Draft] = field(default_factory=list)
    node: dict[str, Draft] = field(default_factory=dict)  # node setting -> its value (in .data["value"])


@dataclass
class ImportResult:
    format: str
    services: list[spec.Service]
    vip_groups: list[spec.VipGroup]
    node: dict[str, Any]  # only the node settings the input set
    report: list[ReportLine]


def is_number(text: str) -> bool:
    """A plain decimal that fits every field here: str.isdigit() alone takes '²' and digits
    beyond what int() converts."""
    return text.isascii() and text.isdigit() and len(text) <= 10


def service_name(address: str, port: int | None, protocol: str = "tcp") -> str:
    """A name for a service that had none: its address and port ('192.0.2.10-80', '2001-db8--1-53-udp')."""
    text = address.replace(":", "-") + (f"-{port}" if port is not None else "")
    if protocol != "tcp":
        text += f"-{protocol}"
    return text if re.match(r"[A-Za-z0-9]", text) else f"ip{text}"


def safe_name(wanted: str) -> str:
    """`wanted` made into a Fulcrum name: other characters become '-', at most 63 long."""
    text = re.sub(r"[^A-Za-z0-9_.-]", "-", wanted)[:63]
    return text if re.match(r"[A-Za-z0-9]", text) else ("x" + text)[:63]


def prefix_from_mask(mask: str, family: int) -> int | None:
    """A persistence granularity as a prefix length: a netmask ('255.255.255.0') or a number."""
    if is_number(mask):
        return int(mask)
    if family != 4:
        return None
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
    except ValueError:
        return None


def _messages(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][1:]) or 'value'}: {e['msg']}" for e in located_errors(exc)
    )


def assemble(fmt: str, draft: ImportDraft, report: Report, files: list[str]) -> ImportResult:
    services: list[spec.Service] = []
    listeners: dict[tuple[str, str, int], Origin] = {}
    names: set[str] = set()
    for item in draft.services:
        try:
            service = spec.Service.model_validate(item.data)
        except ValidationError as exc:
            report.skipped(item.origin, f"service {item.data.get('name')} not imported: {_messages(exc)}")
            continue
        key = (str(service.address), service.protocol.value, service.ports[0])
        if key in listeners:
            first = listeners[key]
            report.skipped(item.origin, f"{service.name} is served already by {first.file} line {first.line}")
            continue
        if service.name in names:
            service = service.model_copy(update={"name": unique_name(service.name, names)})
            report.changed(item.origin, f"renamed {service.name}: the name was taken by an earlier service")
        listeners[key] = item.origin
        names.add(service.name)
        services.append(service)
    groups: list[spec.VipGroup] = []
    vrids: set[tuple[int, int]] = set()
    for item in draft.vip_groups:
        try:
            group = spec.VipGroup.model_validate(item.data)
        except ValidationError as exc:
            report.skipped(item.origin, f"VIP group {item.data.get('name')} not imported: {_messages(exc)}")
            continue
        family = ipaddress.ip_interface(group.addresses[0]).version
        if (family, group.virtual_router_id) in vrids or group.name in {g.name for g in groups}:
            report.skipped(
                item.origin, f"VIP group {group.name}: its name or VRID is used by an earlier instance"
            )
            continue
        vrids.add((family, group.virtual_router_id))
        groups.append(group)
    node = _node(draft, report)
    whole = {"services": services, "vip_groups": groups, "node": spec.Node.model_validate(node)}
    try:
        spec.ConfigSnapshot.model_validate(whole)
    except ValidationError as exc:
        # The only rule across objects not checked above: VIP groups against the node's peer.
        first = draft.vip_groups[0].origin if draft.vip_groups else Origin("keepalived.conf", 0, "")
        report.skipped(first, f"VRRP not imported: {_messages(exc)}")
        groups, node = [], {}
    return ImportResult(fmt, services, groups, node, report.sorted_lines(files))


def _node(draft: ImportDraft, report: Report) -> dict[str, Any]:
    """Node settings one by one: a value the model refuses is reported and left out."""
    node: dict[str, Any] = {}
    for key, item in draft.node.items():
        try:
            spec.Node.model_validate({**node, key: item.data["value"]})
        except ValidationError as exc:
            report.skipped(item.origin, f"node setting {key} not imported: {_messages(exc)}")
            continue
        node[key] = item.data["value"]
    return node


def unique_name(name: str, taken: set[str]) -> str:
    """`name` with the first free numeric suffix ('web-2')."""
    number = 2
    while f"{name[:58]}-{number}" in taken:
        number += 1
    return f"{name[:58]}-{number}"
