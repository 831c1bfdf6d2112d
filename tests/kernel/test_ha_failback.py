"""A paired HA pair of real appliances (tests/lab/pair.py) whose VIP groups preempt: held echo
sessions with periodic traffic survive the fail-over and the fail-back, because the returning node
takes the VIPs back only once its synced connection table has caught up (fulcrum.ha.failback);
and saving this node's settings as the HA page's form does keeps the VIP and tracked interfaces.

lb1 (priority 150) is configured and committed, lb2 (100) gets its node settings and is paired
from lb1 over the sync link, which replicates the groups (preempt on) and services to it.

The fail-over kills lb1's keepalived: no advert, and lb1's kernel keeps only the master sync
daemon it ran, so it learns nothing of the sessions opened on lb2 while it is away. Started again,
lb1 rejoins as BACKUP; keepalived's own preempt would take the VIPs at once and reset those
sessions (run against `preempt` rendered as keepalived's, this test fails there). lb1 also keeps
the IPVS and conntrack entries of the sessions opened through it before: with strict TCP window
tracking those entries reset these sessions at the fail-back (see ha/README.md, "Fail-back without
resets"), so this test fails without `nf_conntrack_tcp_be_liberal`. Timings are printed, never asserted (emulated VM).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field

import pytest

import lab
from lab import client, netns, pair as ha
from lab.pair import ALL_VIPS, ECHO_PORT, FRONT_VIPS, GATEWAY, HaPair, Node

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(3000)]

SESSIONS = 4  # held echo sessions opened before the fail-over, and as many while lb1 is away
EXCHANGE_EVERY = 0.3  # seconds between one session's exchanges
# The returning node must end its wait by catching up, not by the deadline: generous here.
FAILBACK_DEADLINE = 600


def group_states(node: Node) -> set[str]:
    return {group["state"] for group in node.api.get("/ha/status")["node"]["groups"]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory, request):
    with lab.scope("ha fail-back pair"):
        p = HaPair.build(tmp_path_factory.mktemp("hafailback"),
                         env={"FULCRUM_HA_FAILBACK_DEADLINE": str(FAILBACK_DEADLINE)})
        try:
            p.setup_admin()
            lb1, lb2 = p.nodes
            p.configure(lb1, advert_interval=1, sync=True)
            for group in lb1.api.get("/vip-groups")["data"]:
                lb1.api.patch(f"/vip-groups/{group['id']}", {"preempt": True})
            lb1.api.commit("lb1's configuration, preempting")
            lb2.api.put("/node", p.node_settings(lb2))
            p.wait_single_master(180, node=lb1)
            p.pair(lb1, lb2)
            lab.wait_until(lambda: group_states(lb2) == {"BACKUP"}, 180, what="lb2's groups BACKUP")
            yield p
        finally:
            ha.keep_logs(p, request)


# --- node settings: the HA page's form ------------------------------------------------------


def plan_items(node: Node) -> dict[str, dict]:
    """The change plan's node items by what they say changes ("tracked interfaces change", ...)."""
    items = node.api.get("/changes")["plan"]["items"]
    return {item["detail"].split(":")[0]: item for item in items if item["kind"] == "node"}


def tracked(conf: str, instance: str) -> list[str]:
    block = re.search(rf"vrrp_instance {instance} \{{(.*?)\n\}}", conf, re.S)
    assert block, f"no vrrp_instance {instance} in keepalived.conf"
    listed = re.search(r"track_interface \{(.*?)\}", block.group(1), re.S)
    return listed.group(1).split() if listed else []


def test_saving_the_node_form_keeps_the_vip_and_tracked_interfaces(pair):
    lb1, _ = pair.nodes
    # A tracked interface besides the gateway's VIP interface (eth1), committed.
    lb1.api.patch("/node", {"track_interfaces": ["eth2"]})
    assert "tracks eth2" in plan_items(lb1)["tracked interfaces change"]["detail"]
    lb1.api.commit("track eth2")
    # What "This node's settings" on the HA page sends: no vip_interfaces, no track_interfaces.
    omitted = ("vip_interfaces", "track_interfaces")
    form = {k: v for k, v in pair.node_settings(lb1).items() if k not in omitted}
    saved = lb1.api.patch("/node", {**form, "priority": 140})
    assert saved["vip_interfaces"] == {"gateway": "eth1"} and saved["track_interfaces"] == ["eth2"], saved
    planned = plan_items(lb1)
    assert not {"VIP interfaces change", "tracked interfaces change"} & set(planned), planned
    lb1.api.commit("the HA page's form: priority 140")
    conf = (lb1.state_dir / "keepalived.conf").read_text()
    assert "priority 140" in conf and f"{GATEWAY}/24 dev eth1" in conf
    # keepalived tracks an instance's own interface by itself: eth0 is not listed.
    assert tracked(conf, "VG_gateway") == ["eth1", "eth2"] and tracked(conf, "VG_front") == ["eth2"]
    # The kernel: the gateway VIP is still on the backend side, the front VIPs on eth0.
    assert pair.single_master() is lb1
    on_eth1 = lb1.host.cmd(["ip", "-4", "-o", "addr", "show", "dev", "eth1"]).stdout
    assert f" {GATEWAY}/24 " in on_eth1, on_eth1
    on_eth0 = lb1.host.cmd(["ip", "-4", "-o", "addr", "show", "dev", "eth0"]).stdout
    assert GATEWAY not in on_eth0 and all(f" {vip}/32 " in on_eth0 for vip in FRONT_VIPS), on_eth0
    # Back to the pair's settings.
    lb1.api.patch("/node", {"priority": lb1.priority, "track_interfaces": []})
    assert "stops tracking eth2" in plan_items(lb1)["tracked interfaces change"]["detail"]
    lb1.api.commit("back to the lab's node settings")
    assert tracked((lb1.state_dir / "keepalived.conf").read_text(), "VG_gateway") == ["eth1"]


