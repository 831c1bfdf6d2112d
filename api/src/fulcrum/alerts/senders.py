"""Sending one alert over one channel; each returns the server's answer or raises DeliveryFailed.

Blocking (stdlib smtplib, http.client, sockets) with timeouts: the dispatcher runs them in its
own thread and the test button in the request's worker thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import smtplib
import socket
import ssl
import time
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from email.utils import format_datetime, make_msgid
from typing import Any
from urllib.parse import urlsplit

from fulcrum.alerts.message import Alert, one_line

TIMEOUT = 10.0
WEBHOOK_ATTEMPTS = 3
WEBHOOK_BACKOFF = 1.0  # seconds before the second attempt; doubled for each one after
SIGNATURE_HEADER = "X-Fulcrum-Signature"
MAX_SYSLOG_UDP = 2048  # RFC 5424 6.1: receivers must accept 480 octets, should accept 2048
SYSLOG_SEVERITY = {"critical": 2, "warning": 4, "info": 6}


class DeliveryFailed(Exception):
    pass


def send(channel_type: str, config: dict[str, Any], secret: str | None, alert: Alert) -> str:
    try:
        if channel_type == "smtp":
            return send_email(config, secret, alert)
        if channel_type == "webhook":
            return send_webhook(config, secret, alert)
        if channel_type == "syslog":
            return send_syslog(config, alert)
    except (OSError, smtplib.SMTPException, http.client.HTTPException) as exc:
        raise DeliveryFailed(_described(exc, config)) from exc
    raise DeliveryFailed(f"unknown channel type {channel_type}")


def _described(exc: Exception, config: dict[str, Any]) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ssl.SSLCertVerificationError) and not config.get("ca_certificate"):
        text += "; if the server's certificate is from a private CA, set the channel's CA certificate"
    return text


def _tls_context(config: dict[str, Any]) -> ssl.SSLContext:
    """The channel's own CAs when it has them (a private CA), else the system's. Either way the
    server's certificate must name the host the channel connects to."""
    return ssl.create_default_context(cadata=config.get("ca_certificate"))


# --- e-mail ---------------------------------------------------------------------------------------


def email_message(config: dict[str, Any], alert: Alert) -> EmailMessage:
    # The SMTP policy refuses a header value with a line break: a second guard behind validation.
    message = EmailMessage(policy=SMTP_POLICY)
    message["Subject"] = alert.subject
    message["From"] = config["from_address"]
    message["To"] = ", ".join(config["to_addresses"])
    message["Date"] = format_datetime(alert.at)
    message["Message-ID"] = make_msgid(domain=config["from_address"].rpartition("@")[2])
    lines = [
        alert.text,
        "",
        f"node: {alert.node}",
        f"event: {alert.kind} ({alert.severity})",
        f"at: {alert.at.isoformat()}",
    ]
    if alert.service:
        lines.append(f"service: {one_line(alert.service)}")
    if alert.backend:
        lines.append(f"backend: {one_line(alert.backend)}")
    message.set_content("\n".join(lines) + "\n")
    return message


def send_email(config: dict[str, Any], password: str | None, alert: Alert) -> str:
    context = _tls_context(config)
    host, port, security = config["host"], config["port"], config["security"]
    smtp = (
        smtplib.SMTP_SSL(host, port, timeout=TIMEOUT, context=context)
        if security == "tls"
        else smtplib.SMTP(host, port, timeout=TIMEOUT)
    )
    with smtp:
        smtp.ehlo()
        if security == "starttls":
            smtp.starttls(context=context)
            smtp.ehlo()
        if config.get("username"):
            smtp.login(config["username"], password or "")
        # The envelope step by step rather than sendmail(), to report the server's own final reply.
        _expect(smtp.mail(config["from_address"]), (250,), "MAIL FROM")
        for recipient in config["to_addresses"]:
            _expect(smtp.rcpt(recipient), (250, 251), f"RCPT TO {recipient}")
        code, reply = _expect(smtp.data(email_message(config, alert).as_bytes()), (250,), "DATA")
    return f"{code} {reply}"


