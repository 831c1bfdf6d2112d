"""The certificate the dashboard and API serve over HTTPS, and an upload replacing it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

# A chain of a few certificates is some kilobytes; the limits only stop absurd input early.
MAX_CHAIN_PEM = 64 * 1024
MAX_KEY_PEM = 16 * 1024


class CertificateUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    certificate_chain: str = Field(
        min_length=1, max_length=MAX_CHAIN_PEM,
        description="PEM: this appliance's certificate first, then each intermediate, each issued by the next",
    )  # fmt: skip
    private_key: str = Field(min_length=1, max_length=MAX_KEY_PEM, description="PEM, unencrypted: the first certificate's key")


class ServedCertificate(BaseModel):
    subject: str
    issuer: str
    names: list[str] = Field(description="Subject alternative names: DNS names and IP addresses")
    not_before: datetime
    not_after: datetime
    fingerprint_sha256: str = Field(description="SHA-256 of the certificate (DER), hex; what the HA peer pins")
    chain_length: int
    self_signed: bool
