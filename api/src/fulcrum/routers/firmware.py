"""This node's firmware: its A/B root slots and a signed bundle uploaded to be installed
(node-local: each node of a pair is upgraded on its own)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, status
from fastapi.concurrency import run_in_threadpool

from fulcrum.db import SessionDep, end_read, writes_late
from fulcrum.deps import ActorDep, Admin, ApplierDep, SettingsDep, Viewer
from fulcrum.ha import upgrade_record
from fulcrum.openapi import error
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.firmware import FirmwareBundle, FirmwareStatus
from fulcrum.services import firmware, firmware_upgrade

# The body is the bundle file itself, streamed: not JSON, not a form.
BUNDLE_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}

router = APIRouter(prefix="/firmware", tags=["firmware"])


@router.get(
    "",
    summary="This node's root slots (A/B), the bundle waiting to be installed, the install now and the "
    "last upgrade's outcome",
)
def get_firmware(settings: SettingsDep, _: Viewer) -> FirmwareStatus:
    return firmware_upgrade.status(settings)


@router.post(
    "/bundle",
    status_code=status.HTTP_201_CREATED,
    summary="Upload a signed firmware bundle (the file as the body); it is checked, then kept to install",
    description="The signature is checked against this node's keyring and the compatible string against "
    "its own before the bundle is kept; a refused bundle is deleted at once (422 says why).",
    responses={
        409: error("Not an A/B system, or RAUC is installing the waiting bundle"),
        422: error("Not a complete RAUC bundle, not signed by a trusted key, or for another system"),
    },
    max_body_size=firmware.MAX_BUNDLE_BODY,
    openapi_extra=BUNDLE_BODY,
)
@writes_late  # the upload takes minutes: no database lock is held while it streams
@any_node
async def upload_bundle(
    request: Request, session: SessionDep, settings: SettingsDep, _: Admin, actor: ActorDep
) -> FirmwareBundle:
    firmware.rauc_system(settings)  # a node that cannot install one takes nothing
    firmware_upgrade.refuse_while_installing(settings, "upload another")
    end_read(session)
    upload = await firmware.receive(request.stream(), request.headers.get("content-length"), settings)
    return await run_in_threadpool(firmware.accept, session, actor, settings, upload)


@router.delete(
    "/bundle",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete the uploaded bundle waiting to be installed",
    responses={404: error("No bundle is waiting"), 409: error("RAUC is installing it")},
)
@any_node
def delete_bundle(session: SessionDep, settings: SettingsDep, _: Admin, actor: ActorDep) -> None:
    firmware_upgrade.refuse_while_installing(settings, "delete it")
    firmware.discard(session, actor, settings)


@router.post(
    "/install",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Install the waiting bundle into the slot that is not running; the running one keeps serving",
    description="Answers once RAUC has started; GET /firmware shows the progress, then the upgrade as "
    "installed. The new system runs after POST /firmware/reboot, and is kept only once it is found healthy.",
    responses={
        404: error("No bundle is waiting"),
        409: error("Not an A/B system, RAUC not answering, or an install already running"),
    },
)
@any_node
def install_bundle(session: SessionDep, settings: SettingsDep, _: Admin, actor: ActorDep) -> FirmwareStatus:
    return firmware_upgrade.start_install(session, actor, settings)


@router.post(
    "/cancel",
    summary="Cancel the installed upgrade before the restart: the running version stays the one to boot",
    description="RAUC makes the running slot the one to boot again; the other slot keeps the installed "
    "version until the next install. GET /firmware then shows the upgrade as cancelled.",
    responses={
        409: error(
            "No installed upgrade waits for a restart, this node drives a pair upgrade, or RAUC did not "
            "make the running slot the one to boot"
        )
    },
)
@any_node
def cancel_upgrade(session: SessionDep, settings: SettingsDep, _: Admin, actor: ActorDep) -> FirmwareStatus:
    upgrade_record.refuse_while_running(settings, "cancel its install here")
    return firmware_upgrade.cancel_install(session, actor, settings)


@router.post(
    "/reboot",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Restart this node now (into the installed slot, when an upgrade waits for it)",
    responses={409: error("An install is running, or this node does not restart itself")},
)
@any_node
def reboot_node(
    session: SessionDep, settings: SettingsDep, applier: ApplierDep, _: Admin, actor: ActorDep
) -> None:
    firmware_upgrade.reboot(session, actor, applier, settings)
