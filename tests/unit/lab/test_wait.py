"""lab.wait.wait_until: "not yet" is retried until the deadline; a bug in the probe is not."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package

from lab.wait import StopWaiting, WaitTimeout, wait_until  # noqa: E402


def test_returns_the_first_value_that_passes() -> None:
    answers = iter([None, 0, "", "ready"])
    assert wait_until(lambda: next(answers), 5, what="an answer", interval=0) == "ready"


def test_an_error_from_the_probe_counts_as_not_yet() -> None:
    tries = iter([FileNotFoundError("no pid file yet"), ValueError("half-written"), KeyError("x"), "up"])

    def probe() -> str:
        answer = next(tries)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(probe, 5, what="the daemon", interval=0) == "up"


def test_the_timeout_names_what_was_awaited_and_the_last_error() -> None:
    def probe() -> None:
        raise ConnectionRefusedError("port 80")

    with pytest.raises(WaitTimeout, match="for the backend: expected something truthy, last raised Conn"):
        wait_until(probe, 0.2, what="the backend", interval=0.05)


BUGS = [
    TypeError("takes 1 positional argument"),
    AttributeError("no attribute 'stat'"),
    NameError("name 'reponse' is not defined"),
]


@pytest.mark.parametrize("bug", BUGS)
def test_a_bug_in_the_probe_fails_at_once(bug: Exception) -> None:
    calls = 0

    def probe() -> None:
        nonlocal calls
        calls += 1
        raise bug

    started = time.monotonic()
    with pytest.raises(type(bug)) as raised:
        wait_until(probe, 30, what="something", interval=0.05)
    assert raised.value is bug and calls == 1
    assert time.monotonic() - started < 5  # not after the 30 s deadline


def test_stop_waiting_propagates_at_once() -> None:
    def probe() -> None:
        raise StopWaiting("the process exited")

    with pytest.raises(StopWaiting, match="exited"):
        wait_until(probe, 30, what="the process", interval=0.05)
