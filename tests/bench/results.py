"""Where the benchmarks put their numbers: one JSON file per part in the run's output folder,
rewritten as each measurement lands (a part that fails half-way still leaves what it measured)."""

from __future__ import annotations

import itertools
import json
import os
import statistics
from pathlib import Path


def save(out: Path, name: str, data) -> Path:
    path = Path(out) / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False, default=str))
    os.replace(tmp, path)
    return path


_raw_runs = itertools.count()


def save_raw(out: Path, part: str, texts: dict[str, str]) -> None:
    """The tools' own output, kept beside the numbers parsed from it (data/raw/<part>-<n>-<name>.txt)."""
    raw = Path(out) / "raw"
    raw.mkdir(exist_ok=True)
    n = next(_raw_runs)
    for name, text in texts.items():
        (raw / f"{part}-{n:04d}-{name}.txt").write_text(text)


def load(out: Path, name: str):
    path = Path(out) / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def spread(values: list[float]) -> dict:
    """mean, median, min, max, sample standard deviation and n of the numbers that exist."""
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
    }
