"""Business rules for VIP groups, node-local settings and the management firewall policy."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.config import snapshot as spec
from fulcrum.errors import ConfigInvalid, NotFound
from fulcrum.models import VipGroup
from fulcrum.models.ha import HaPairing
from fulcrum.services import audit
from fulcrum.services.candidate import (
    check_groups_and_node,
    firewall_row,
    firewall_settings,
    node_row,
    node_settings,
    vip_group_spec,
    write_vip_group,
)
from fulcrum.services.validation import validated


def get_vip_group(session: Session, group_id: int) -> VipGroup:
    group = session.get(VipGroup, group_id)
    if group is None:
        raise NotFound(f"VIP group {group_id} does not exist")
    return group


def create_vip_group(session: Session, actor: audit.Actor, request: BaseModel) -> VipGroup:
    group = validated(lambda: spec.VipGroup.model_validate(request.model_dump(mode="json")))
    _name_is_free(session, group.name, None)
    row = VipGroup()
    write_vip_group(row, group)
    session.add(row)
    _check(session, row)
    audit.record(session, actor, "vip_group.create", group.name, {"after": group.model_dump(mode="json")})
    return row


def update_vip_group(session: Session, actor: audit.Actor, group_id: int, request: BaseModel) -> VipGroup:
    row = get_vip_group(session, group_id)
    before = vip_group_spec(row).model_dump(mode="json")
    data = {**before, **request.model_dump(mode="json", exclude_unset=True)}
    group = validated(lambda: spec.VipGroup.model_validate(data))
    _name_is_free(session, group.name, row.id)
    write_vip_group(row, group)
    _check(session, row)
    audit.record(session, actor, "vip_group.update", group.name, {"before": before, "after": data})
    return row


def delete_vip_group(session: Session, actor: audit.Actor, group_id: int) -> None:
    row = get_vip_group(session, group_id)
    session.delete(row)
    session.flush()
    audit.record(session, actor, "vip_group.delete", row.name)


def _name_is_free(session: Session, name: str, own_id: int | None) -> None:
    existing = session.scalar(select(VipGroup.id).where(VipGroup.name == name))
    if existing is not None and existing != own_id:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "name"],
                    "msg": f"a VIP group named {name!r} exists already",
                    "type": "value_error",
                }
            ]
        )


def _check(session: Session, row: VipGroup) -> None:
    check_groups_and_node(session, focus_group=row.name)


def get_node(session: Session) -> spec.Node:
    return spec.Node.model_validate(node_settings(session))


def set_node(session: Session, actor: audit.Actor, request: BaseModel) -> spec.Node:
    data = request.model_dump(mode="json")
    _refuse_member_rename(session, data.get("name"))
    return _store_singleton(session, actor, "node.update", node_row(session), spec.Node, data)


def update_node(session: Session, actor: audit.Actor, request: BaseModel) -> spec.Node:
    """Only the fields the request sets change; the merged settings are validated as a whole."""
    data = {
        **get_node(session).model_dump(mode="json"),
        **request.model_dump(mode="json", exclude_unset=True),
    }
    _refuse_member_rename(session, data.get("name"))
    return _store_singleton(session, actor, "node.update", node_row(session), spec.Node, data)


def _refuse_member_rename(session: Session, name: object) -> None:
    """A cluster's writer finds a member's key by the name the member signs its requests with
    (fulcrum.routers.peer): renamed, the member could no longer reach it."""
    pairing = session.get(HaPairing, 1)
    current = get_node(session).name
    if pairing is None or not pairing.cluster_writer or name == current:
        return
    raise ConfigInvalid(
        [{"loc": ["body", "name"], "type": "value_error",
          "msg": f"this node is a member of the cluster led by {pairing.peer_name}, which knows it as "
                 f"{current}; leave the cluster (or have {pairing.peer_name} remove it) to rename it"}]
    )  # fmt: skip


def get_firewall(session: Session) -> spec.Firewall:
    return spec.Firewall.model_validate(firewall_settings(session))


def set_firewall(session: Session, actor: audit.Actor, request: BaseModel) -> spec.Firewall:
    return _store_singleton(
        session,
        actor,
        "firewall.update",
        firewall_row(session),
        spec.Firewall,
        request.model_dump(mode="json"),
    )


def _store_singleton(
    session: Session, actor: audit.Actor, action: str, row: Any, model: type[BaseModel], data: dict[str, Any]
) -> Any:
    before = dict(row.settings)
    value = validated(lambda: model.model_validate(data))
    row.settings = value.model_dump(mode="json")
    check_groups_and_node(session)
    audit.record(session, actor, action, "", {"before": before, "after": row.settings})
    return value