def _expect(answer: tuple[int, bytes], codes: tuple[int, ...], step: str) -> tuple[int, str]:
    code, raw = answer
    reply = one_line(raw.decode("utf-8", "replace"))
    if code not in codes:
        raise DeliveryFailed(f"{step}: the server answered {code} {reply}")
    return code, reply


# --- webhooks -------------------------------------------------------------------------------------


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send_webhook(config: dict[str, Any], secret: str | None, alert: Alert) -> str:
    """POST the alert as JSON, signed; retried with back-off on a connection error, a 5xx or a
    429. Redirects are not followed: the answer is reported as it is."""
    body = json.dumps(alert.as_json(), sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "fulcrum-alerts"}
    if secret is not None:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    error = ""
    for attempt in range(WEBHOOK_ATTEMPTS):
        if attempt:
            time.sleep(WEBHOOK_BACKOFF * 2 ** (attempt - 1))
        try:
            status, reason = _post(config["url"], body, headers, _tls_context(config))
        except ssl.SSLCertVerificationError as exc:
            raise DeliveryFailed(_described(exc, config)) from exc  # refused again if sent again
        except (OSError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"
            continue
        if 200 <= status < 300:
            return f"HTTP {status} {reason}".strip()
        error = f"HTTP {status} {reason}".strip()
        if status < 500 and status != 429:
            break  # the receiver refused this request: sending it again will not help
    raise DeliveryFailed(error)


def _post(url: str, body: bytes, headers: dict[str, str], context: ssl.SSLContext) -> tuple[int, str]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, parts.port, timeout=TIMEOUT, context=context)
    else:
        connection = http.client.HTTPConnection(host, parts.port, timeout=TIMEOUT)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)
        return response.status, one_line(response.reason or "")[:100]
    finally:
        connection.close()


# --- syslog ---------------------------------------------------------------------------------------


def _header_token(text: str, limit: int) -> str:
    """An RFC 5424 header field: printable US-ASCII without spaces, or the NILVALUE '-'."""
    kept = "".join(ch for ch in text if 33 <= ord(ch) <= 126)[:limit]
    return kept or "-"


def syslog_line(config: dict[str, Any], alert: Alert) -> bytes:
    priority = config["facility"] * 8 + SYSLOG_SEVERITY.get(alert.severity, 6)
    timestamp = alert.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    hostname, msgid = _header_token(alert.node, 255), _header_token(alert.kind, 32)
    header = f"<{priority}>1 {timestamp} {hostname} fulcrum - {msgid} -"  # no PROCID, no structured data
    # MSG: one line, so a receiver reading newline-separated records cannot be handed two.
    return f"{header} {alert.text}".encode()


def _close_after_receiver(sock: ssl.SSLSocket) -> None:
    """End a TLS connection once the receiver has closed its side. A TLS 1.3 server sends its
    session tickets after the handshake; closing with them unread makes the kernel answer with a
    reset instead of a FIN, and the receiver sees a connection reset instead of the end of the
    line (measured against a Node TLS receiver: 107 resets in 300 sends). So: half-close, read
    what is left (raw bytes: only the end matters) until the receiver closes, within TIMEOUT."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)  # the TLS layer is done; this is the TCP socket's FIN
        while sock.recv(4096):
            pass


def send_syslog(config: dict[str, Any], alert: Alert) -> str:
    line = syslog_line(config, alert)
    host, port, transport = config["host"], config["port"], config["transport"]
    if transport == "udp":
        line = line[:MAX_SYSLOG_UDP]
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.settimeout(TIMEOUT)
            sock.sendto(line, address)
    else:
        framed = f"{len(line)} ".encode() + line  # octet counting (RFC 6587 3.4.1, RFC 5425)
        with socket.create_connection((host, port), timeout=TIMEOUT) as raw:
            if transport == "tls":
                with _tls_context(config).wrap_socket(raw, server_hostname=host) as sock:
                    sock.sendall(framed)
                    _close_after_receiver(sock)
            else:
                raw.sendall(framed)
    return f"sent {len(line)} bytes over {transport} to {host}:{port}"
