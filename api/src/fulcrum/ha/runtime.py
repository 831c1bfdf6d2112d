"""What one API process remembers about its pair between requests: the peer's last answer,
reachability, the sync state and the split-brain tracker.

The database holds the pairing itself; all of this is rebuilt from the peer within one poll
after a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from fulcrum.db import unit_of_work
from fulcrum.ha import events, tls
from fulcrum.ha.local import set_maintenance
from fulcrum.ha.peer_auth import CLOCK_SKEW
from fulcrum.ha.status import SplitBrainTracker
from fulcrum.ha.wire import PeerStatus
from fulcrum.models._types import utcnow
from fulcrum.schemas.telemetry import Severity
from fulcrum.settings import Settings
from fulcrum.telemetry.hub import Telemetry

PUSH_RETRY_SECONDS = 60.0  # a push the peer could not apply is retried after this (or on "sync now")
# Failed requests in a row before the peer counts as unreachable. One slow answer is not an outage:
# with both VMs of the lab sharing two busy CPUs, single polls timed out while the pair was in sync.
PEER_MISSES_TO_UNREACHABLE = 3
# Peer requests are refused beyond peer_auth.CLOCK_SKEW (30 s); warn well before that, and call
# the clocks fine again only well below the warning, so a skew near it does not flap.
CLOCK_SKEW_ALARM = 10.0
CLOCK_SKEW_CLEAR = 5.0
# A paired node whose role cannot be read for this long raises the ha.role_unknown alarm.
ROLE_UNKNOWN_ALARM_AFTER = 5.0
# keepalived's notification follows a transition within milliseconds; when the data plane shows
# another state for this long, the notification was lost and the data plane's state is recorded.
RECORD_DATAPLANE_STATE_AFTER = 3.0


@dataclass
class SyncRecord:
    state: str = "unpaired"
    since: datetime | None = None
    message: str = ""
    peer_revision: int | None = None
    peer_hash: str | None = None


@dataclass
class PeerCache:
    status: PeerStatus | None = None  # the peer's last answer to a poll
    last_seen: datetime | None = None
    reachable: bool | None = None  # None: not asked yet
    unreachable_since: datetime | None = None
    misses: int = 0  # failed requests since the last answer
    # SHA-256 of the certificate the peer presents instead of the pinned one (ha.peer_untrusted)
    untrusted_certificate: str | None = None
    clock_offset: float | None = None  # seconds the peer's clock is ahead of this node's, last poll
    clock_alarm: bool = False  # ha.clock_skew raised and not yet cleared


@dataclass
class MemberState:
    """What a cluster's writer has seen of one member (fulcrum.ha.cluster)."""

    peer: PeerCache = field(default_factory=PeerCache)
    sync: SyncRecord = field(default_factory=lambda: SyncRecord(state="unreachable"))
    retry_at: dict[str, float] = field(default_factory=dict)  # as HaRuntime.retry_at, for this member


@dataclass
class LocalStates:
    """What this process has seen of its own node: since when each group is in its state, how
    long the data plane has disagreed with keepalived's last notification, and an unknown role."""

    seen: dict[str, tuple[str, datetime]] = field(default_factory=dict)  # group -> (state, since)
    disagreeing: dict[str, float] = field(default_factory=dict)  # group -> monotonic time it began
    role_unknown_since: datetime | None = None
    role_unknown_at: float | None = None  # monotonic
    role_alarm: bool = False  # the ha.role_unknown event was raised and not yet cleared


