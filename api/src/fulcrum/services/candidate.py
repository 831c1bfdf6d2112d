"""The candidate configuration: the editable tables, seen as one `ConfigSnapshot`.

Rules that span objects (a VIP:port served twice, a VRID reused) are enforced on every write, not
only at commit. A write checks only what it can break, so an edit costs the same at 10 or 10,000
backends: a service is checked against the other services' listener columns and fwmarks (no
backend is loaded), a VIP group or the node settings against the groups and node alone (no rule
relates them to services), and a backend needs only its own service's rules. Every write keeps the
candidate valid, so this equals validating the whole candidate (tests/api/test_incremental_validation.py
compares the two on random edits); commits still validate the whole snapshot.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Row, String, select, true, type_coerce
from sqlalchemy.orm import Session

from fulcrum.config import snapshot as spec
from fulcrum.config.bgp import BgpConfig
from fulcrum.config.network import NetworkConfig
from fulcrum.errors import ConfigInvalid
from fulcrum.models import (
    Backend,
    BgpSettings,
    FirewallSettings,
    NetworkSettings,
    NodeSettings,
    Service,
    VipGroup,
)
from fulcrum.services.validation import validated

# Columns of their own; the rest of each object lives in its `settings` JSON document.
SERVICE_COLUMNS = ("name", "description", "enabled", "address", "ports", "fwmark", "protocol")
BACKEND_COLUMNS = ("address", "port", "weight", "enabled")
VIP_GROUP_COLUMNS = ("name", "virtual_router_id", "addresses", "advert_interval", "preempt")


def service_spec(row: Service | Row[Any], backends: list[spec.Backend] | None = None) -> spec.Service:
    """A service row (ORM, or a plain row with its `backends` given) as the validated model."""
    data: dict[str, Any] = {**row.settings, **{c: getattr(row, c) for c in SERVICE_COLUMNS}}
    # The validated models themselves, not their dumps: pydantic takes a model instance as it is,
    # so each backend is validated once (it was three times: backend, service, snapshot).
    data["backends"] = backends if backends is not None else [backend_spec(b) for b in row.backends]
    return spec.Service.model_validate(data)


def backend_spec(row: Backend | Row[Any]) -> spec.Backend:
    return spec.Backend.model_validate({**row.settings, **{c: getattr(row, c) for c in BACKEND_COLUMNS}})


# Every commit builds the candidate from every backend, and between two commits almost all of them
# are unchanged: their validated models are kept, keyed by what is stored (the settings' JSON text
# and the columns), so no write path has to invalidate anything, and a stored change is a new key.
# The models are frozen, so one instance may serve every candidate. Each build keeps exactly the
# backends it read (about 1.5 KB each natively), so nothing stale accumulates.
_validated_backends: dict[tuple[Any, ...], spec.Backend] = {}


def _validated_backend(settings_text: str, columns: tuple[Any, ...]) -> spec.Backend:
    stored = dict(zip(BACKEND_COLUMNS, columns, strict=True))
    return spec.Backend.model_validate({**json.loads(settings_text), **stored})


def vip_group_spec(row: VipGroup) -> spec.VipGroup:
    return spec.VipGroup.model_validate({c: getattr(row, c) for c in VIP_GROUP_COLUMNS})


def write_service(row: Service, service: spec.Service) -> None:
    data = service.model_dump(mode="json", exclude={"backends"})
    for column in SERVICE_COLUMNS:
        setattr(row, column, data.pop(column))
    row.settings = data


def write_backend(row: Backend, backend: spec.Backend) -> None:
    data = backend.model_dump(mode="json")
    for column in BACKEND_COLUMNS:
        setattr(row, column, data.pop(column))
    row.settings = data


def write_vip_group(row: VipGroup, group: spec.VipGroup) -> None:
    for column, value in group.model_dump(mode="json").items():
        setattr(row, column, value)


def node_settings(session: Session) -> dict[str, Any]:
    """This node's settings; defaults until first saved (reading never writes)."""
    row = session.get(NodeSettings, 1)
    return row.settings if row else spec.Node().model_dump(mode="json")


def firewall_settings(session: Session) -> dict[str, Any]:
    row = session.get(FirewallSettings, 1)
    return row.settings if row else spec.Firewall().model_dump(mode="json")