# --- fail-over and fail-back with held sessions ---------------------------------------------


@dataclass
class Held:
    sock: socket.socket
    port: int
    opened_via: str
    exchanges: int = 0
    slowest: float = 0.0  # longest wait for one echo: the outage this session saw
    failure: str | None = None


@dataclass
class Sessions:
    """Echo sessions held open, each exchanging a line every EXCHANGE_EVERY seconds in a thread."""

    held: list[Held] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def open(self, pair: HaPair, count: int, via: str) -> list[Held]:
        opened = []
        for _ in range(count):
            # A long timeout: a takeover delays an echo; only a reset or a wrong answer fails it.
            sock = client.hold_tcp(pair.client, FRONT_VIPS[0], ECHO_PORT, timeout=60)
            for n in range(5):  # IPVS syncs a connection from its 3rd packet on (sync_threshold 3 50)
                assert client.exchange(sock, f"open {n}\n".encode()) == f"open {n}\n".encode()
            opened.append(Held(sock, sock.getsockname()[1], via))
        self.held.extend(opened)
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
        return opened

    def _run(self) -> None:
        while not self.stopping.wait(EXCHANGE_EVERY):
            for session in list(self.held):
                if session.failure is not None:
                    continue
                line = f"{session.port} {session.exchanges}\n".encode()
                started = time.monotonic()
                try:
                    answer = client.exchange(session.sock, line)
                except OSError as error:
                    session.failure = f"{type(error).__name__}: {error}"
                    continue
                session.slowest = max(session.slowest, time.monotonic() - started)
                if answer != line:
                    session.failure = f"sent {line!r}, got {answer!r}"
                session.exchanges += 1

    def wait_rounds(self, rounds: int) -> None:
        """Until every live session has made `rounds` more exchanges."""
        targets = {id(s): s.exchanges + rounds for s in self.held}
        lab.wait_until(lambda: all(s.failure or s.exchanges >= targets[id(s)] for s in self.held), 120,
                       what=f"{rounds} more exchanges on every session")

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(30)

    def report(self) -> str:
        return "; ".join(f"{s.port} via {s.opened_via}: {s.exchanges} exchanges, slowest {s.slowest:.2f} s"
                         + (f", FAILED {s.failure}" if s.failure else "") for s in self.held)


def established(node: Node, port: int) -> bool:
    """Whether the node's IPVS table (synced entries included) has the session as ESTABLISHED."""
    table = netns.proc_net(node.host, "ip_vs_conn")
    return any((fields := line.split())[2] == f"{port:04X}" and fields[7] == "ESTABLISHED"
               for line in table.splitlines()[1:])


def test_held_sessions_survive_the_failover_and_the_failback(pair):
    lb1, lb2 = pair.nodes
    pair.wait_single_master(120, node=lb1)
    sessions = Sessions()
    try:
        before = sessions.open(pair, SESSIONS, via="lb1")
        lab.wait_until(lambda: all(established(lb2, s.port) for s in before), 60,
                       what="lb2 to hold the sessions opened on lb1 (synced)")

        # Fail-over: lb1's keepalived dies; lb2 takes every VIP.
        killed = time.monotonic()
        pair.kill_keepalived(lb1)
        lab.wait_until(lambda: lb2.vips() == set(ALL_VIPS), 180, what="lb2 to take every VIP", interval=0.05)
        print(f"fail-over: lb2 held every VIP {time.monotonic() - killed:.2f} s after lb1's keepalived was "
              "killed")
        sessions.wait_rounds(3)

        # Sessions opened while lb1 is away: only lb2 has them.
        during = sessions.open(pair, SESSIONS, via="lb2")
        sessions.wait_rounds(3)
        assert not any(established(lb1, s.port) for s in during), "lb1 learnt the new sessions while away"

        # lb1 returns: BACKUP first, then it takes the VIPs back once its synced table caught up.
        returned = time.monotonic()
        pair.start_keepalived(lb1)
        pair.wait_single_master(FAILBACK_DEADLINE + 120, node=lb1)
        failback_s = time.monotonic() - returned
        synced_at_failback = sum(established(lb1, s.port) for s in during)
        sessions.wait_rounds(5)
    finally:
        sessions.stop()
    print(f"fail-back: lb1 held every VIP {failback_s:.1f} s after its keepalived started; "
          f"{synced_at_failback} of {SESSIONS} sessions opened on lb2 were synced to lb1 then")
    # The watcher records the event once the peer has left maintenance, which can come after the
    # sessions' last rounds on a slow emulated VM.
    events = lab.wait_until(lambda: lb1.api.get("/events?kind=ha.failback")["data"], 60,
                            what="lb1's ha.failback event")
    print(f"lb1's fail-back event: {events[0]['message']} {events[0]['detail']}")
    print("sessions:", sessions.report())
    failed = [s for s in sessions.held if s.failure]
    print(f"sessions held: {len(sessions.held)}, survived both moves: {len(sessions.held) - len(failed)}")
    assert not failed, f"sessions broke: {sessions.report()}"
    assert events and events[0]["detail"]["deadline_hit"] is False, events
    for session in sessions.held:
        session.sock.close()
