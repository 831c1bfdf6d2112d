from __future__ import annotations

from pydantic import BaseModel

from fulcrum.apply.result import DataplaneStatus


class Status(BaseModel):
    version: str
    node: str
    dataplane: DataplaneStatus | None
    dataplane_error: str | None  # why the data plane could not be asked (helper unreachable)
    desired_revision: int | None  # the newest committed revision
    applied_revision: int | None  # the newest revision the kernel runs
    pending_changes: bool  # the candidate differs from the newest revision
    awaiting_confirm: int | None  # a revision that rolls back unless confirmed