def network_settings(session: Session) -> dict[str, Any] | None:
    """This node's network as Fulcrum manages it; None while it does not (no row)."""
    return _node_document(session, NetworkSettings)


def store_network(session: Session, network: NetworkConfig | None) -> None:
    """Save (or, with None, stop managing) this node's network."""
    _store_node_document(session, NetworkSettings, network)


def bgp_settings(session: Session) -> dict[str, Any] | None:
    """This node's BGP; None while it has none (no row)."""
    return _node_document(session, BgpSettings)


def store_bgp(session: Session, bgp: BgpConfig | None) -> None:
    """Save (or, with None, remove) this node's BGP."""
    _store_node_document(session, BgpSettings, bgp)


# A node-local document that may be absent: one row (id 1) holding it as JSON, or none.
_NodeDocument = TypeVar("_NodeDocument", NetworkSettings, BgpSettings)


def _node_document(session: Session, model: type[_NodeDocument]) -> dict[str, Any] | None:
    row = session.get(model, 1)
    return row.settings if row else None


def _store_node_document(session: Session, model: type[_NodeDocument], document: BaseModel | None) -> None:
    row = session.get(model, 1)
    if document is None:
        if row is not None:
            session.delete(row)
    elif row is None:
        session.add(model(id=1, settings=document.model_dump(mode="json")))
    else:
        row.settings = document.model_dump(mode="json")
    session.flush()


def node_row(session: Session) -> NodeSettings:
    """The node settings row, created for a write."""
    row = session.get(NodeSettings, 1)
    if row is None:
        row = NodeSettings(id=1, settings=spec.Node().model_dump(mode="json"))
        session.add(row)
        session.flush()
    return row


def firewall_row(session: Session) -> FirewallSettings:
    """The firewall settings row, created for a write."""
    row = session.get(FirewallSettings, 1)
    if row is None:
        row = FirewallSettings(id=1, settings=spec.Firewall().model_dump(mode="json"))
        session.add(row)
        session.flush()
    return row


def list_services(session: Session) -> list[Service]:
    return list(session.scalars(select(Service).order_by(Service.name)))


def list_vip_groups(session: Session) -> list[VipGroup]:
    return list(session.scalars(select(VipGroup).order_by(VipGroup.name)))


def candidate_snapshot(session: Session, focus: tuple[str, str] | None = None) -> spec.ConfigSnapshot:
    """The whole candidate as one validated document; raises ConfigInvalid if it is not valid.

    With `focus` (("services" or "vip_groups", name)), errors about that object are located at
    "body" rather than "body.services[i]": the request being answered is about that object alone.
    """
    session.flush()
    services = _service_specs(session)
    groups = list_vip_groups(session)
    data: dict[str, Any] = {
        "services": services,
        "vip_groups": [vip_group_spec(g) for g in groups],
        "node": node_settings(session),
        "firewall": firewall_settings(session),
        "network": network_settings(session),
        "bgp": bgp_settings(session),
    }
    strip: tuple[str | int, ...] = ()
    if focus is not None:
        # Validate the focused object last, so a clash is reported on it, not on the older one.
        kind, name = focus
        names = [o.name for o in (services if kind == "services" else groups)]
        items = data[kind]
        items.append(items.pop(names.index(name)))
        strip = (kind, len(items) - 1)
    return validated(lambda: spec.ConfigSnapshot.model_validate(data, context=spec.WRITTEN), strip=strip)


def _service_specs(session: Session) -> list[spec.Service]:
    """Every service with its backends, validated, in `list_services`' order, read as plain rows
    rather than ORM objects, each backend's model from the cache when it is stored unchanged. The
    caller has flushed, so the rows are the session's state."""
    global _validated_backends
    backends: dict[int, list[spec.Backend]] = {}
    backend_columns = [getattr(Backend, c) for c in BACKEND_COLUMNS]
    settings_text = type_coerce(Backend.settings, String)  # as stored: the cache's key, decoded on a miss
    rows = select(Backend.service_id, settings_text, *backend_columns).order_by(
        Backend.service_id, Backend.id
    )
    previous = _validated_backends
    kept: dict[tuple[Any, ...], spec.Backend] = {}
    for service_id, text, *columns in session.execute(rows):
        key = (text, *columns)
        model = kept.get(key, previous.get(key))
        if model is None:
            model = _validated_backend(text, tuple(columns))
        kept[key] = model
        backends.setdefault(service_id, []).append(model)
    _validated_backends = kept
    service_columns = [getattr(Service, c) for c in SERVICE_COLUMNS]
    services = select(Service.id, Service.settings, *service_columns).order_by(Service.name)
    return [service_spec(row, backends.get(row.id, [])) for row in session.execute(services)]


