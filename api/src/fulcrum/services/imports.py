"""Importing keepalived.conf or ipvsadm rules into the candidate configuration.

The importer (fulcrum.importer) turns the text into validated model objects and a report; this
merges them with the candidate: conflicts by VIP:port:protocol are replaced or skipped as asked,
name clashes renamed, VIP groups and node settings taken only from an admin. The merged whole is
validated like any edit; preview stops there, apply loads it into the candidate. Nothing here
touches the kernel: the usual commit does, after the plan has been seen.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sqlalchemy.orm import Session

from fulcrum.config import snapshot as spec
from fulcrum.importer import ImportFormat, ImportResult, import_text
from fulcrum.importer.draft import unique_name
from fulcrum.schemas.imports import (
    ConflictPolicy,
    ImportAction,
    ImportedObject,
    ImportMode,
    ImportRequest,
    ImportResponse,
    ReportLineRead,
)
from fulcrum.services import audit
from fulcrum.services.candidate import candidate_snapshot, load_snapshot
from fulcrum.services.plan import plan
from fulcrum.services.validation import validated


def run_import(session: Session, actor: audit.Actor, request: ImportRequest, admin: bool) -> ImportResponse:
    result = import_text(request.format, request.text, dict(request.includes))
    before = candidate_snapshot(session)
    objects: list[ImportedObject] = []
    services = _merge_services(before, result, request, objects)
    groups, node = before.vip_groups, before.node
    if admin:
        groups = _merge_groups(before, result, request.on_conflict, objects)
        node = _merge_node(before.node, result.node)
        if result.node:
            objects.append(_node_object(result.node, ImportAction.REPLACE))
    else:
        objects += [
            ImportedObject(
                kind="vip_group",
                name=g.name,
                summary=_group_summary(g),
                action=ImportAction.NEEDS_ADMIN,
                conflicts_with=[],
            )
            for g in result.vip_groups
        ]
        if result.node:
            objects.append(_node_object(result.node, ImportAction.NEEDS_ADMIN))
    after = validated(
        lambda: spec.ConfigSnapshot.model_validate(
            {
                **before.model_dump(mode="json"),
                "services": [s.model_dump(mode="json") for s in services],
                "vip_groups": [g.model_dump(mode="json") for g in groups],
                "node": node.model_dump(mode="json"),
            },
            context=spec.WRITTEN,
        )
    )
    applied = request.mode == ImportMode.APPLY
    if applied:
        load_snapshot(session, after)
        candidate_snapshot(session)
        audit.record(
            session,
            actor,
            "import.apply",
            result.format,
            {
                "objects": [
                    o.model_dump(mode="json")
                    for o in objects
                    if o.action in (ImportAction.ADD, ImportAction.REPLACE)
                ]
            },
        )
    counts: dict[str, Any] = dict.fromkeys(("imported", "changed", "not_imported"), 0)
    for line in result.report:
        counts[line.outcome.value] += 1
    return ImportResponse(
        format=ImportFormat(result.format),
        mode=request.mode,
        applied=applied,
        objects=objects,
        report=[ReportLineRead.model_validate(line, from_attributes=True) for line in result.report],
        changes=plan(before, after),
        counts=counts,
    )


def _listeners(service: spec.Service) -> set[tuple[str, str, int]]:
    return {(str(service.address), service.protocol.value, port) for port in service.ports}


def _merge_services(
    before: spec.ConfigSnapshot, result: ImportResult, request: ImportRequest, objects: list[ImportedObject]
) -> list[spec.Service]:
    kept = list(before.services)
    for imported in result.services:
        clashing = [s for s in kept if _listeners(s) & _listeners(imported)]
        policy = request.conflicts.get(imported.name, request.on_conflict)
        if clashing and policy == ConflictPolicy.SKIP:
            objects.append(_service_object(imported, ImportAction.SKIP, clashing))
            continue
        kept = [s for s in kept if s not in clashing]
        if any(s.name == imported.name for s in kept):
            imported = imported.model_copy(
                update={"name": unique_name(imported.name, {s.name for s in kept})}
            )
        kept.append(imported)
        objects.append(
            _service_object(imported, ImportAction.REPLACE if clashing else ImportAction.ADD, clashing)
        )
    return kept


def _merge_groups(
    before: spec.ConfigSnapshot, result: ImportResult, policy: ConflictPolicy, objects: list[ImportedObject]
) -> list[spec.VipGroup]:
    kept = list(before.vip_groups)
    for imported in result.vip_groups:
        family = ipaddress.ip_interface(imported.addresses[0]).version
        clashing = [
            g
            for g in kept
            if g.name == imported.name
            or (
                g.virtual_router_id == imported.virtual_router_id
                and ipaddress.ip_interface(g.addresses[0]).version == family
            )
        ]
        if clashing and policy == ConflictPolicy.SKIP:
            objects.append(
                ImportedObject(
                    kind="vip_group",
                    name=imported.name,
                    summary=_group_summary(imported),
                    action=ImportAction.SKIP,
                    conflicts_with=[g.name for g in clashing],
                )
            )
            continue
        kept = [g for g in kept if g not in clashing] + [imported]
        objects.append(
            ImportedObject(
                kind="vip_group",
                name=imported.name,
                summary=_group_summary(imported),
                action=ImportAction.REPLACE if clashing else ImportAction.ADD,
                conflicts_with=[g.name for g in clashing],
            )
        )
    return kept


def _service_object(
    service: spec.Service, action: ImportAction, clashing: list[spec.Service]
) -> ImportedObject:
    host = f"[{service.address}]" if service.address.version == 6 else str(service.address)
    summary = (
        f"{host}:{service.ports[0]}/{service.protocol.value} {service.scheduler.value} "
        f"{service.forwarding.value}, {len(service.backends)} backends"
    )
    return ImportedObject(
        kind="service",
        name=service.name,
        summary=summary,
        action=action,
        conflicts_with=[s.name for s in clashing],
    )


def _group_summary(group: spec.VipGroup) -> str:
    return f"VRID {group.virtual_router_id}: {', '.join(group.addresses)}"


def _node_object(node: dict[str, Any], action: ImportAction) -> ImportedObject:
    summary = ", ".join(f"{k} {v}" for k, v in node.items())
    return ImportedObject(kind="node", name="node", summary=summary, action=action, conflicts_with=[])


def _merge_node(node: spec.Node, imported: dict[str, Any]) -> spec.Node:
    """The node settings the import set, over the current ones; VIP interfaces add to the map."""
    data = {**node.model_dump(mode="json"), **imported}
    data["vip_interfaces"] = {**node.vip_interfaces, **imported.get("vip_interfaces", {})}
    return validated(lambda: spec.Node.model_validate(data), prefix=("body", "text"))
