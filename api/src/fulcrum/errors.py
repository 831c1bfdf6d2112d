"""Domain errors: services raise these; one handler turns them into JSON responses."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

# A 422 names each problem and its field, and never echoes what the client sent: FastAPI's own
# handler returns every value as `input` (a large body came back three times its size) and
# fails on NaN or Infinity, which JSON cannot carry.
MAX_REPORTED_ERRORS = 100
MAX_TEXT = 500


class AppError(Exception):
    status_code = 400
    # True for errors that are themselves a record (an audited failed login, a failed revision):
    # the request's transaction commits before the error is answered.
    keep_changes = False

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"detail": self.message, **self.extra}


class NotFound(AppError):
    status_code = 404


class Conflict(AppError):
    status_code = 409


class Unauthorized(AppError):
    status_code = 401


class Unavailable(AppError):
    """Something this node reads from its own system cannot be read now (not the client's fault)."""

    status_code = 503


class LoginFailed(Unauthorized):
    keep_changes = True


class ApplyFailed(Conflict):
    """Applying a valid configuration failed; it is recorded as a failed revision, and the
    previous configuration was restored."""

    keep_changes = True


class Forbidden(AppError):
    status_code = 403


class TooManyRequests(AppError):
    status_code = 429


class ConfigInvalid(AppError):
    """A change that would make the whole configuration invalid.

    The body has FastAPI's 422 shape (`detail: [{loc, msg, type}]`) so clients show every error
    next to the field it concerns, whether pydantic or a cross-object rule found it.
    """

    status_code = 422

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(e["msg"] for e in errors))
        self.errors = errors

    def body(self) -> dict[str, Any]:
        return {"detail": self.errors}


class WrongCurrentPassword(ConfigInvalid):
    """A wrong current password on a password change: a 422 at the field (the session itself is
    fine, and clients treat 401 as "signed out"), recorded like a failed login so that a stolen
    session cannot be used to guess the password faster than the login page allows."""

    keep_changes = True

    def __init__(self) -> None:
        super().__init__(
            [
                {
                    "loc": ["body", "current_password"],
                    "msg": "the current password is wrong",
                    "type": "value_error",
                }
            ]
        )


class DiskFull(AppError):
    """The data disk has no room for what a write needs: nothing was written, nothing already
    committed is lost, and the running configuration is untouched. Reads keep working."""

    status_code = 507

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(f"the data disk is full: {message}", cause="disk_full", **extra)


class ApplyDiskFull(DiskFull):
    """Writing the rendered files found the disk full: nothing changed; the failure is recorded
    (an apply.failed event) where the database still has room for it."""

    keep_changes = True


class BackupRejected(AppError):
    """An uploaded backup that cannot be restored; `code` names the cause for clients
    (wrong_passphrase, truncated, tampered, newer_format, not_a_backup, invalid)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code=code)


class ApplyRejected(AppError):
    """The real validators (keepalived -t, nft -c) rejected the rendered configuration."""

    status_code = 422


class PayloadTooLarge(AppError):
    status_code = 413


class NotAbSystem(Conflict):
    """Firmware upgrades need RAUC's A/B system (its system.conf, keyring and program)."""


class BundleRefused(AppError):
    """An uploaded firmware bundle failed its checks (signature, format, compatible string); the
    refusal is audited, so it commits."""

    status_code = 422
    keep_changes = True


def install_error_handler(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _handle(_: Request, exc: AppError) -> JSONResponse:
        return JSONResponse(status_code=exc.status_code, content=exc.body())

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [at_the_field(error) for error in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": public_errors(errors)})

    # The client hung up while its body was being read (an HA peer powered off mid-push, say): the
    # request fails like any bad request, nothing of it is kept, and no traceback is logged as if
    # the server had failed. Nobody is left to read the answer.
    @app.exception_handler(ClientDisconnect)
    async def _gone(_: Request, __: ClientDisconnect) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": "the client left before its body arrived"})


# Cross-field rules (fulcrum.config) start their message with the path of the field they concern:
# "backends[2].port: ...", "router_id: ...".
FIELD_PATH = re.compile(
    r"^(?:Value error, )?((?:[a-z_][a-z0-9_]*(?:\[\d+\])*)(?:\.[a-z_][a-z0-9_]*(?:\[\d+\])*)*): (.*)$", re.S
)
_STEP = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+)\]")


def split_path(path: str) -> list[str | int]:
    """ "backends[2].health_check.on_failure" as ["backends", 2, "health_check", "on_failure"]."""
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def at_the_field(error: dict[str, Any]) -> dict[str, Any]:
    """A model's cross-field rule broken in a request body is reported by pydantic at the model
    (`["body"]`, `["body", "neighbors", 0, "timers"]`); its message names the field. Locate it there,
    as fulcrum.config.errors does for what the services validate. Only when the model's input has
    that field: a field's own rule whose message happens to start with a word and a colon (a host
    name, say) stays where it is."""
    match = FIELD_PATH.match(str(error.get("msg", "")))
    given = error.get("input")
    if error.get("type") != "value_error" or match is None or not isinstance(given, dict):
        return error
    steps = split_path(match.group(1))
    if steps[0] not in given:
        return error
    return {**error, "loc": [*error.get("loc", ()), *steps], "msg": match.group(2)}


def public_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """Validation errors as `{loc, msg, type[, ctx]}`: no input, texts cut short, JSON-safe."""
    shown = []
    for error in errors[:MAX_REPORTED_ERRORS]:
        item: dict[str, Any] = {
            "loc": [_json_safe(step) for step in error.get("loc", ())],
            "msg": _json_safe(str(error.get("msg", ""))),
            "type": _json_safe(str(error.get("type", ""))),
        }
        if error.get("ctx"):
            item["ctx"] = {str(key)[:MAX_TEXT]: _json_safe(value) for key, value in error["ctx"].items()}
        shown.append(item)
    return shown


def _json_safe(value: Any) -> Any:
    if isinstance(value, bool | int) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
