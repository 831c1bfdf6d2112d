"""When the statistics collector runs its next round: on the interval's beat while rounds are
short, never more than a quarter of the time when they are long, and not while a commit runs."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from fulcrum.telemetry.hub import COLLECTOR_DUTY, Telemetry, next_round

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package
from lab.wait import wait_until  # noqa: E402


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


class _CountingTelemetry(Telemetry):
    """The collector's loop as it runs, with each round only counted."""

    rounds = 0

    def collect(self):  # type: ignore[override]
        self.rounds += 1


def test_rounds_sit_out_a_commit_and_resume_after_it():
    committing = threading.Event()
    committing.set()
    telemetry = _CountingTelemetry(sessions=None, applier=None, interval=0.01, committing=committing.is_set)
    telemetry.start()
    try:
        time.sleep(0.3)  # thirty beats, each a round had no commit been under way
        assert telemetry.rounds == 0
        committing.clear()
        wait_until(lambda: telemetry.rounds >= 3, 10, what="the collector's rounds after the commit", interval=0.01)
    finally:
        telemetry.stop()
