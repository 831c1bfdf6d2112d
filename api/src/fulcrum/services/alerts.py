"""Alert channels and rules: CRUD (audited, secrets never logged) and the test button."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.alerts import senders
from fulcrum.alerts.message import Alert
from fulcrum.alerts.outbox import mark_failed, newest_event_id
from fulcrum.db import begin_write, end_read
from fulcrum.errors import ConfigInvalid, Conflict, NotFound
from fulcrum.models import AlertChannel, AlertRule
from fulcrum.models._types import utcnow
from fulcrum.schemas.alerts import ChannelWrite, RuleWrite, TestResult
from fulcrum.services import audit
from fulcrum.services.ha_config import get_node


def list_channels(session: Session) -> list[AlertChannel]:
    return list(session.scalars(select(AlertChannel).order_by(AlertChannel.name)))


def get_channel(session: Session, channel_id: int) -> AlertChannel:
    channel = session.get(AlertChannel, channel_id)
    if channel is None:
        raise NotFound(f"no alert channel with id {channel_id}")
    return channel


def _check(session: Session, body: ChannelWrite, secret: str | None, channel_id: int | None = None) -> None:
    clash = session.scalar(select(AlertChannel.id).where(AlertChannel.name == body.name))
    if clash is not None and clash != channel_id:
        raise Conflict(f"an alert channel named {body.name} exists already")
    if body.config.type == "webhook" and secret is None:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "secret"],
                    "msg": "a webhook needs a secret: its requests are signed with it",
                    "type": "missing",
                }
            ]
        )


def _audited(channel: AlertChannel) -> dict[str, object]:
    return {
        "type": channel.type,
        "enabled": channel.enabled,
        "config": channel.config,
        "has_secret": channel.has_secret,
    }


def create_channel(session: Session, actor: audit.Actor, body: ChannelWrite) -> AlertChannel:
    _check(session, body, body.secret)
    # A new channel alerts on what happens from now on, not on the history.
    channel = AlertChannel(
        name=body.name,
        type=body.config.type,
        enabled=body.enabled,
        config=body.config.model_dump(),
        secret=body.secret,
        last_event_id=newest_event_id(session),
    )
    session.add(channel)
    session.flush()
    audit.record(session, actor, "alert_channel.create", channel.name, _audited(channel))
    return channel


def replace_channel(
    session: Session, actor: audit.Actor, channel_id: int, body: ChannelWrite
) -> AlertChannel:
    channel = get_channel(session, channel_id)
    # The secret belongs to the destination: changing the channel's type drops the stored one.
    kept = channel.secret if body.config.type == channel.type else None
    secret = body.secret if body.secret is not None else kept
    _check(session, body, secret, channel_id)
    channel.name, channel.type, channel.enabled = body.name, body.config.type, body.enabled
    channel.config, channel.secret = body.config.model_dump(), secret
    session.flush()
    audit.record(
        session,
        actor,
        "alert_channel.update",
        channel.name,
        {**_audited(channel), "secret_changed": body.secret is not None},
    )
    return channel


def delete_channel(session: Session, actor: audit.Actor, channel_id: int) -> None:
    channel = get_channel(session, channel_id)
    session.delete(channel)
    session.flush()
    audit.record(session, actor, "alert_channel.delete", channel.name)


def test_channel(session: Session, actor: audit.Actor, channel_id: int) -> TestResult:
    """Send a test alert and report the server's answer. The request's session is a reader here
    (writes_late): it ends before the send, so no lock is held while a server takes its time."""
    channel = get_channel(session, channel_id)
    name, kind, config, secret = channel.name, channel.type, dict(channel.config), channel.secret
    node = get_node(session).name
    end_read(session)
    now = utcnow()
    alert = Alert(node, "test", "info", f"test alert from Fulcrum node {node} to channel {name}", now)
    try:
        result = TestResult(ok=True, answer=senders.send(kind, config, secret, alert))
    except senders.DeliveryFailed as exc:
        result = TestResult(ok=False, answer=str(exc)[:500])
    begin_write(session)
    if result.ok:
        channel = get_channel(session, channel_id)
        channel.last_success_at = now
    else:
        mark_failed(session, channel_id, result.answer, now)
    audit.record(
        session,
        actor,
        "alert_channel.test",
        name,
        {"ok": result.ok, "answer": result.answer},
        success=result.ok,
    )
    return result


def list_rules(session: Session) -> list[AlertRule]:
    return list(session.scalars(select(AlertRule).order_by(AlertRule.id)))


def get_rule(session: Session, rule_id: int) -> AlertRule:
    rule = session.get(AlertRule, rule_id)
    if rule is None:
        raise NotFound(f"no alert rule with id {rule_id}")
    return rule


def _rule_fields(session: Session, body: RuleWrite) -> dict[str, object]:
    if session.get(AlertChannel, body.channel_id) is None:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "channel_id"],
                    "msg": f"no alert channel with id {body.channel_id}",
                    "type": "not_found",
                }
            ]
        )
    return {
        "channel_id": body.channel_id,
        "kinds": sorted(set(body.kinds)),
        "min_severity": body.min_severity.value,
        "reminder_minutes": body.reminder_minutes,
    }


def create_rule(session: Session, actor: audit.Actor, body: RuleWrite) -> AlertRule:
    rule = AlertRule(**_rule_fields(session, body))
    session.add(rule)
    session.flush()
    audit.record(session, actor, "alert_rule.create", f"rule {rule.id}", body.model_dump(mode="json"))
    return rule


def replace_rule(session: Session, actor: audit.Actor, rule_id: int, body: RuleWrite) -> AlertRule:
    rule = get_rule(session, rule_id)
    for field, value in _rule_fields(session, body).items():
        setattr(rule, field, value)
    session.flush()
    audit.record(session, actor, "alert_rule.update", f"rule {rule.id}", body.model_dump(mode="json"))
    return rule


def delete_rule(session: Session, actor: audit.Actor, rule_id: int) -> None:
    rule = get_rule(session, rule_id)
    session.delete(rule)
    session.flush()
    audit.record(session, actor, "alert_rule.delete", f"rule {rule_id}")