@dataclass
class HaRuntime:
    settings: Settings
    telemetry: Telemetry
    session_scope: Callable[[], AbstractContextManager[Session]]
    peer: PeerCache = field(default_factory=PeerCache)
    sync: SyncRecord = field(default_factory=SyncRecord)
    split: SplitBrainTracker = field(default_factory=SplitBrainTracker)
    local: LocalStates = field(default_factory=LocalStates)
    wakeup: threading.Event = field(default_factory=threading.Event)
    lock: threading.RLock = field(default_factory=threading.RLock)
    # Held by pairing from storing the pairing to its forced push, and by each watcher tick: a
    # tick in between fast-forwarded the peer first, and the pairing's push then forced nothing.
    pairing_lock: threading.Lock = field(default_factory=threading.Lock)
    # lineage id of a head the peer failed to apply -> monotonic time to try again
    retry_at: dict[str, float] = field(default_factory=dict)
    conflict_recorded: tuple[str, str] | None = None
    # monotonic time since which this node waits to take the VIPs back (fulcrum.ha.failback)
    failback_waiting_since: float | None = None
    # SHA-256 of the certificate this process serves (read at start-up, as the server loaded it).
    served_certificate: str | None = None
    # On a cluster's writer: each member's last answer and sync, by member name.
    members: dict[str, MemberState] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: Settings, sessions: sessionmaker[Session], telemetry: Telemetry) -> HaRuntime:
        return cls(
            settings,
            telemetry,
            lambda: _scope(sessions),
            served_certificate=tls.served_fingerprint(settings.tls_certfile),
        )

    # --- what the watcher and the endpoints report -----------------------------------------

    def set_sync(
        self, state: str, message: str = "", peer_revision: int | None = None, peer_hash: str | None = None
    ) -> None:
        with self.lock:
            if state != self.sync.state or self.sync.since is None:
                self.sync.since = utcnow()
            self.sync.state = state
            self.sync.message = message
            if peer_revision is not None or state == "unpaired":
                self.sync.peer_revision = peer_revision
            if peer_hash is not None or state == "unpaired":
                self.sync.peer_hash = peer_hash

    def peer_answered(self, status: PeerStatus) -> None:
        with self.lock:
            was = self.peer.reachable
            self.peer.status = status
            self.peer.last_seen = utcnow()
            self.peer.reachable = True
            self.peer.unreachable_since = None
            self.peer.misses = 0
            self.peer.untrusted_certificate = None
        if was is False:
            events.emit(
                self.telemetry, "ha.peer_reachable", Severity.INFO, f"peer {status.name} answers again"
            )

    def peer_clock(self, name: str, offset: float) -> None:
        """The skew measured on a poll (answered or refused); ha.clock_skew when it nears the limit."""
        with self.lock:
            self.peer.clock_offset = offset
            raise_alarm = not self.peer.clock_alarm and abs(offset) >= CLOCK_SKEW_ALARM
            clear_alarm = self.peer.clock_alarm and abs(offset) < CLOCK_SKEW_CLEAR
            if raise_alarm or clear_alarm:
                self.peer.clock_alarm = raise_alarm
        detail = {"peer": name, "offset": round(offset, 3), "limit": CLOCK_SKEW}
        if raise_alarm:
            events.emit(
                self.telemetry, "ha.clock_skew",
                Severity.CRITICAL if abs(offset) > CLOCK_SKEW else Severity.WARNING,
                f"clocks differ by {abs(offset):.0f} s: {name}'s is {'ahead' if offset > 0 else 'behind'}; "
                f"peer requests are refused beyond {CLOCK_SKEW} s (check time sync on both nodes)",
                detail,
            )  # fmt: skip
        elif clear_alarm:
            events.emit(
                self.telemetry,
                "ha.clock_skew",
                Severity.INFO,
                f"clocks agree again: {name}'s differs by {abs(offset):.1f} s",
                detail,
            )

    def peer_failed(self, name: str, problem: str, presented_certificate: str | None = None) -> None:
        """A request to the peer failed; after PEER_MISSES_TO_UNREACHABLE in a row it is unreachable,
        or untrusted when it presented a certificate other than the pinned one (`presented_certificate`).
        A renewed certificate is announced by the peer within a poll or two, so one refusal is not
        yet an alarm; every refused connection sent nothing all the same."""
        with self.lock:
            self.peer.misses += 1
            if self.peer.misses < PEER_MISSES_TO_UNREACHABLE:
                return
            was = self.peer.reachable
            self.peer.reachable = False
            if was is not False:
                self.peer.unreachable_since = utcnow()
            newly_untrusted = (
                presented_certificate is not None and presented_certificate != self.peer.untrusted_certificate
            )
            if presented_certificate is not None:
                self.peer.untrusted_certificate = presented_certificate
            # In the same hold of the lock: a status read between the two must not pair this
            # refusal's certificate with the previous failure's message.
            self.set_sync("unreachable", problem)
        if newly_untrusted:
            events.emit(
                self.telemetry, "ha.peer_untrusted", Severity.CRITICAL,
                f"peer {name} is not trusted: {problem}",
                {"problem": problem, "presented_certificate": presented_certificate},
            )  # fmt: skip
        elif was is not False:
            events.emit(
                self.telemetry,
                "ha.peer_unreachable",
                Severity.WARNING,
                f"peer {name} is unreachable: {problem}",
                {"problem": problem},
            )

    # --- this node's own states ----------------------------------------------------------------

    def since(self, group: str, state: str, reported: str, reported_at: datetime | None) -> datetime | None:
        """Since when `group` is in `state`: keepalived's time when it reported that state, else
        when this process first read it from the data plane."""
        with self.lock:
            if state == reported and reported_at is not None:
                self.local.seen[group] = (state, reported_at)
                return reported_at
            if state == "UNKNOWN":
                self.local.seen.pop(group, None)
                return None
            seen = self.local.seen.get(group)
            if seen is None or seen[0] != state:
                seen = self.local.seen[group] = (state, utcnow())
            return seen[1]

    def disagrees_long(self, group: str, disagrees: bool, now: float | None = None) -> bool:
        """Whether the data plane has shown another state than keepalived reported for `group`
        for RECORD_DATAPLANE_STATE_AFTER seconds."""
        now = time.monotonic() if now is None else now
        with self.lock:
            if not disagrees:
                self.local.disagreeing.pop(group, None)
                return False
            began = self.local.disagreeing.setdefault(group, now)
            return now - began >= RECORD_DATAPLANE_STATE_AFTER

    def role_unknown(self, unknown: bool, now: float | None = None) -> str | None:
        """Track an unknown role: "raise" once it has lasted ROLE_UNKNOWN_ALARM_AFTER seconds,
        "clear" when a raised one ends, else None."""
        now = time.monotonic() if now is None else now
        with self.lock:
            local = self.local
            if not unknown:
                local.role_unknown_since = local.role_unknown_at = None
                if local.role_alarm:
                    local.role_alarm = False
                    return "clear"
                return None
            if local.role_unknown_at is None:
                local.role_unknown_since, local.role_unknown_at = utcnow(), now
            if not local.role_alarm and now - local.role_unknown_at >= ROLE_UNKNOWN_ALARM_AFTER:
                local.role_alarm = True
                return "raise"
            return None

    def forget_peer(self) -> None:
        """Unpaired: nothing about a peer holds any more, a split-brain step-down included."""
        if self.split.holding and self.settings.maintenance_file is not None:
            set_maintenance(self.settings.maintenance_file, False)
        with self.lock:
            self.peer = PeerCache()
            self.retry_at.clear()
            self.conflict_recorded = None
            self.split = SplitBrainTracker()
            self.failback_waiting_since = None
        self.set_sync("unpaired")

    def record_conflict(self, local: str, peer: str, message: str, session: Session | None = None) -> None:
        """An ha.conflict event (an alarm), once per pair of diverged heads."""
        with self.lock:
            if self.conflict_recorded == (local, peer):
                return
            self.conflict_recorded = (local, peer)
        events.emit(
            self.telemetry,
            "ha.conflict",
            Severity.CRITICAL,
            message,
            {"local_lineage": local, "peer_lineage": peer},
            session=session,
        )

    def may_push(self, lineage: str, now: float | None = None) -> bool:
        return self.retry_at.get(lineage, 0.0) <= (time.monotonic() if now is None else now)

    def push_failed(self, lineage: str) -> None:
        self.retry_at[lineage] = time.monotonic() + PUSH_RETRY_SECONDS

    def wake(self) -> None:
        """Have the watcher look at the peer now (after a local change)."""
        self.wakeup.set()


@contextmanager
def _scope(sessions: sessionmaker[Session]) -> Iterator[Session]:
    with sessions() as session, unit_of_work(session):
        yield session
