"""The report's judgement of "wrr is best": spreads decide what is a difference, and schedulers
that put nearly everything on one backend are judged apart."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the bench package

from bench.results import spread  # noqa: E402
from bench.verdict import verdict  # noqa: E402

KNEE = {"rates": [100.0]}
EVEN = {"10.0.0.1": 1 / 3, "10.0.0.2": 1 / 3, "10.0.0.3": 1 / 3}


def block(scheduler: str, replies: list[float], p99: list[float], share: dict[str, float] = EVEN) -> dict:
    return {"profile": "hetero", "scheduler": scheduler,
            "share": {address: {"fraction": fraction} for address, fraction in share.items()},
            "levels": [{"summary": {"reply_rate": spread(replies), "conn_ms_p99": spread(p99)}}]}


def conclusion(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("**Conclusion:**"))


def test_wrr_alone_at_the_top_holds() -> None:
    lines = verdict([block("wrr", [100, 101, 99], [20, 22, 21]), block("rr", [80, 82, 79], [50, 55, 60])], KNEE)
    assert "holds in 1 of 1 conditions" in conclusion(lines)


def test_replies_within_one_percent_are_level_and_make_a_tie() -> None:
    # No spread at all (every run delivered what was offered), 0.2 % apart, overlapping p99s.
    lines = verdict([block("wrr", [99.8] * 3, [20, 30, 40]), block("lc", [100.0] * 3, [25, 35, 45])], KNEE)
    assert "is a tie in 1 (hetero at 100.0 conn/s)" in conclusion(lines)


def test_a_clearly_better_scheduler_means_it_does_not_hold() -> None:
    lines = verdict([block("wrr", [60, 62, 61], [900, 950, 1000]), block("wlc", [99, 100, 101], [40, 45, 50])], KNEE)
    assert "does not hold in 1 (hetero at 100.0 conn/s)" in conclusion(lines)


def test_one_backend_schedulers_are_named_and_the_rest_judged_without_them() -> None:
    lines = verdict([block("dh", [120, 121, 122], [10, 11, 12], {"10.0.0.1": 0.0, "10.0.0.2": 1.0, "10.0.0.3": 0.0}),
                     block("wrr", [100, 101, 99], [20, 22, 21]),
                     block("rr", [80, 82, 79], [50, 55, 60])], KNEE)
    assert "does not hold in 1" in conclusion(lines)  # dh leads the whole field
    caveat = next(line for line in lines if line.startswith("**Read the overload rows with care.**"))
    assert "dh (hetero: 100% to 10.0.0.2; it hashes the destination address" in caveat
    assert 'Among the schedulers that spread the load, "wrr is best" holds in 1 of 1 conditions' in caveat
