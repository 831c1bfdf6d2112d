"""Fail-back of a preempting pair between two real API processes: the node with the higher
priority, standby while its peer holds the VIPs, waits for its synced connection table and then
takes the VIPs back through the planned hand-over (the peer's maintenance).

No IPVS on this host: without a connection table only the deadline can end the wait, and with
one (a file in /proc/net/ip_vs_conn's format per node, FULCRUM_IPVS_CONN_FILE) the gate compares
the connections; keepalived's part is played through the notify FIFOs
(test_ha_handover.keepalived_stand_in). The kernel test tests/kernel/test_ha_failback.py proves the
gate with real sessions.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from apitest import WEB
from hanode import Node, in_sync, pair, two_nodes
from lab.wait import wait_until
from test_ha_handover import keepalived_stand_in

FRONT = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"], "preempt": True}
DEADLINE = 3


def alpha_returns_while_beta_is_master(alpha: Node, beta: Node) -> threading.Thread:
    """A preempting pair in sync, alpha of the higher priority; alpha returns (BACKUP) while beta
    holds the VIPs (keepalived itself never preempts). keepalived's part: the stand-in returned."""
    assert alpha.http.patch("/api/v1/node", json={"priority": 150}).status_code == 200
    pair(alpha, beta)
    beta.login("admin")
    alpha.post("/vip-groups", FRONT, expect=201)
    alpha.post("/services", WEB, expect=201)
    alpha.commit()
    wait_until(lambda: in_sync(alpha, beta), what="beta in sync")
    stand_in = keepalived_stand_in(beta, alpha)
    beta.vrrp("front", "MASTER")
    alpha.vrrp("front", "BACKUP")
    return stand_in


def test_the_higher_priority_node_takes_the_vips_back_at_the_deadline(tmp_path: Path) -> None:
    env = {"FULCRUM_HA_FAILBACK_DEADLINE": str(DEADLINE)}
    with two_nodes(tmp_path, env=env) as (alpha, beta, _, _):
        stand_in = alpha_returns_while_beta_is_master(alpha, beta)
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


CONN_HEADER = "Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData\n"


def connection(client_port: int) -> str:
    """An ESTABLISHED entry: client 10.77.0.10:PORT to 192.0.2.100:80, backend 198.51.100.1:80."""
    return f"TCP 0A4D000A {client_port:04X} C0000264 0050 C6336401 0050 ESTABLISHED    899\n"


def test_the_fail_back_waits_for_each_of_the_peers_connections_not_for_their_count(tmp_path: Path) -> None:
    """alpha comes back holding two connections of its own from before (a killed keepalived leaves
    them in the kernel) while beta holds two others: as many, but not synced. alpha takes the VIPs
    back only once both of beta's are in its table, well before its deadline."""
    tables = {name: tmp_path / f"{name}-ip_vs_conn" for name in ("alpha", "beta")}
    tables["alpha"].write_text(CONN_HEADER + connection(40001) + connection(40002))
    tables["beta"].write_text(CONN_HEADER + connection(50001) + connection(50002))
    env = {"FULCRUM_HA_FAILBACK_DEADLINE": "120"}
    node_env = {name: {"FULCRUM_IPVS_CONN_FILE": str(path)} for name, path in tables.items()}
    with two_nodes(tmp_path, env=env, node_env=node_env) as (alpha, beta, _, _):
        stand_in = alpha_returns_while_beta_is_master(alpha, beta)
        wait_until(lambda: alpha.get("/events?kind=ha.failback_waiting")["data"], 60, what="alpha to start waiting")
        # Ten of the watcher's rounds (0.3 s each): a gate by counts (2 >= 2) would have taken the
        # VIPs back in the first.
        time.sleep(3)
        assert alpha.get("/events?kind=ha.failback")["data"] == []
        assert alpha.ha_status()["node"]["role"] == "standby"
        tables["alpha"].write_text(CONN_HEADER + "".join(connection(p) for p in (40001, 40002, 50001, 50002)))
        event = wait_until(lambda: (alpha.get("/events?kind=ha.failback")["data"] or [None])[0], 60,
                           what="alpha's fail-back")
        stand_in.join(10)
        detail = event["detail"]
        assert detail["compared"] == "connections" and detail["deadline_hit"] is False, event
        assert (detail["synced"], detail["peer_established"]) == (2, 2), event
        assert "caught up after" in event["message"] and "2 of 2 ESTABLISHED connections of beta" in event["message"]
        assert alpha.ha_status()["node"]["role"] == "active"
