"""Pydantic validation errors located at the field they concern, in FastAPI's error shape."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

# Cross-field rules in fulcrum.config.snapshot start their message with a path: "backends[2].port: ...".
_PATH = re.compile(
    r"^(?:Value error, )?((?:[a-z_][a-z0-9_]*(?:\[\d+\])*)(?:\.[a-z_][a-z0-9_]*(?:\[\d+\])*)*): (.*)$", re.S
)
_STEP = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+)\]")


def split_path(path: str) -> list[str | int]:
    """ "backends[2].health_check.on_failure" as ["backends", 2, "health_check", "on_failure"]."""
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def located_errors(
    exc: ValidationError, prefix: Sequence[str | int] = ("body",), strip: Sequence[str | int] = ()
) -> list[dict[str, Any]]:
    """FastAPI-shaped error dicts; `strip` removes a leading location (e.g. services[3])."""
    errors = []
    for error in exc.errors(include_url=False, include_input=False):
        loc: list[str | int] = list(error["loc"])
        msg = str(error["msg"])
        match = _PATH.match(msg)
        if match:
            loc += split_path(match.group(1))
            msg = match.group(2)
        elif msg.startswith("Value error, "):
            msg = msg.removeprefix("Value error, ")
        if strip and loc[: len(strip)] == list(strip):
            loc = loc[len(strip) :]
        errors.append({"loc": [*prefix, *loc], "msg": msg, "type": error["type"]})
    return errors
