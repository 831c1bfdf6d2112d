"""Firmware: the A/B root slots RAUC manages, and an uploaded bundle waiting to be installed."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class FirmwareBundle(BaseModel):
    """An uploaded bundle whose signature and compatible string have been checked."""

    version: str = Field(description="The version the bundle's manifest gives")
    compatible: str = Field(description="The system the bundle is for (this appliance's, or it is refused)")
    build: str | None = Field(description="The build stamp of the manifest, if any")
    size: int = Field(description="Bytes")
    sha256: str = Field(description="Of the whole bundle file, as uploaded")
    signer: str = Field(description="The signing certificate's subject, as RAUC verified it")
    uploaded_at: datetime


class FirmwareSlot(BaseModel):
    name: str = Field(description="RAUC's slot name, e.g. rootfs.0")
    bootname: str | None = Field(description="GRUB's name of the slot: A or B")
    device: str
    state: str = Field(description="booted, active or inactive (RAUC)")
    boot_status: str | None = Field(description="good or bad, as the boot chooser has it")
    version: str | None = Field(description="The version of the bundle last installed in the slot")


class FirmwareStatus(BaseModel):
    ab_system: bool = Field(description="False where RAUC does not manage this system (then see detail)")
    detail: str | None = Field(description="Why this is not an A/B system, or why its status is unknown")
    compatible: str | None
    booted: str | None = Field(description="The bootname of the running slot")
    slots: list[FirmwareSlot]
    bundle: FirmwareBundle | None = Field(description="The uploaded bundle waiting to be installed")
