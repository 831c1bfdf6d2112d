"""Turn pydantic validation errors into 422 errors located at the field they concern."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import ValidationError

from fulcrum.config.errors import located_errors
from fulcrum.errors import ConfigInvalid

T = TypeVar("T")


def validated(
    build: Callable[[], T], prefix: Sequence[str | int] = ("body",), strip: Sequence[str | int] = ()
) -> T:
    try:
        return build()
    except ValidationError as exc:
        raise ConfigInvalid(located_errors(exc, prefix, strip)) from exc
