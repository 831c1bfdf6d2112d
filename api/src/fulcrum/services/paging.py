"""One way to page a list: the number of rows the filters match, and one page of them."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

T = TypeVar("T")


def page(session: Session, query: Select[T], order_by: Any, limit: int, offset: int) -> tuple[list[T], int]:
    """`query`'s rows `offset` to `offset + limit` in `order_by`'s order, and how many it has in all."""
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(order_by).limit(limit).offset(offset))
    return list(rows), total
