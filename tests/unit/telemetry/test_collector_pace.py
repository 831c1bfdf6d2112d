"""When the statistics collector runs its next round (pure): on the interval's beat while rounds
are short, and never more than a quarter of the time when they are long."""

from __future__ import annotations

import pytest

from fulcrum.telemetry.hub import COLLECTOR_DUTY, next_round


def test_short_rounds_keep_the_beat():
    assert next_round(100.0, 1.0, started=100.0, finished=100.05) == 101.0
    # A late start does not shift the beat: the next round is still one interval after the last.
    assert next_round(101.0, 1.0, started=101.2, finished=101.3) == 102.0


@pytest.mark.parametrize("took", [0.9, 1.5, 4.0, 30.0])
def test_a_long_round_is_followed_by_a_rest_that_bounds_its_share(took):
    finished = 100.0 + took
    following = next_round(100.0, 1.0, started=100.0, finished=finished)
    assert following > finished, "no round may start back to back with a long one"
    share = took / (following - 100.0)
    assert share == pytest.approx(COLLECTOR_DUTY) or share < COLLECTOR_DUTY


def test_missed_beats_are_skipped_not_caught_up():
    # A round of 5 s on a 1 s beat: the rounds after it are not run at once to catch up.
    following = next_round(100.0, 1.0, started=100.0, finished=105.0)
    assert next_round(following, 1.0, started=following, finished=following + 0.01) == following + 1.0
