"""Firmware: the A/B root slots RAUC manages, and an uploaded bundle waiting to be installed."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

# One upgrade from the install to its end (services/firmware_upgrade.py says who moves it on):
#   installing → installed → good, or → failed (the new slot was found unhealthy) → rolled_back;
#   installing → install_failed (RAUC could not write the slot; the running one is untouched);
#   installed → cancelled (an admin withdrew it before the restart: the running slot boots next).
UpgradeState = Literal[
    "installing", "install_failed", "installed", "cancelled", "good", "failed", "rolled_back"
]


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


class FirmwareInstall(BaseModel):
    """What RAUC's service is doing now, as its D-Bus properties say."""

    operation: str = Field(description="idle or installing")
    progress: int | None = Field(description="Percent of the install done, while one runs")
    message: str | None = Field(description="RAUC's word on the current step")
    last_error: str | None = Field(description="Why the last install failed, if it did")


class FirmwareUpgrade(BaseModel):
    """The last upgrade started on this node and what became of it."""

    version: str = Field(description="The bundle's version")
    from_slot: str = Field(description="The bootname of the slot that ran when it was installed")
    to_slot: str = Field(description="The bootname of the slot it was installed into")
    state: UpgradeState
    reason: str | None = Field(description="Why it failed or was rolled back, as far as it is known")
    started_at: datetime
    updated_at: datetime


class FirmwareStatus(BaseModel):
    ab_system: bool = Field(description="False where RAUC does not manage this system (then see detail)")
    detail: str | None = Field(description="Why this is not an A/B system, or why its status is unknown")
    compatible: str | None
    booted: str | None = Field(description="The bootname of the running slot")
    primary: str | None = Field(
        default=None, description="The bootname of the slot the next boot starts (RAUC's primary)"
    )
    slots: list[FirmwareSlot]
    bundle: FirmwareBundle | None = Field(description="The uploaded bundle waiting to be installed")
    install: FirmwareInstall | None = Field(
        default=None, description="RAUC's service now; None where it does not answer"
    )
    upgrade: FirmwareUpgrade | None = Field(default=None, description="The last upgrade and its outcome")
