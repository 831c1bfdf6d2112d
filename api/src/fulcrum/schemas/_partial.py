"""Build request schemas from the snapshot models, so the API enforces exactly their field rules."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

_FORBID = ConfigDict(extra="forbid")


def fields_of(
    model: type[BaseModel], *, exclude: Collection[str] = frozenset(), optional: bool = False
) -> dict[str, Any]:
    """Field definitions of `model` for `create_model`; with optional=True every field defaults to None."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in exclude:
            continue
        if optional:
            copy = info._copy()  # keep constraints and description, drop the default
            copy.default = None
            copy.default_factory = None
            annotation: Any = info.annotation  # a type object at run time, used to build one
            fields[name] = (annotation | None, copy)
        else:
            fields[name] = (info.annotation, info)
    return fields


def derived_model(
    name: str,
    model: type[BaseModel],
    *,
    exclude: Collection[str] = frozenset(),
    optional: bool = False,
    base: type[BaseModel] | None = None,
    **extra: Any,
) -> type[BaseModel]:
    return create_model(
        name,
        __base__=base,
        __config__=None if base else _FORBID,
        __doc__=model.__doc__,
        **fields_of(model, exclude=exclude, optional=optional),
        **extra,
    )
