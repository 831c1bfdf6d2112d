"""Alert channels over TLS against real TLS servers whose certificates a private CA made in the
test: SMTP with STARTTLS and AUTH, SMTP with implicit TLS, HTTPS webhooks and syslog over TLS
(RFC 5425). With the channel's `ca_certificate` they deliver; without it, or to a server whose
certificate names another host, the test button reports the verification error."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fulcrum.alerts import senders
from certmaker import Issued, issue, key_pem, pem, server_context
from lab.alert_receivers import smtp_sink, syslog_receiver, webhook_receiver

CHANNELS = "/api/v1/alerts/channels"
SYSLOG_RECORD = re.compile(
    rb"^<134>1 \S+ fulcrum fulcrum - test - test alert from Fulcrum node fulcrum to channel tls-channel$"
)


@dataclass
class PrivateCa:
    root: Issued
    ca_pem: str
    for_localhost: Issued
    for_another_host: Issued


@pytest.fixture(scope="module")
def private_ca() -> PrivateCa:
    root = issue("Office Root CA", ca=True)
    return PrivateCa(
        root=root,
        ca_pem=pem(root.certificate),
        for_localhost=issue("localhost", root, names=["localhost", "127.0.0.1"]),
        for_another_host=issue("mail.example.net", root, names=["mail.example.net"]),
    )


@dataclass
class Delivery:
    """What a channel of one kind needs to reach a running TLS server, and what that server got."""

    config: dict[str, Any]
    secret: str | None
    receiver: Any  # the SmtpSink, WebhookReceiver or SyslogReceiver
    delivered: Callable[[], list[Any]]


def _smtp(port: int, host: str, **config: Any) -> dict[str, Any]:
    return {
        "type": "smtp",
        "host": host,
        "port": port,
        "from_address": "lb@example.org",
        "to_addresses": ["ops@example.org"],
        **config,
    }


@contextmanager
def smtp_starttls(server: Issued) -> Iterator[Delivery]:
    with smtp_sink(username="alerts", password="mail-pass", tls=server_context(server)) as sink:
        config = _smtp(sink.port, "127.0.0.1", security="starttls", username="alerts")
        yield Delivery(config, "mail-pass", sink, lambda: sink.messages)


@contextmanager
def smtp_implicit_tls(server: Issued) -> Iterator[Delivery]:
    with smtp_sink(tls=server_context(server), implicit_tls=True) as sink:
        yield Delivery(
            _smtp(sink.port, "localhost", security="tls"),
            None,
            sink,
            lambda: sink.messages,
        )


@contextmanager
def https_webhook(server: Issued) -> Iterator[Delivery]:
    with webhook_receiver("hook-key", tls=server_context(server)) as receiver:
        config = {"type": "webhook", "url": receiver.url}
        yield Delivery(config, "hook-key", receiver, lambda: receiver.bodies)


@contextmanager
def syslog_tls(server: Issued, after_handshake: bytes = b"") -> Iterator[Delivery]:
    with syslog_receiver("tcp", tls=server_context(server), after_handshake=after_handshake) as receiver:
        config = {
            "type": "syslog",
            "host": "127.0.0.1",
            "port": receiver.port,
            "transport": "tls",
        }
        yield Delivery(config, None, receiver, lambda: receiver.lines)


SERVERS: dict[str, Callable[[Issued], AbstractContextManager[Delivery]]] = {
    "smtp-starttls": smtp_starttls,
    "smtp-implicit-tls": smtp_implicit_tls,
    "https-webhook": https_webhook,
    "syslog-tls": syslog_tls,
}


def _test_button(client: TestClient, delivery: Delivery, ca_pem: str | None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {
        "name": "tls-channel",
        "config": {**delivery.config, "ca_certificate": ca_pem},
    }
    if delivery.secret:
        body["secret"] = delivery.secret
    response = client.post(CHANNELS, json=body)
    assert response.status_code == 201, response.text
    channel_id = response.json()["id"]
    result = client.post(f"{CHANNELS}/{channel_id}/test")
    assert result.status_code == 200, result.text
    return channel_id, result.json()


def test_smtp_with_starttls_logs_in_and_delivers_trusting_the_private_ca(
    client: TestClient, private_ca: PrivateCa
) -> None:
    with smtp_starttls(private_ca.for_localhost) as delivery:
        _, result = _test_button(client, delivery, private_ca.ca_pem)
    assert result == {"ok": True, "answer": "250 OK queued as test-1"}
    # The sink refuses AUTH and mail before STARTTLS: the login was made inside TLS.
    assert delivery.receiver.logins == [("alerts", "mail-pass")]
    assert "[fulcrum] INFO: test alert" in delivery.receiver.messages[0]["Subject"]


def test_smtp_with_implicit_tls_delivers_trusting_the_private_ca(
    client: TestClient, private_ca: PrivateCa
) -> None:
    with smtp_implicit_tls(private_ca.for_localhost) as delivery:
        _, result = _test_button(client, delivery, private_ca.ca_pem)
    assert result == {"ok": True, "answer": "250 OK queued as test-1"}
    messages = delivery.delivered()
    assert len(messages) == 1 and messages[0]["To"] == "ops@example.org"


def test_an_https_webhook_delivers_signed_trusting_the_private_ca(
    client: TestClient, private_ca: PrivateCa
) -> None:
    with https_webhook(private_ca.for_localhost) as delivery:
        _, result = _test_button(client, delivery, private_ca.ca_pem)
    assert delivery.receiver.url.startswith("https://")
    assert result == {"ok": True, "answer": "HTTP 200 OK"}
    assert delivery.receiver.bad_signatures == 0 and delivery.receiver.bodies[0]["kind"] == "test"


def test_syslog_over_tls_delivers_one_octet_counted_record_intact(
    client: TestClient, private_ca: PrivateCa
) -> None:
    with syslog_tls(private_ca.for_localhost) as delivery:
        _, result = _test_button(client, delivery, private_ca.ca_pem)
        assert delivery.receiver.received.wait(5)
    lines = delivery.delivered()
    assert result["ok"] is True, result
    assert result["answer"].startswith(f"sent {len(lines[0])} bytes over tls")
    assert len(lines) == 1 and SYSLOG_RECORD.match(lines[0]), lines


def test_syslog_over_tls_ends_each_connection_with_a_close_not_a_reset(
    client: TestClient, private_ca: PrivateCa
) -> None:
    """Closing with the receiver's TLS 1.3 session tickets unread made the kernel send a reset
    (a third of the connections, measured): a receiver logs a reset for every alert, and may drop
    what it had not read yet. The sender half-closes and waits for the receiver's close. (Python's
    TLS server sends its tickets within the handshake, so this receiver sends a record after it.)"""
    with syslog_tls(private_ca.for_localhost, after_handshake=b"a session ticket, say") as delivery:
        channel_id, _ = _test_button(client, delivery, private_ca.ca_pem)
        for _ in range(11):
            assert client.post(f"{CHANNELS}/{channel_id}/test").json()["ok"] is True
        deadline = time.monotonic() + 10
        while len(delivery.delivered()) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(delivery.delivered()) == 12 and delivery.receiver.resets == 0, (
        f"{len(delivery.delivered())} delivered, {delivery.receiver.resets} reset"
    )


@pytest.mark.parametrize("kind", SERVERS)
def test_without_the_private_ca_the_certificate_is_refused_and_reported(
    client: TestClient, private_ca: PrivateCa, kind: str
) -> None:
    with SERVERS[kind](private_ca.for_localhost) as delivery:
        channel_id, result = _test_button(client, delivery, None)
        assert delivery.delivered() == []
    assert result["ok"] is False
    assert "CERTIFICATE_VERIFY_FAILED" in result["answer"], result
    assert "set the channel's CA certificate" in result["answer"], result
    shown = client.get(f"{CHANNELS}/{channel_id}").json()
    assert shown["last_error"] == result["answer"] and shown["last_success_at"] is None


def test_a_refused_webhook_certificate_is_not_retried(
    client: TestClient, private_ca: PrivateCa, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Connection errors and 5xx are retried with back-off; the same certificate would be refused again.
    attempts: list[str] = []
    post = senders._post

    def counted(url: str, *rest: Any) -> tuple[int, str]:
        attempts.append(url)
        return post(url, *rest)

    monkeypatch.setattr(senders, "_post", counted)
    with https_webhook(private_ca.for_localhost) as delivery:
        _, result = _test_button(client, delivery, None)
    assert result["ok"] is False and "CERTIFICATE_VERIFY_FAILED" in result["answer"], result
    assert attempts == [delivery.config["url"]]


@pytest.mark.parametrize("kind", SERVERS)
def test_a_certificate_for_another_host_is_refused_even_from_the_trusted_ca(
    client: TestClient, private_ca: PrivateCa, kind: str
) -> None:
    with SERVERS[kind](private_ca.for_another_host) as delivery:
        _, result = _test_button(client, delivery, private_ca.ca_pem)
        assert delivery.delivered() == []
    assert result["ok"] is False
    assert "CERTIFICATE_VERIFY_FAILED" in result["answer"] and "mismatch" in result["answer"], result


def test_the_ca_certificate_is_shown_back_as_clean_pem(client: TestClient, private_ca: PrivateCa) -> None:
    intermediate = issue("Office Intermediate CA", private_ca.root, ca=True)
    pasted = f"subject=CN=Office Root CA\r\n{private_ca.ca_pem}\nissuer=...\n{pem(intermediate.certificate)}"
    config = {
        "type": "syslog",
        "host": "log.example.org",
        "transport": "tls",
        "ca_certificate": pasted,
    }
    created = client.post(CHANNELS, json={"name": "log", "config": config})
    assert created.status_code == 201, created.text
    expected = pem(private_ca.root.certificate, intermediate.certificate)
    assert created.json()["config"]["ca_certificate"] == expected
    assert client.get(f"{CHANNELS}/{created.json()['id']}").json()["config"]["ca_certificate"] == expected


CONFIGS: list[dict[str, Any]] = [
    {
        "type": "smtp",
        "host": "mail.example.org",
        "from_address": "a@b.org",
        "to_addresses": ["c@d.org"],
    },
    {"type": "webhook", "url": "https://hooks.example.org/x"},
    {"type": "syslog", "host": "log.example.org", "transport": "tls"},
]


def _bad_ca_certificates() -> list[Any]:
    """Each bad value against one of the three channel types in turn: all three check the field."""
    root = issue("Some Root", ca=True)
    leaf = issue("www.example.org", root, names=["www.example.org"])
    cases = [
        ("empty", "", "at least 1 character"),
        ("text", "not a certificate", "PEM certificates"),
        (
            "bad-der",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "PEM certificates",
        ),
        ("not-a-ca", pem(leaf.certificate), "is not a CA certificate"),
        ("with-a-key", pem(root.certificate) + key_pem(root.key), "not PRIVATE KEY"),
        ("too-large", pem(root.certificate) * 200, "at most 65536 characters"),
    ]
    return [
        pytest.param(CONFIGS[n % 3], value, message, id=f"{CONFIGS[n % 3]['type']}-{name}")
        for n, (name, value, message) in enumerate(cases)
    ]


@pytest.mark.parametrize(("config", "ca_certificate", "message"), _bad_ca_certificates())
def test_a_bad_ca_certificate_is_refused_naming_the_field(
    client: TestClient, config: dict[str, Any], ca_certificate: str, message: str
) -> None:
    body = {
        "name": "c",
        "config": {**config, "ca_certificate": ca_certificate},
        "secret": "k",
    }
    response = client.post(CHANNELS, json=body)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(
        error["loc"][1] == "config" and error["loc"][-1] == "ca_certificate" and message in error["msg"]
        for error in errors
    ), errors
    assert client.get(CHANNELS).json()["count"] == 0
