"""Alert channels and rules through the API: write-only secrets, audit, hostile input, and the
test button against real local servers (SMTP sink, HTTP receiver, syslog receivers)."""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient

from fulcrum.models.event_kinds import EventKind
from lab.alert_receivers import free_port, smtp_sink, syslog_receiver, webhook_receiver
from apitest import login_as

CHANNELS = "/api/v1/alerts/channels"
RULES = "/api/v1/alerts/rules"


def smtp_channel(port: int, **config: Any) -> dict[str, Any]:
    return {
        "name": "mail",
        "config": {
            "type": "smtp",
            "host": "127.0.0.1",
            "port": port,
            "security": "none",
            "from_address": "lb@example.org",
            "to_addresses": ["ops@example.org"],
            **config,
        },
    }


def created(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(CHANNELS, json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_secrets_are_write_only_and_changes_are_audited(client: TestClient) -> None:
    body = {
        "name": "hook",
        "config": {"type": "webhook", "url": "https://hooks.example.org/x"},
        "secret": "s3cr3t-value",
    }
    channel = created(client, body)
    assert channel["has_secret"] is True and "secret" not in channel
    replaced = client.put(f"{CHANNELS}/{channel['id']}", json={**body, "secret": None, "enabled": False})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["has_secret"] is True, "a PUT without a secret keeps the stored one"
    everything = json.dumps(
        [
            client.get(CHANNELS).json(),
            client.get(f"{CHANNELS}/{channel['id']}").json(),
            client.get("/api/v1/audit").json(),
        ]
    )
    assert "s3cr3t-value" not in everything
    actions = [e["action"] for e in client.get("/api/v1/audit").json()["data"]]
    assert "alert_channel.create" in actions and "alert_channel.update" in actions
    rule = client.post(
        RULES, json={"channel_id": channel["id"], "kinds": ["backend_down"], "reminder_minutes": 30}
    )
    assert rule.status_code == 201, rule.text
    assert client.delete(f"{CHANNELS}/{channel['id']}").status_code == 204
    assert client.get(RULES).json()["count"] == 0, "a channel's rules go with it"


def test_only_admins_manage_alerts(client: TestClient) -> None:
    operator = login_as(client, "olga", "operator")
    assert operator.get(CHANNELS).status_code == 403
    assert operator.post(CHANNELS, json=smtp_channel(25)).status_code == 403


HOSTILE: list[tuple[dict[str, Any], str]] = [
    (smtp_channel(25, to_addresses=["ops@example.org\r\nBcc: victim@example.org"]), "to_addresses"),
    (smtp_channel(25, from_address="lb@example.org\r\nSubject: hi"), "from_address"),
    (smtp_channel(25, from_address="Mallory <lb@example.org>"), "from_address"),
    (smtp_channel(25, username="admin\r\nRSET"), "username"),
    (smtp_channel(25, host="mail example.org"), "host"),
    (smtp_channel(25, host="mail.example.org\nDATA"), "host"),
    (smtp_channel(0), "port"),
    (smtp_channel(70000), "port"),
    (smtp_channel(25, security="ssl3"), "security"),
    ({"name": "h", "config": {"type": "webhook", "url": "ftp://example.org/x"}, "secret": "k"}, "url"),
    ({"name": "h", "config": {"type": "webhook", "url": "file:///etc/passwd"}, "secret": "k"}, "url"),
    ({"name": "h", "config": {"type": "webhook", "url": "javascript:alert(1)"}, "secret": "k"}, "url"),
    (
        {"name": "h", "config": {"type": "webhook", "url": "https://user:pw@example.org/x"}, "secret": "k"},
        "url",
    ),
    (
        {"name": "h", "config": {"type": "webhook", "url": "https://example.org:99999/x"}, "secret": "k"},
        "url",
    ),
    ({"name": "h", "config": {"type": "webhook", "url": "https://exa mple.org/x"}, "secret": "k"}, "url"),
    (
        {
            "name": "h",
            "config": {"type": "webhook", "url": "https://example.org/x\r\nX-Evil: 1"},
            "secret": "k",
        },
        "url",
    ),
    ({"name": "h", "config": {"type": "webhook", "url": "https://example.org/x"}}, "secret"),
    (
        {"name": "h", "config": {"type": "webhook", "url": "https://example.org/x"}, "secret": "a\nb"},
        "secret",
    ),
    ({"name": "s", "config": {"type": "syslog", "host": "log host"}}, "host"),
    ({"name": "s", "config": {"type": "syslog", "host": "log.example.org", "port": 65536}}, "port"),
    (
        {"name": "s", "config": {"type": "syslog", "host": "log.example.org", "transport": "relp"}},
        "transport",
    ),
    ({"name": "s", "config": {"type": "syslog", "host": "log.example.org", "facility": 24}}, "facility"),
    ({"name": "bad name", "config": {"type": "syslog", "host": "log.example.org"}}, "name"),
    ({"name": "s", "config": {"type": "snmp", "host": "log.example.org"}}, "config"),
]


@pytest.mark.parametrize(("body", "field"), HOSTILE)
def test_hostile_channels_are_refused_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    response = client.post(CHANNELS, json=body)
    assert response.status_code == 422, response.text
    assert any(field in map(str, error["loc"]) for error in response.json()["detail"]), response.text
    assert client.get(CHANNELS).json()["count"] == 0


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"kinds": ["rm -rf"]}, "kinds"),
        ({"kinds": []}, "kinds"),
        ({"kinds": ["backend_down"], "min_severity": "loud"}, "min_severity"),
        ({"kinds": ["backend_down"], "reminder_minutes": 0}, "reminder_minutes"),
        ({"kinds": ["backend_down"], "reminder_minutes": 10081}, "reminder_minutes"),
        ({"kinds": ["backend_down"], "channel_id": 999}, "channel_id"),
    ],
)
def test_hostile_rules_are_refused_naming_the_field(
    client: TestClient, rule: dict[str, Any], field: str
) -> None:
    channel = created(client, smtp_channel(25))
    response = client.post(RULES, json={"channel_id": channel["id"], **rule})
    assert response.status_code == 422, response.text
    assert any(field in map(str, error["loc"]) for error in response.json()["detail"]), response.text


