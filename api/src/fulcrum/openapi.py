"""The OpenAPI document lists every error an operation can answer.

Errors that follow from what an operation *is* are added here, once, from the operation itself:
an authenticated one can answer 401 and 403; one that takes a body can answer 400 (not JSON) and
413 (too large; FastAPI adds the 422). Errors with a meaning of their own (404 for an id, 409 for
a conflict or a standby node, 429) are declared where they arise: on the router or route.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

ERROR_SCHEMA = "Error"


class Error(BaseModel):
    """Every error but a 422 and a 413: what went wrong, in words; some carry a code."""

    detail: str
    code: str | None = None  # e.g. standby_read_only
    active_url: str | None = None  # standby_read_only: where changes are made


def error(description: str) -> dict[str, Any]:
    """A `responses` entry for an error with the common body."""
    return {"model": Error, "description": description}


# On the routers of shared configuration (fulcrum.routers.one_writer).
STANDBY_REFUSAL: dict[int | str, dict[str, Any]] = {
    409: error(
        "A change on the standby node of an HA pair (code standby_read_only), "
        "or one that conflicts with what exists"
    )
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: error("No such object")}

_BY_TRAIT: dict[str, dict[str, str]] = {
    "security": {
        "401": "Not logged in: no valid session or API token",
        "403": "Logged in, but not allowed to do this",
    },
    "requestBody": {
        "400": "The body is not valid JSON",
    },
}
_TOO_LARGE = {
    "description": "The body is larger than this operation accepts"
}  # Starlette answers in plain text


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _document_errors(generate())  # FastAPI caches the document; this completes it once
        assert app.openapi_schema is not None  # generate() stored it
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema
    allowed: list[tuple[re.Pattern[str], str]] = []

    @app.exception_handler(405)
    async def _method_not_allowed(request: Request, exc: HTTPException) -> Response:
        # The router answers 405 from the first route whose path matched, so its Allow header
        # named that route's methods alone (GET for /services, which also takes POST): name
        # every method the document gives the path.
        if not allowed:
            allowed.extend(_allowed_methods(app.openapi()))
        for pattern, methods in allowed:
            if pattern.fullmatch(request.url.path):
                exc.headers = {**(exc.headers or {}), "Allow": methods}
                break
        return await http_exception_handler(request, exc)


def _allowed_methods(schema: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    table = []
    for path, operations in schema.get("paths", {}).items():
        methods = [method.upper() for method in operations if method != "parameters"]
        if "GET" in methods:
            methods.append("HEAD")  # answered for every GET
        pattern = re.compile(
            "/".join("[^/]+" if part.startswith("{") else re.escape(part) for part in path.split("/"))
        )
        table.append((pattern, ", ".join(methods)))
    return table


def _document_errors(schema: dict[str, Any]) -> None:
    schema.setdefault("components", {}).setdefault("schemas", {})[ERROR_SCHEMA] = Error.model_json_schema()
    reference = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for trait, statuses in _BY_TRAIT.items():
                if trait in operation:
                    for status, description in statuses.items():
                        responses.setdefault(status, {"description": description, "content": reference})
            if "requestBody" in operation:
                responses.setdefault("413", _TOO_LARGE)
