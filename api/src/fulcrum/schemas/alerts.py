"""Alert channels, rules and test results.

Every value that reaches an SMTP dialogue, an HTTP request or a syslog line is checked here
against a strict shape: no whitespace or control characters where a line break could start a new
header, command or record, and URLs only over http(s) without credentials in them.

A channel's `ca_certificate` (PEM, one or more CA certificates) replaces the system's CAs for its
TLS connections, for a mail server or log collector with a private CA; host names are still checked.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from fulcrum.alerts.kinds import AlertKind
from fulcrum.config.types import HOSTNAME_PATTERN, JsonInteger, Name, Port
from fulcrum.schemas.telemetry import Severity

_HOSTNAME = re.compile(HOSTNAME_PATTERN)
# A plain addr-spec: no display name, comments, quoting, spaces or line breaks (RFC 5321 limits).
EMAIL_PATTERN = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$"
MAX_URL = 2000
MAX_CA_PEM = 64 * 1024
_PEM_LABEL = re.compile(r"-----BEGIN ([^-\r\n]{1,64})-----")


def _host(value: str) -> str:
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if value in (".", "") or not _HOSTNAME.match(value):
        raise ValueError("expected a host name (letters, digits, '-', '.') or an IP address")
    return value


def _http_url(value: str) -> str:
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise ValueError("a URL may not contain spaces or control characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https"):
        raise ValueError("the URL must start with http:// or https://")
    if "@" in parts.netloc:
        raise ValueError(
            "credentials in the URL are not accepted; the request is signed with the channel's secret"
        )
    try:
        parts.port  # noqa: B018 - a port outside 0-65535 or not a number raises here
    except ValueError as exc:
        raise ValueError("the URL's port must be a number from 1 to 65535") from exc
    if parts.port == 0:
        raise ValueError("the URL's port must be a number from 1 to 65535")
    host = parts.hostname or ""
    _host(host.strip("[]"))
    return value


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        if not certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            return False
    except x509.ExtensionNotFound:
        return False  # OpenSSL does not let a certificate without basicConstraints issue others
    try:
        return certificate.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    except x509.ExtensionNotFound:
        return True


def _ca_certificates(value: str) -> str:
    """CA certificates in PEM, stored re-encoded: the text around the blocks (openssl's
    'subject=' lines) is dropped, and the value read back is the value validated."""
    others = sorted(set(_PEM_LABEL.findall(value)) - {"CERTIFICATE"})
    if others:
        raise ValueError(f"only CERTIFICATE blocks belong here, not {', '.join(others)}")
    try:
        certificates = x509.load_pem_x509_certificates(value.encode())
    except ValueError as exc:
        raise ValueError("expected one or more PEM certificates (-----BEGIN CERTIFICATE-----)") from exc
    for certificate in certificates:
        if not _is_ca(certificate):
            raise ValueError(
                f"{certificate.subject.rfc4514_string()} is not a CA certificate "
                "(it needs basicConstraints CA:TRUE and, if it has a key usage, keyCertSign)"
            )
    return "".join(certificate.public_bytes(Encoding.PEM).decode() for certificate in certificates)


Host = Annotated[str, StringConstraints(min_length=1, max_length=253), AfterValidator(_host)]
HttpUrl = Annotated[str, StringConstraints(min_length=8, max_length=MAX_URL), AfterValidator(_http_url)]
EmailAddress = Annotated[str, StringConstraints(pattern=EMAIL_PATTERN, max_length=254)]
CaCertificates = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_CA_PEM), AfterValidator(_ca_certificates)
]
# A user name for SMTP authentication and the secrets: printable, one line.
Printable = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SmtpConfig(_Strict):
    type: Literal["smtp"]
    host: Host
    port: Port = 587
    security: Literal["starttls", "tls", "none"] = "starttls"  # tls: implicit TLS (port 465)
    username: Printable | None = None  # authenticate with this user and the channel's secret
    from_address: EmailAddress
    to_addresses: Annotated[list[EmailAddress], Field(min_length=1, max_length=20)]
    ca_certificate: CaCertificates | None = None  # trusted instead of the system's CAs; not with "none"


class WebhookConfig(_Strict):
    type: Literal["webhook"]
    url: HttpUrl
    ca_certificate: CaCertificates | None = None  # trusted instead of the system's CAs for https


class SyslogConfig(_Strict):
    type: Literal["syslog"]
    host: Host
    port: Port = 514
    transport: Literal["udp", "tcp", "tls"] = "udp"
    facility: Annotated[int, Field(ge=0, le=23), JsonInteger] = 16  # local0
    ca_certificate: CaCertificates | None = None  # trusted instead of the system's CAs with "tls"


ChannelConfig = Annotated[SmtpConfig | WebhookConfig | SyslogConfig, Field(discriminator="type")]


class ChannelWrite(_Strict):
    """Creates a channel, or replaces one (PUT). `secret` is write-only: the SMTP password or the
    webhook's HMAC key; left out on a PUT, the stored one is kept."""

    name: Name
    enabled: StrictBool = True
    config: ChannelConfig
    secret: Printable | None = None


class ChannelRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    type: Literal["smtp", "webhook", "syslog"]
    enabled: bool
    config: ChannelConfig
    has_secret: bool
    last_success_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None


class ChannelsList(BaseModel):
    data: list[ChannelRead]
    count: int


class RuleWrite(_Strict):
    channel_id: Annotated[int, Field(ge=1, le=2**63 - 1), JsonInteger]
    kinds: Annotated[list[AlertKind], Field(min_length=1, max_length=64)]
    min_severity: Severity = Severity.WARNING
    # While a condition (a backend down) lasts, remind every this many minutes; None: never.
    reminder_minutes: Annotated[int, Field(ge=1, le=10080), JsonInteger] | None = None


class RuleRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    channel_id: int
    kinds: list[str]
    min_severity: Severity
    reminder_minutes: int | None


class RulesList(BaseModel):
    data: list[RuleRead]
    count: int


class TestResult(BaseModel):
    ok: bool
    answer: str  # the SMTP reply, the HTTP status, or where the syslog line went; the error if not ok
