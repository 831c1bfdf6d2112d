"""Fail-back of a preempting pair between two real API processes: the node with the higher
priority, standby while its peer holds the VIPs, waits for its synced connection table and then
takes the VIPs back through the planned hand-over (the peer's maintenance).

No IPVS on this host, so the connection counts are unknown and only the deadline can end the
wait; keepalived's part is played through the notify FIFOs (test_ha_handover.keepalived_stand_in).
The kernel test tests/kernel/test_ha_failback.py proves the synced-table gate with real sessions.
"""

from __future__ import annotations

from pathlib import Path

from apitest import WEB
from hanode import in_sync, pair, two_nodes
from lab.wait import wait_until
from test_ha_handover import keepalived_stand_in

FRONT = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"], "preempt": True}
DEADLINE = 3


def test_the_higher_priority_node_takes_the_vips_back_at_the_deadline(tmp_path: Path) -> None:
    env = {"FULCRUM_HA_FAILBACK_DEADLINE": str(DEADLINE)}
    with two_nodes(tmp_path, env=env) as (alpha, beta, _, _):
        assert alpha.http.patch("/api/v1/node", json={"priority": 150}).status_code == 200
        pair(alpha, beta)
        beta.login("admin")
        alpha.post("/vip-groups", FRONT, expect=201)
        alpha.post("/services", WEB, expect=201)
        alpha.commit()
        wait_until(lambda: in_sync(alpha, beta), what="beta in sync")
        # alpha returns (BACKUP) while beta holds the VIPs; keepalived itself never preempts.
        stand_in = keepalived_stand_in(beta, alpha)
        beta.vrrp("front", "MASTER")
        alpha.vrrp("front", "BACKUP")
        event = wait_until(lambda: (alpha.get("/events?kind=ha.failback")["data"] or [None])[0], 60,
                           what="alpha's fail-back")
        stand_in.join(10)
        waiting = alpha.get("/events?kind=ha.failback_waiting")["data"]
        assert [e["detail"]["peer"] for e in waiting] == ["beta"], waiting
        detail = event["detail"]
        # No IPVS here: nothing synced can be counted, so the deadline ended the wait.
        assert detail["deadline_hit"] is True and detail["synced"] is None, event
        assert detail["waited_s"] >= DEADLINE, event
        assert event["severity"] == "warning" and "deadline of 3 s passed" in event["message"], event
        assert "beta left maintenance" in event["message"], event
        assert alpha.ha_status()["node"]["role"] == "active"
        assert beta.maintenance_file.read_text().strip() == "0"
        maintenance = beta.get("/events?kind=ha.maintenance")["data"]
        steps = [(e["detail"]["enabled"], e["detail"]["by"]) for e in maintenance]
        assert steps == [(False, "peer:alpha"), (True, "peer:alpha")]
