"""The import report: one entry per directive read, saying what became of it.

Every directive the parsers produce is reported at least once; `Report.unreported` lets a mapper
sweep what it did not handle into "not imported", so nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    IMPORTED = "imported"  # taken in as it was
    CHANGED = "changed"  # taken in, adapted to fit Fulcrum's model (the detail says how)
    NOT_IMPORTED = "not_imported"  # left out (the detail says why)


@dataclass(frozen=True)
class Origin:
    """Where a directive was read: the file (the main text or an uploaded include) and line."""

    file: str
    line: int
    text: str


@dataclass(frozen=True)
class ReportLine:
    file: str
    line: int
    text: str
    outcome: Outcome
    detail: str


# A report of a huge input must stay small enough to return and show.
MAX_TEXT = 200


class Report:
    def __init__(self) -> None:
        self.lines: list[ReportLine] = []
        self._seen: set[tuple[str, int, str]] = set()

    def add(self, origin: Origin, outcome: Outcome, detail: str) -> None:
        self._seen.add((origin.file, origin.line, origin.text))
        self.lines.append(ReportLine(origin.file, origin.line, origin.text[:MAX_TEXT], outcome, detail))

    def imported(self, origin: Origin, detail: str) -> None:
        self.add(origin, Outcome.IMPORTED, detail)

    def changed(self, origin: Origin, detail: str) -> None:
        self.add(origin, Outcome.CHANGED, detail)

    def skipped(self, origin: Origin, detail: str) -> None:
        self.add(origin, Outcome.NOT_IMPORTED, detail)

    def was_reported(self, origin: Origin) -> bool:
        return (origin.file, origin.line, origin.text) in self._seen

    def sorted_lines(self, files: list[str]) -> list[ReportLine]:
        """In reading order: `files` in the order they were read, each by line."""
        order = {name: index for index, name in enumerate(files)}
        return sorted(self.lines, key=lambda e: (order.get(e.file, len(order)), e.line))
