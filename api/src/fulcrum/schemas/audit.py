from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class AuditRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    at: datetime
    username: str
    source: str
    action: str
    target: str
    detail: dict[str, Any]
    revision: int | None
    success: bool


class AuditList(BaseModel):
    data: list[AuditRead]
    count: int
