"""Firmware bundles and the A/B root slots, through RAUC's own command line.

An upload is streamed to a file on /data (never held in memory), then `rauc info` checks its
signature against the keyring of this system's system.conf before anything else happens; the
manifest's compatible string must be this system's. A refused bundle is deleted at once. An
accepted one waits as the node's one pending bundle, to be installed into the inactive slot (the
next step). RAUC runs with fixed arguments and no shell: nothing a client sends reaches them.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from sqlalchemy.orm import Session

from fulcrum import __version__
from fulcrum.db import begin_write
from fulcrum.errors import BundleRefused, NotAbSystem, NotFound, PayloadTooLarge
from fulcrum.schemas.firmware import FirmwareBundle, FirmwareSlot, FirmwareStatus
from fulcrum.services import audit
from fulcrum.settings import Settings

# The upload routes' hard ceiling; the working limit is the setting firmware_max_bundle_bytes.
MAX_BUNDLE_BODY = 4 << 30
BUNDLE_FILE = "bundle.raucb"
BUNDLE_INFO = "bundle.json"
RAUC = "rauc"
MAX_REASON = 300
WRITE_SIZE = 1 << 20
# `rauc info` on success: "Verified inline signature by 'O = ..., CN = ...'".
SIGNER = re.compile(r"Verified (?:inline |detached )?signature by '(.*)'")


@dataclass(frozen=True)
class RaucSystem:
    conf: Path
    compatible: str
    keyring: Path


def rauc_system(settings: Settings) -> RaucSystem:
    """This node's RAUC configuration; NotAbSystem where there is none to upgrade with."""
    conf = settings.rauc_system_conf
    if not conf.is_file():
        raise NotAbSystem(f"not an A/B system: {conf} does not exist")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(conf.read_text())
        compatible = parser.get("system", "compatible")
        keyring = conf.parent / parser.get("keyring", "path")  # RAUC reads it relative to the file
    except (OSError, configparser.Error) as error:
        raise NotAbSystem(f"not an A/B system: {conf} cannot be read ({error})") from None
    if not keyring.is_file():
        raise NotAbSystem(f"not an A/B system: its keyring {keyring} does not exist")
    if shutil.which(RAUC) is None:
        raise NotAbSystem("not an A/B system: the rauc program is not installed")
    return RaucSystem(conf, compatible, keyring)


@dataclass(frozen=True)
class Upload:
    path: Path
    size: int
    sha256: str


async def receive(chunks: AsyncIterator[bytes], declared_size: str | None, settings: Settings) -> Upload:
    """Write the body to a new file beside the pending bundle, within the size limit."""
    limit = settings.firmware_max_bundle_bytes
    too_large = PayloadTooLarge(f"a firmware bundle may have at most {limit} bytes")
    if declared_size is not None and declared_size.isdigit() and int(declared_size) > limit:
        raise too_large
    path = anyio.Path(await anyio.to_thread.run_sync(_new_upload_file, firmware_dir(settings)))
    digest = hashlib.sha256()
    size = 0
    pending = bytearray()  # written a MiB at a time: each write is a hop to a worker thread
    try:
        async with await anyio.open_file(path, "wb") as out:
            async for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise too_large
                digest.update(chunk)
                pending += chunk
                if len(pending) >= WRITE_SIZE:
                    await out.write(bytes(pending))
                    pending.clear()
            await out.write(bytes(pending))
    except BaseException:  # too large, or the client went away: nothing of it is kept
        await path.unlink(missing_ok=True)
        raise
    return Upload(Path(path), size, digest.hexdigest())


def _new_upload_file(directory: Path) -> Path:
    directory.mkdir(mode=0o750, parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix="upload-", suffix=".raucb", dir=directory)
    os.close(descriptor)
    return Path(name)


