"""The rules of the pair as pure functions: the writer, who is ahead, split brain."""

from __future__ import annotations

import pytest

from fulcrum.services.lineage import next_lineage
from fulcrum.ha.status import HOLD_MIN, SPLIT_BRAIN_AFTER, Side, SplitBrainTracker, both_master, is_writer, relation
from fulcrum.ha.wire import Head


def side(name: str, role: str, priority: int = 100) -> Side:
    return Side(name, priority, role)


@pytest.mark.parametrize(
    ("local", "peer", "writer"),
    [
        (side("beta", "active"), side("alpha", "standby"), True),
        (side("alpha", "standby"), side("beta", "active"), False),
        (side("beta", "active"), side("alpha", "active"), True),  # split brain: both accept edits
        # Neither knows it is MASTER: higher priority, then the lower name.
        (side("alpha", "unknown"), side("beta", "unknown"), True),
        (side("beta", "unknown"), side("alpha", "unknown"), False),
        (side("beta", "standby", 150), side("alpha", "standby", 100), True),
        (side("alpha", "fault", 100), side("beta", "maintenance", 150), False),
        (side("alpha", "maintenance"), side("beta", "unknown"), True),
    ],
)
def test_the_one_writer_rule(local: Side, peer: Side, writer: bool) -> None:
    assert is_writer(local, True, peer, peer.name) is writer


def test_unpaired_writes_and_an_unseen_peer_counts_as_equal_priority() -> None:
    assert is_writer(side("beta", "standalone"), False, None, "")
    assert is_writer(side("alpha", "unknown"), True, None, "beta")
    assert not is_writer(side("beta", "unknown"), True, None, "alpha")


def chain(*hashes: str) -> list[Head]:
    """Heads committed one after another (shared hashes h...), as lineage ids chain them."""
    heads, parent = [], None
    for number, shared in enumerate(hashes, 1):
        parent = next_lineage(parent, shared * 64)
        heads.append(Head(revision=number, shared_hash=shared * 64, lineage=parent))
    return heads


def history(heads: list[Head]) -> list[str]:
    return [h.lineage for h in reversed(heads)]


def test_ahead_behind_and_in_sync() -> None:
    a = chain("1", "2", "3")
    b = a[:2]
    assert relation(a[-1], history(a), b[-1], history(b)) == "peer_behind"
    assert relation(b[-1], history(b), a[-1], history(a)) == "peer_ahead"
    assert relation(a[-1], history(a), a[-1], history(a)) == "in_sync"
    assert relation(a[-1], history(a), None, []) == "peer_behind"
    assert relation(None, [], a[-1], history(a)) == "peer_ahead"
    assert relation(None, [], None, []) == "in_sync"


def test_divergent_histories_are_a_conflict() -> None:
    base = chain("1", "2")
    ours = base + [Head(revision=3, shared_hash="a" * 64, lineage=next_lineage(base[-1].lineage, "a" * 64))]
    theirs = base + [Head(revision=3, shared_hash="b" * 64, lineage=next_lineage(base[-1].lineage, "b" * 64))]
    assert relation(ours[-1], history(ours), theirs[-1], history(theirs)) == "conflict"
    assert relation(theirs[-1], history(theirs), ours[-1], history(ours)) == "conflict"


def test_rolling_back_to_an_older_configuration_is_ahead_not_ambiguous() -> None:
    """Content hashes alone would make both sides think the other is behind: alpha at h2, beta
    went h1 -> h2 -> h1 (a rollback). The lineage ids tell beta is ahead."""
    alpha = chain("1", "2")
    beta = chain("1", "2", "1")
    assert beta[-1].shared_hash == alpha[0].shared_hash and beta[-1].lineage != alpha[0].lineage
    assert relation(beta[-1], history(beta), alpha[-1], history(alpha)) == "peer_behind"
    assert relation(alpha[-1], history(alpha), beta[-1], history(beta)) == "peer_ahead"


def test_the_same_edit_on_both_sides_is_in_sync() -> None:
    base = chain("1")
    same = next_lineage(base[-1].lineage, "2" * 64)
    assert next_lineage(base[-1].lineage, "2" * 64) == same


def test_split_brain_needs_two_seconds_and_the_loser_holds_then_releases() -> None:
    tracker = SplitBrainTracker()
    assert both_master({"front": "MASTER", "back": "BACKUP"}, {"front": "MASTER", "back": "MASTER"}) == ["front"]
    assert not tracker.observe(0.0, ["front"])
    assert not tracker.observe(SPLIT_BRAIN_AFTER - 0.1, ["front"]) and not tracker.active
    assert tracker.observe(SPLIT_BRAIN_AFTER, ["front"]) and tracker.active and tracker.groups == ["front"]
    assert not tracker.observe(SPLIT_BRAIN_AFTER + 1, ["front"])  # reported once
    tracker.start_hold(3.0)
    assert not tracker.observe(4.0, [])  # this node stepped down: over
    assert not tracker.may_release(3.0 + HOLD_MIN - 0.1, True, False)  # hold time not over
    assert not tracker.may_release(3.0 + HOLD_MIN, False, False)  # the peer is not MASTER of all
    assert not tracker.may_release(3.0 + HOLD_MIN, True, True)  # this node is still MASTER somewhere
    assert tracker.may_release(3.0 + HOLD_MIN, True, False)


def test_a_split_brain_that_comes_back_soon_holds_longer() -> None:
    tracker = SplitBrainTracker()
    tracker.observe(0.0, ["front"])
    tracker.observe(2.0, ["front"])
    tracker.observe(3.0, [])
    tracker.observe(4.0, ["front"])
    assert tracker.observe(6.0, ["front"])
    assert tracker.hold == 2 * HOLD_MIN


def test_the_winner_confirms_a_split_brain_the_peer_ended_first() -> None:
    """The watchers poll independently: the yielding node may confirm first and drop its VIPs
    before the other's confirming poll. Seen both MASTER, then the peer in maintenance: confirmed."""
    tracker = SplitBrainTracker()
    assert not tracker.observe(0.0, ["front"])
    assert tracker.observe(2.1, [], peer_stepped_down=True) and tracker.groups == ["front"]
    assert not tracker.observe(4.2, [], peer_stepped_down=True) and not tracker.active  # reported once, now over
    # Without a both-MASTER observation before it, the peer's maintenance is just maintenance.
    assert not SplitBrainTracker().observe(0.0, [], peer_stepped_down=True)