def test_the_test_button_reports_the_smtp_servers_reply(client: TestClient) -> None:
    with smtp_sink(username="alerts", password="mail-pass") as sink:
        channel = created(client, {**smtp_channel(sink.port, username="alerts"), "secret": "mail-pass"})
        result = client.post(f"{CHANNELS}/{channel['id']}/test")
    assert result.status_code == 200, result.text
    assert result.json() == {"ok": True, "answer": "250 OK queued as test-1"}
    assert sink.logins == [("alerts", "mail-pass")]
    assert sink.envelopes == [("lb@example.org", ["ops@example.org"])]
    assert sink.messages[0]["Subject"].startswith("[fulcrum] INFO: test alert")
    assert client.get(f"{CHANNELS}/{channel['id']}").json()["last_success_at"] is not None
    assert "alert_channel.test" in [e["action"] for e in client.get("/api/v1/audit").json()["data"]]


def test_the_test_button_reports_a_refused_login_and_keeps_it_as_the_last_error(client: TestClient) -> None:
    with smtp_sink(username="alerts", password="mail-pass") as sink:
        channel = created(client, {**smtp_channel(sink.port, username="alerts"), "secret": "wrong"})
        result = client.post(f"{CHANNELS}/{channel['id']}/test").json()
    assert result["ok"] is False and "535" in result["answer"], result
    shown = client.get(f"{CHANNELS}/{channel['id']}").json()
    assert shown["last_error"] == result["answer"] and shown["last_error_at"] is not None
    assert sink.messages == []


