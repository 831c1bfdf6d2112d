"""The certificate the dashboard and API serve over HTTPS, and an upload replacing it."""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# A chain of a few certificates is some kilobytes; the limits only stop absurd input early.
MAX_CHAIN_PEM = 64 * 1024
MAX_KEY_PEM = 16 * 1024
HOST_NAME = re.compile(
    r"(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)


class CertificateUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    certificate_chain: str = Field(
        min_length=1,
        max_length=MAX_CHAIN_PEM,
        description="PEM: this appliance's certificate first, then each intermediate, "
        "each issued by the next",
    )
    private_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_KEY_PEM,
        description="PEM, unencrypted: the first certificate's key; "
        "none for a certificate signed for this box's pending CSR",
    )


class ServedCertificate(BaseModel):
    subject: str
    issuer: str
    names: list[str] = Field(description="Subject alternative names: DNS names and IP addresses")
    not_before: datetime
    not_after: datetime
    fingerprint_sha256: str = Field(
        description="SHA-256 of the certificate (DER), hex; what the HA peer pins"
    )
    chain_length: int
    self_signed: bool


class KeyType(StrEnum):
    EC_P256 = "ec-p256"
    EC_P384 = "ec-p384"
    RSA_2048 = "rsa-2048"
    RSA_3072 = "rsa-3072"


def _host_name(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not HOST_NAME.fullmatch(value) or len(value) > 253:
        raise ValueError(
            f"{value[:100]!r} is neither an IP address nor a DNS name "
            "(letters, digits, hyphens, dots; '*.' first for a wildcard)"
        )
    return value.lower()


HostName = Annotated[str, Field(min_length=1, max_length=253), AfterValidator(_host_name)]


class CsrRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    common_name: str = Field(min_length=1, max_length=64, pattern=r"^[ -~]+$")
    names: list[HostName] = Field(
        min_length=1, max_length=100, description="Subject alternative names: DNS names or IP addresses"
    )
    organization: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[ -~]+$")
    country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$", description="ISO 3166 two-letter code")
    key_type: KeyType = KeyType.EC_P256


class CsrRead(BaseModel):
    subject: str
    names: list[str]
    csr: str = Field(description="PEM: give this to the certificate authority")
