"""The rules of the pair, as pure functions: who may write, who is behind, when it is split brain.

The one-writer rule: edits are accepted on the active node (VRRP MASTER) only. An unpaired node
is its own writer; a cluster's member never is (its writer is the node that added it). When
neither node knows it is MASTER (no VIP groups yet, or both BACKUP or FAULT), the node with the
higher priority, on a tie the lower name, writes. In a split brain both are MASTER and both
accept edits; the histories may then diverge, which replication detects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fulcrum.ha.wire import Head

SPLIT_BRAIN_AFTER = 2.0  # seconds both nodes must report MASTER for a group before it counts
HOLD_MIN = 10.0  # a node that stepped down to end a split brain stays down at least this long
HOLD_MAX = 300.0  # ... doubling each time the split brain comes back, up to this


@dataclass(frozen=True)
class Side:
    name: str
    priority: int
    role: str  # active, standby, fault, maintenance, unknown


def by_priority(local: Side, peer_name: str, peer_priority: int | None) -> bool:
    """Whether this node wins the priority rule: higher priority, then the lower name. An
    unknown peer priority counts as equal."""
    theirs = local.priority if peer_priority is None else peer_priority
    return (-local.priority, local.name) < (-theirs, peer_name)


def is_writer(
    local: Side, paired: bool, peer: Side | None, peer_name: str, cluster_member: bool = False
) -> bool:
    if cluster_member:
        return False  # a cluster's member takes its writer's configuration, whatever the roles
    if not paired:
        return True
    if local.role == "active":
        return True  # also in a split brain: both accept edits, and the conflict is detected
    if peer is not None and peer.role == "active":
        return False
    return by_priority(local, peer_name, peer.priority if peer else None)


def relation(local: Head | None, local_history: list[str], peer: Head | None, peer_history: list[str]) -> str:
    """in_sync, peer_behind, peer_ahead or conflict, from this node's point of view.

    A head whose lineage is in the other side's history is an ancestor of the other's head.
    """
    if local is None and peer is None:
        return "in_sync"
    if local is not None and peer is not None and local.shared_hash == peer.shared_hash:
        return "in_sync"
    if peer is None or peer.lineage in local_history:
        return "peer_behind"
    if local is None or local.lineage in peer_history:
        return "peer_ahead"
    return "conflict"


@dataclass
class SplitBrainTracker:
    """Both nodes MASTER for a group, as seen over the peer link, for SPLIT_BRAIN_AFTER seconds.

    The node that loses the priority rule steps down (maintenance) until the peer is MASTER of
    every group and this node of none, for at least its hold time, which doubles each time the
    split brain comes back soon after (so a broken VRRP path cannot make it flap every second).
    """

    seen_since: float | None = None
    active: bool = False
    since: datetime | None = None  # when it was confirmed (wall clock, for the status)
    groups: list[str] = field(default_factory=list)
    holding: bool = False
    hold_until: float = 0.0
    hold: float = HOLD_MIN
    last_end: float | None = None

    def observe(self, now: float, both_master: list[str], peer_stepped_down: bool = False) -> bool:
        """Feed one observation; True when a split brain has just been confirmed.

        `peer_stepped_down`: the peer is in maintenance now. After both nodes were seen MASTER,
        that is the peer confirming the split brain first and yielding: the two watchers poll
        independently, and the yielding one may drop its VIPs before this one's confirming poll.
        """
        if not both_master and self.seen_since is not None and not self.active and peer_stepped_down:
            both_master = self.groups
            self.seen_since = now - SPLIT_BRAIN_AFTER
        if not both_master:
            if self.active:
                self.last_end = now
            self.seen_since, self.active, self.groups, self.since = None, False, [], None
            return False
        self.groups = sorted(both_master)
        if self.seen_since is None:
            self.seen_since = now
        if not self.active and now - self.seen_since >= SPLIT_BRAIN_AFTER:
            self.active = True
            self.since = datetime.now(UTC)
            if self.last_end is not None and now - self.last_end < 2 * self.hold:
                self.hold = min(HOLD_MAX, self.hold * 2)
            return True
        return False

    def start_hold(self, now: float) -> None:
        self.holding = True
        self.hold_until = now + self.hold

    def may_release(self, now: float, peer_master_of_all: bool, local_master_of_any: bool) -> bool:
        return self.holding and now >= self.hold_until and peer_master_of_all and not local_master_of_any


def both_master(local_groups: Mapping[str, str], peer_groups: Mapping[str, str]) -> list[str]:
    return [
        name
        for name, state in local_groups.items()
        if state == "MASTER" and peer_groups.get(name) == "MASTER"
    ]
