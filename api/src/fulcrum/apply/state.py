"""The engine's record of what is live, kept in STATE_DIR/state.json.

Format (JSON, written atomically, mode 0644 so the unprivileged API may read it)::

    {
      "format": 1,
      "applied": {"revision": 12, "digest": "<sha256 of the canonical snapshot>", "at": "<UTC ISO 8601>"},
      "pending": {"revision": 13, "digest": "...", "at": "..."}
    }

`applied` is the last revision whose apply finished (null before the first). `pending` is set just
before live files are replaced and cleared when that apply ends, whether it succeeded or was
rolled back; a `pending` found later means the apply was interrupted by a crash.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from fulcrum.apply.files import write_json_atomic


class RevisionMark(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    revision: int
    digest: str
    at: datetime


class EngineState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal[1] = 1
    applied: RevisionMark | None = None
    pending: RevisionMark | None = None


class StateFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> EngineState:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return EngineState()
        try:
            return EngineState.model_validate_json(text)
        except ValidationError as error:
            raise ValueError(f"apply state file {self.path} is not valid: {error}") from error

    def begin(self, revision: int, digest: str) -> None:
        self._save(self.load().model_copy(update={"pending": _mark(revision, digest)}))

    def commit(self, revision: int, digest: str) -> None:
        self._save(EngineState(applied=_mark(revision, digest)))

    def abort(self) -> None:
        self._save(self.load().model_copy(update={"pending": None}))

    def _save(self, state: EngineState) -> None:
        write_json_atomic(self.path, state.model_dump(mode="json"))


def _mark(revision: int, digest: str) -> RevisionMark:
    return RevisionMark(revision=revision, digest=digest, at=datetime.now(UTC))
