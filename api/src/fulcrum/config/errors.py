"""Pydantic validation errors located at the field they concern, in FastAPI's error shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from fulcrum.errors import FIELD_PATH, split_path


def located_errors(
    exc: ValidationError, prefix: Sequence[str | int] = ("body",), strip: Sequence[str | int] = ()
) -> list[dict[str, Any]]:
    """FastAPI-shaped error dicts; `strip` removes a leading location (e.g. services[3])."""
    errors = []
    for error in exc.errors(include_url=False, include_input=False):
        loc: list[str | int] = list(error["loc"])
        msg = str(error["msg"])
        match = FIELD_PATH.match(msg)
        if match:
            loc += split_path(match.group(1))
            msg = match.group(2)
        elif msg.startswith("Value error, "):
            msg = msg.removeprefix("Value error, ")
        if strip and loc[: len(strip)] == list(strip):
            loc = loc[len(strip) :]
        errors.append({"loc": [*prefix, *loc], "msg": msg, "type": error["type"]})
    return errors
