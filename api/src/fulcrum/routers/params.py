"""Path and query parameter types the routers share, and the request body limit.

Ids, revision numbers and offsets are bounded by SQLite's signed 64-bit integer: a larger value
is a 422 naming the parameter, not an OverflowError while binding the query. Times in a query
are ISO 8601 (the schema's date-time), not the Unix timestamps pydantic would otherwise take.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from fastapi import Path, Query
from pydantic import BeforeValidator

from fulcrum.config.types import NAME_PATTERN

MAX_SQL_INT = 2**63 - 1

MiB = 1 << 20
DEFAULT_MAX_BODY = 1 * MiB  # a route that takes more says so: @router.post(..., max_body_size=16 * MiB)

RowId = Annotated[int, Path(ge=1, le=MAX_SQL_INT)]
NodeName = Annotated[str, Path(pattern=NAME_PATTERN)]  # a node's name (fulcrum.config.types.Name)
RevisionNumber = Annotated[int, Path(ge=1, le=MAX_SQL_INT)]
Offset = Annotated[int, Query(ge=0, le=MAX_SQL_INT)]

_ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$")


def _iso_8601(value: object) -> object:
    if isinstance(value, str) and not _ISO_8601.match(value):
        raise ValueError("expected a date and time in ISO 8601, such as 2026-01-31T12:00:00Z")
    return value


Since = Annotated[
    datetime | None, BeforeValidator(_iso_8601), Query(description="ISO 8601, e.g. 2026-01-31T12:00:00Z")
]
