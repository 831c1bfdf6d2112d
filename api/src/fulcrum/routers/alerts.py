"""Alert channels and rules (admin). Node-local: not shared configuration, so a standby takes them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status

from fulcrum.db import SessionDep, writes_late
from fulcrum.deps import ActorDep, Admin
from fulcrum.openapi import NOT_FOUND, error
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import RowId
from fulcrum.schemas.alerts import (
    ChannelRead,
    ChannelsList,
    ChannelWrite,
    RuleRead,
    RulesList,
    RuleWrite,
    TestResult,
)
from fulcrum.services import alerts

router = APIRouter(prefix="/alerts", tags=["alerts"], responses=NOT_FOUND)
NAME_TAKEN: dict[int | str, dict[str, Any]] = {409: error("Another alert channel has this name")}


@router.get("/channels", summary="Alert channels, with their last delivery outcome")
def list_channels(session: SessionDep, _: Admin) -> ChannelsList:
    rows = alerts.list_channels(session)
    return ChannelsList(data=[ChannelRead.model_validate(c) for c in rows], count=len(rows))


@router.post(
    "/channels", status_code=status.HTTP_201_CREATED, responses=NAME_TAKEN, summary="Add an alert channel"
)
@any_node  # alert channels and rules are this node's own (not replicated)
def create_channel(body: ChannelWrite, session: SessionDep, _: Admin, actor: ActorDep) -> ChannelRead:
    return ChannelRead.model_validate(alerts.create_channel(session, actor, body))


@router.get("/channels/{channel_id}", summary="One alert channel")
def get_channel(channel_id: RowId, session: SessionDep, _: Admin) -> ChannelRead:
    return ChannelRead.model_validate(alerts.get_channel(session, channel_id))


@router.put(
    "/channels/{channel_id}",
    responses=NAME_TAKEN,
    summary="Replace an alert channel (a left-out secret is kept)",
)
@any_node
def replace_channel(
    channel_id: RowId, body: ChannelWrite, session: SessionDep, _: Admin, actor: ActorDep
) -> ChannelRead:
    return ChannelRead.model_validate(alerts.replace_channel(session, actor, channel_id, body))


@router.delete(
    "/channels/{channel_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove an alert channel and its rules",
)
@any_node
def delete_channel(channel_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    alerts.delete_channel(session, actor, channel_id)


@router.post("/channels/{channel_id}/test", summary="Send a test alert and report the server's answer")
@writes_late
@any_node
def test_channel(channel_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> TestResult:
    return alerts.test_channel(session, actor, channel_id)


@router.get("/rules", summary="Alert rules: which events go to which channel")
def list_rules(session: SessionDep, _: Admin) -> RulesList:
    rows = alerts.list_rules(session)
    return RulesList(data=[RuleRead.model_validate(r) for r in rows], count=len(rows))


@router.post("/rules", status_code=status.HTTP_201_CREATED, summary="Add an alert rule")
@any_node
def create_rule(body: RuleWrite, session: SessionDep, _: Admin, actor: ActorDep) -> RuleRead:
    return RuleRead.model_validate(alerts.create_rule(session, actor, body))


@router.put("/rules/{rule_id}", summary="Replace an alert rule")
@any_node
def replace_rule(rule_id: RowId, body: RuleWrite, session: SessionDep, _: Admin, actor: ActorDep) -> RuleRead:
    return RuleRead.model_validate(alerts.replace_rule(session, actor, rule_id, body))


@router.delete("/rules/{rule_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Remove an alert rule")
@any_node
def delete_rule(rule_id: RowId, session: SessionDep, _: Admin, actor: ActorDep) -> None:
    alerts.delete_rule(session, actor, rule_id)
