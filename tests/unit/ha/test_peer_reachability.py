"""When the peer counts as unreachable: after several failed requests in a row, not one slow one."""

from __future__ import annotations

from unittest.mock import MagicMock

from fulcrum.ha.runtime import PEER_MISSES_TO_UNREACHABLE, HaRuntime
from fulcrum.ha.wire import PeerStatus


def _runtime() -> HaRuntime:
    return HaRuntime(settings=MagicMock(), telemetry=MagicMock(), session_scope=MagicMock())


def test_single_misses_between_answers_never_make_the_peer_unreachable() -> None:
    runtime = _runtime()
    answer = MagicMock(spec=PeerStatus, name="status")
    for _ in range(5):
        for _ in range(PEER_MISSES_TO_UNREACHABLE - 1):
            runtime.peer_failed("lb2", "timed out")
        runtime.peer_answered(answer)
    assert runtime.peer.reachable is True
    assert runtime.peer.unreachable_since is None
    assert runtime.sync.state == "unpaired"  # untouched by the misses


def test_misses_in_a_row_make_it_unreachable_once() -> None:
    runtime = _runtime()
    for _ in range(PEER_MISSES_TO_UNREACHABLE - 1):
        runtime.peer_failed("lb2", "timed out")
    assert runtime.peer.reachable is None
    runtime.peer_failed("lb2", "connection refused")
    assert runtime.peer.reachable is False
    since = runtime.peer.unreachable_since
    assert since is not None
    assert (runtime.sync.state, runtime.sync.message) == ("unreachable", "connection refused")
    runtime.peer_failed("lb2", "connection refused")
    assert runtime.peer.unreachable_since == since