def accept(session: Session, actor: audit.Actor, settings: Settings, upload: Upload) -> FirmwareBundle:
    """Check the uploaded file with RAUC; keep it as the pending bundle, or delete it and refuse."""
    try:
        bundle = _inspect(rauc_system(settings), upload, settings.rauc_timeout)
    except BundleRefused as refused:
        upload.path.unlink(missing_ok=True)
        begin_write(session)
        audit.record(
            session,
            actor,
            "firmware.bundle",
            detail={"size": upload.size, "sha256": upload.sha256, "reason": refused.message},
            success=False,
        )
        raise
    except BaseException:
        upload.path.unlink(missing_ok=True)
        raise
    directory = firmware_dir(settings)
    os.replace(upload.path, directory / BUNDLE_FILE)
    write_atomically(directory / BUNDLE_INFO, bundle.model_dump_json())
    begin_write(session)
    audit.record(session, actor, "firmware.bundle", bundle.version, bundle.model_dump(mode="json"))
    return bundle


def discard(session: Session, actor: audit.Actor, settings: Settings) -> None:
    bundle = pending_bundle(settings)
    if bundle is None:
        raise NotFound("no firmware bundle is waiting to be installed")
    remove_bundle_files(settings)
    audit.record(session, actor, "firmware.bundle.discard", bundle.version, {"sha256": bundle.sha256})


def remove_bundle_files(settings: Settings) -> None:
    directory = firmware_dir(settings)
    (directory / BUNDLE_INFO).unlink(missing_ok=True)
    (directory / BUNDLE_FILE).unlink(missing_ok=True)


def pending_bundle(settings: Settings) -> FirmwareBundle | None:
    directory = firmware_dir(settings)
    try:
        info = (directory / BUNDLE_INFO).read_text()
    except FileNotFoundError:
        return None
    if not (directory / BUNDLE_FILE).is_file():
        return None
    return FirmwareBundle.model_validate_json(info)


def status(settings: Settings) -> FirmwareStatus:
    """The slots as RAUC's service reports them, or why this is not an A/B system."""
    try:
        system = rauc_system(settings)
    except NotAbSystem as error:
        return FirmwareStatus(
            ab_system=False, detail=error.message, compatible=None, booted=None, slots=[], bundle=None
        )
    bundle = pending_bundle(settings)
    command = [RAUC, f"--conf={system.conf}", "status", "--detailed", "--output-format=json"]
    result = run_tool(command, settings.rauc_timeout)
    try:
        report = json.loads(result.stdout) if result.returncode == 0 else None
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict):
        detail = f"rauc status failed: {last_words(result.stderr) or 'no output'}"
        return FirmwareStatus(
            ab_system=True, detail=detail, compatible=system.compatible, booted=None, slots=[], bundle=bundle
        )
    slots = sorted(_slots(report.get("slots") or []), key=lambda slot: slot.name)
    primary = next((slot.bootname for slot in slots if slot.name == report.get("boot_primary")), None)
    return FirmwareStatus(
        ab_system=True,
        detail=None,
        compatible=report.get("compatible") or system.compatible,
        booted=report.get("booted"),
        primary=primary,
        slots=slots,
        bundle=bundle,
    )


@dataclass
class _BootedVersion:
    known: bool = False
    version: str | None = None  # of the booted slot's bundle; None for a flashed slot
    asking: bool = False
    asked_at: float | None = None


_booted_versions: dict[Path, _BootedVersion] = {}
_booted_lock = threading.Lock()
ASK_RAUC_AGAIN_SECONDS = 60.0


def running_version(settings: Settings) -> str:
    """This node's software version, as its peer and the HA page show it: the version of the bundle
    its booted slot was installed from, else (a freshly flashed slot, not an A/B system) the API's
    own. Never waits on RAUC (the peer's poll asks for it, and must not stall on a slow service): RAUC
    is asked in a thread of its own, once, or again a minute after it did not answer; until it has
    answered, the API's own version is given. The booted slot does not change while the API runs."""
    conf = settings.rauc_system_conf
    with _booted_lock:
        entry = _booted_versions.setdefault(conf, _BootedVersion())
        if entry.known:
            return entry.version or __version__
        due = entry.asked_at is None or time.monotonic() - entry.asked_at >= ASK_RAUC_AGAIN_SECONDS
        if due and not entry.asking:
            entry.asking, entry.asked_at = True, time.monotonic()
            threading.Thread(target=_ask_booted_version, args=(settings, entry), daemon=True).start()
    return __version__