def check_service_fits(session: Session, service: spec.Service, own_id: int | None) -> None:
    """ConfigSnapshot's rules across services for `service` (already valid on its own) against the
    stored others: one service per address:port/protocol and per fwmark. Raises ConfigInvalid located
    as the whole candidate's validation locates it (names are `_name_is_free`'s business)."""
    others = Service.id != own_id if own_id is not None else true()
    listeners = session.execute(
        select(Service.name, Service.ports)
        .where(others, Service.address == str(service.address), Service.protocol == service.protocol.value)
        .order_by(Service.id)
    ).all()
    for port in service.ports:
        other = next((name for name, ports in listeners if port in ports), None)
        if other is not None:
            raise _invalid("ports", spec.listener_taken(service, port, other))
    if service.fwmark is not None:
        marked = session.scalar(select(Service.name).where(others, Service.fwmark == service.fwmark))
        if marked is not None:
            raise _invalid("fwmark", spec.fwmark_taken(service, marked))


def _invalid(field: str, message: str) -> ConfigInvalid:
    return ConfigInvalid([{"loc": ["body", field], "msg": message, "type": "value_error"}])


def check_groups_and_node(session: Session, focus_group: str | None = None) -> None:
    """The candidate's VIP groups, node, firewall and network settings validated together, without
    services (the node's interfaces must exist in the network Fulcrum manages).

    With `focus_group`, errors about that group are located at "body" (see candidate_snapshot)."""
    session.flush()
    groups = list_vip_groups(session)
    data: dict[str, Any] = {
        "vip_groups": [vip_group_spec(g).model_dump(mode="json") for g in groups],
        "node": node_settings(session),
        "firewall": firewall_settings(session),
        "network": network_settings(session),
    }
    strip: tuple[str | int, ...] = ()
    if focus_group is not None:
        items = data["vip_groups"]
        items.append(items.pop([g.name for g in groups].index(focus_group)))
        strip = ("vip_groups", len(items) - 1)
    validated(lambda: spec.ConfigSnapshot.model_validate(data, context=spec.WRITTEN), strip=strip)


def load_snapshot(session: Session, snapshot: spec.ConfigSnapshot) -> None:
    """Make the candidate equal `snapshot`, keeping the ids of objects that survive.

    Services match by name, backends by (address, port), VIP groups by name, so a rollback or a
    peer's revision leaves URLs and UI selections of unchanged objects intact.
    """
    existing = {s.name: s for s in list_services(session)}
    wanted = {s.name for s in snapshot.services}
    for name, row in existing.items():
        if name not in wanted:
            session.delete(row)
    session.flush()
    # Free unique fwmarks first so two services can swap marks within one load.
    for row in existing.values():
        if row.name in wanted:
            row.fwmark = None
    session.flush()
    for service in snapshot.services:
        row = existing.get(service.name) or Service()
        write_service(row, service)
        if row.id is None:
            session.add(row)
        _load_backends(session, row, service.backends)
    groups = {g.name: g for g in list_vip_groups(session)}
    for name, group_row in groups.items():
        if name not in {g.name for g in snapshot.vip_groups}:
            session.delete(group_row)
    for group in snapshot.vip_groups:
        group_row = groups.get(group.name) or VipGroup()
        write_vip_group(group_row, group)
        if group_row.id is None:
            session.add(group_row)
    node_row(session).settings = snapshot.node.model_dump(mode="json")
    firewall_row(session).settings = snapshot.firewall.model_dump(mode="json")
    store_network(session, snapshot.network)
    store_bgp(session, snapshot.bgp)
    session.flush()


def _load_backends(session: Session, service: Service, backends: list[spec.Backend]) -> None:
    existing = {(b.address, b.port): b for b in service.backends}
    wanted = {(str(b.address), b.port) for b in backends}
    for key, stale in existing.items():
        if key not in wanted:
            service.backends.remove(stale)
    session.flush()
    for backend in backends:
        row = existing.get((str(backend.address), backend.port))
        if row is None:
            row = Backend()
            service.backends.append(row)
        write_backend(row, backend)
