"""Numbers and Markdown tables as the benchmark report prints them."""

from __future__ import annotations


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def pm(s: dict | None, digits: int = 1, scale: float = 1.0) -> str:
    """mean ± sample stdev (n) from a results.spread() dict."""
    if not s or not s.get("n"):
        return "–"
    return f"{s['mean'] * scale:,.{digits}f} ± {s['stdev'] * scale:,.{digits}f}"


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def rng(s: dict | None, digits: int = 1, scale: float = 1.0) -> str:
    if not s or not s.get("n"):
        return "–"
    return f"{s['median'] * scale:,.{digits}f} ({s['min'] * scale:,.{digits}f}–{s['max'] * scale:,.{digits}f})"


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines + [""]
