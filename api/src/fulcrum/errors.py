"""Domain errors: services raise these; one handler turns them into JSON responses."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


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


class ApplyRejected(AppError):
    """The real validators (keepalived -t, nft -c) rejected the rendered configuration."""

    status_code = 422


class DataplaneUnreachable(AppError):
    status_code = 503


def install_error_handler(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _handle(_: Request, exc: AppError) -> JSONResponse:
        return JSONResponse(status_code=exc.status_code, content=exc.body())