def test_the_test_button_signs_the_webhook_and_reports_the_http_status(client: TestClient) -> None:
    with webhook_receiver("hook-key", status=202) as receiver:
        channel = created(
            client, {"name": "hook", "config": {"type": "webhook", "url": receiver.url}, "secret": "hook-key"}
        )
        result = client.post(f"{CHANNELS}/{channel['id']}/test").json()
    assert result == {"ok": True, "answer": "HTTP 202 Accepted"}
    assert receiver.bad_signatures == 0 and receiver.bodies[0]["kind"] == "test"


def test_an_edit_that_leaves_the_secret_out_still_signs_with_the_stored_one(client: TestClient) -> None:
    """The dashboard's edit form sends no secret when its field is left empty."""
    with webhook_receiver("hook-key", status=202) as receiver:
        hook = {"type": "webhook", "url": receiver.url}
        channel = created(client, {"name": "hook", "config": hook, "secret": "hook-key"})
        edited = client.put(f"{CHANNELS}/{channel['id']}", json={"name": "renamed", "config": hook})
        assert edited.status_code == 200, edited.text
        assert edited.json()["name"] == "renamed" and edited.json()["has_secret"] is True
        result = client.post(f"{CHANNELS}/{channel['id']}/test").json()
    assert result == {"ok": True, "answer": "HTTP 202 Accepted"}
    assert receiver.bad_signatures == 0


def test_a_wrong_webhook_secret_is_refused_by_the_receiver_and_reported(client: TestClient) -> None:
    with webhook_receiver("hook-key") as receiver:
        channel = created(
            client, {"name": "hook", "config": {"type": "webhook", "url": receiver.url}, "secret": "other"}
        )
        result = client.post(f"{CHANNELS}/{channel['id']}/test").json()
    assert result == {"ok": False, "answer": "HTTP 401 Unauthorized"}
    assert receiver.bad_signatures == 1, "a 4xx is not retried"


def test_an_unreachable_webhook_is_reported_not_a_server_error(client: TestClient) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"
    channel = created(client, {"name": "hook", "config": {"type": "webhook", "url": url}, "secret": "k"})
    result = client.post(f"{CHANNELS}/{channel['id']}/test")
    assert result.status_code == 200 and result.json()["ok"] is False
    assert "ConnectionRefused" in result.json()["answer"]


SYSLOG_LINE = re.compile(
    rb"^<(\d+)>1 \S+ fulcrum fulcrum - test - test alert from Fulcrum node fulcrum to channel log$"
)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_the_test_button_sends_one_rfc5424_syslog_line(client: TestClient, transport: str) -> None:
    with syslog_receiver(transport) as receiver:
        channel = created(
            client,
            {
                "name": "log",
                "config": {
                    "type": "syslog",
                    "host": "127.0.0.1",
                    "port": receiver.port,
                    "transport": transport,
                },
            },
        )
        result = client.post(f"{CHANNELS}/{channel['id']}/test").json()
        assert receiver.received.wait(5)
    assert result["ok"] is True and result["answer"].startswith(
        f"sent {len(receiver.lines[0])} bytes over {transport}"
    )
    assert len(receiver.lines) == 1
    match = SYSLOG_LINE.match(receiver.lines[0])
    assert match is not None, receiver.lines
    assert int(match.group(1)) == 16 * 8 + 6  # local0.info


def test_every_event_kind_can_be_alerted_on(client: TestClient) -> None:
    # One list of kinds (fulcrum.models.event_kinds) for the recorders and the rules.
    hook = {"type": "webhook", "url": "https://hooks.example.org/x"}
    channel = created(client, {"name": "hook", "config": hook, "secret": "hook-key"})
    kinds = list(get_args(EventKind))
    assert {"apply.failed", "revision.confirm_reverted", "disk.filling", "upgrade.result"} <= set(kinds)
    rule = client.post(RULES, json={"channel_id": channel["id"], "kinds": kinds})
    assert rule.status_code == 201, rule.text
    assert client.post(RULES, json={"channel_id": channel["id"], "kinds": ["disk.full"]}).status_code == 422