def _ask_booted_version(settings: Settings, entry: _BootedVersion) -> None:
    try:
        current = status(settings)
        booted = next((slot for slot in current.slots if slot.state == "booted"), None)
        with _booted_lock:
            if booted is not None or not current.ab_system:  # else RAUC did not answer: ask again later
                entry.known, entry.version = True, booted.version if booted else None
    finally:
        with _booted_lock:
            entry.asking = False


def firmware_dir(settings: Settings) -> Path:
    assert settings.firmware_dir is not None  # Settings fills it in
    return settings.firmware_dir


def _inspect(system: RaucSystem, upload: Upload, timeout: float) -> FirmwareBundle:
    if upload.size == 0:
        raise BundleRefused("the upload is empty: send the bundle file as the request body")
    command = [
        RAUC,
        f"--conf={system.conf}",
        f"--keyring={system.keyring}",
        "info",
        "--output-format=json",
        "--",
        str(upload.path),
    ]
    result = run_tool(command, timeout)
    reason = last_words(result.stderr)
    if result.returncode != 0:
        if "signature" in reason.lower() and "verif" in reason.lower():
            raise BundleRefused(f"the bundle is not signed by a key this appliance trusts: {reason}")
        if "invalid bundle format" in reason.lower():
            raise BundleRefused(
                f"the file is not a complete RAUC bundle (truncated, or not a bundle): {reason}"
            )
        raise BundleRefused(f"RAUC refused the bundle: {reason}")
    try:
        manifest = json.loads(result.stdout)
        compatible, version = str(manifest["compatible"]), str(manifest["version"])
    except (json.JSONDecodeError, KeyError, TypeError):
        raise BundleRefused("the bundle's manifest gives no compatible string or version") from None
    if compatible != system.compatible:
        raise BundleRefused(
            f"the bundle is for {compatible!r}; this appliance takes bundles for {system.compatible!r}"
        )
    signer = SIGNER.search(result.stderr)
    return FirmwareBundle(
        version=version,
        compatible=compatible,
        build=manifest.get("build"),
        size=upload.size,
        sha256=upload.sha256,
        signer=signer[1] if signer else "",
        uploaded_at=datetime.now(UTC),
    )


def run_tool(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """rauc or busctl with fixed arguments; a tool that hangs or is missing is a failed run."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            command, returncode=-1, stdout="", stderr=f"no answer in {timeout:g} s"
        )
    except OSError as error:
        return subprocess.CompletedProcess(command, returncode=-1, stdout="", stderr=str(error))


def last_words(stderr: str) -> str:
    """RAUC's own last word: its progress lines ("rauc-Message: ...") left out."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and "rauc-Message" not in line]
    reason = lines[-1] if lines else ""
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


def _slots(entries: list[Any]) -> list[FirmwareSlot]:
    """`rauc status --output-format=json` lists slots as one-key objects: {name: properties}."""
    slots = []
    for entry in entries:
        for name, properties in (entry or {}).items():
            bundle = ((properties.get("slot_status") or {}).get("bundle")) or {}
            slots.append(
                FirmwareSlot(
                    name=name,
                    bootname=properties.get("bootname"),
                    device=properties.get("device") or "",
                    state=properties.get("state") or "unknown",
                    boot_status=properties.get("boot_status"),
                    version=bundle.get("version"),
                )
            )
    return slots


def write_atomically(path: Path, text: str) -> None:
    """A file beside the bundle replaced whole: a reader sees the old text or the new."""
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text)
    os.replace(temporary, path)
