"""Schemathesis over every operation of the real API (run_fuzz.py), with a short budget: no
server error, no response outside its declared schema or status codes, and every other
schemathesis check. `make fuzz` runs the full budget."""

from __future__ import annotations

from pathlib import Path

from run_fuzz import run

SHORT_BUDGET = 5  # examples per operation; the coverage and stateful phases add their own


def test_the_api_passes_schemathesis(tmp_path: Path) -> None:
    assert run(SHORT_BUDGET, tmp_path, []) == 0, "schemathesis found failures: see its report above"
