"""Make-active and the failover drill between two real API processes.

There is no VRRP on this host, so keepalived's part is played by the test: when a node's
maintenance file says 1 it reports that node FAULT and the other MASTER through the notify FIFOs,
as keepalived's track_file and the peer's takeover would. What is tested is the API's
orchestration (who is asked to step down, what is waited for, what is cleared, what is
reported); the VM lab (tests/kernel/test_ha_*) measures the real takeover.
"""

from __future__ import annotations

import threading
from pathlib import Path

from apitest import WEB
from hanode import WAIT_DEADLINE, Node, active_and_standby, two_nodes
from lab.wait import wait_until


def keepalived_stand_in(stepping_down: Node, taking_over: Node) -> threading.Thread:
    """Once `stepping_down`'s maintenance file holds 1: it goes FAULT, the other MASTER; once it
    holds 0 again, it comes back as BACKUP (no preemption)."""

    def maintenance(value: str) -> bool:
        return stepping_down.maintenance_file.exists() and stepping_down.maintenance_file.read_text().strip() == value

    def react() -> None:
        wait_until(lambda: maintenance("1"), 60, what="the maintenance file", interval=0.02)
        stepping_down.vrrp("front", "FAULT", 0)
        taking_over.vrrp("front", "MASTER")
        wait_until(lambda: maintenance("0"), 60, what="the maintenance file cleared", interval=0.02)
        stepping_down.vrrp("front", "BACKUP")

    thread = threading.Thread(target=react, daemon=True)
    thread.start()
    return thread


def test_make_active_and_the_drill_move_the_active_role_and_clean_up(tmp_path: Path) -> None:
    with two_nodes(tmp_path) as (alpha, beta, _, _):
        active_and_standby(alpha, beta, WEB)
        assert alpha.post("/ha/make-active", expect=409)["detail"] == "this node is already active"
        assert beta.post("/ha/drill", expect=409)["detail"] == "a drill starts on the active node; this node is standby"

        # Make beta active: alpha is asked to step down, and back once beta is MASTER.
        stand_in = keepalived_stand_in(alpha, beta)
        result = beta.post("/ha/make-active", expect=200)
        stand_in.join(10)
        assert result["handover_ms"] >= 0 and "alpha left maintenance" in result["message"], result
        assert alpha.maintenance_file.read_text().strip() == "0"
        steps = [(e["detail"]["enabled"], e["detail"]["by"]) for e in alpha.get("/events?kind=ha.maintenance")["data"]]
        assert steps == [(False, "peer:beta"), (True, "peer:beta")]
        assert beta.ha_status()["node"]["role"] == "active"
        wait_until(
            lambda: alpha.ha_status()["node"]["writer"] is False, WAIT_DEADLINE, what="alpha to see beta active",
        )

        # The drill from beta: it steps down, alpha takes over, beta comes back as BACKUP.
        wait_until(
            lambda: beta.ha_status()["peer"]["role"] == "standby",
            WAIT_DEADLINE,
            what="beta to see alpha standby",
        )
        stand_in = keepalived_stand_in(beta, alpha)
        drill = beta.post("/ha/drill", expect=200)
        stand_in.join(10)
        assert drill["handover_ms"] is not None and drill["handover_ms"] >= 0, drill
        assert drill["probe_targets"] == ["192.0.2.10:80"]
        assert drill["probe_total"] > 0 and 0 <= drill["probe_failed"] <= drill["probe_total"]
        assert "whether or not it holds them" in drill["message"]  # the probe's limit is said
        assert drill["connections_before"] is None  # no IPVS on this host: not measured, not zero
        # The hand-back: beta left maintenance and is BACKUP again; alpha keeps the VIPs (no preempt).
        assert drill["handback_ms"] is not None and drill["handback_ms"] >= 0 and drill["active_after"] == "alpha", drill
        assert beta.maintenance_file.read_text().strip() == "0"
        event = beta.get("/events?kind=ha.drill")["data"][0]
        assert event["message"].startswith(f"failover drill to alpha: taken over in {drill['handover_ms']} ms")
        assert beta.get("/audit?action=ha.drill")["count"] == 1
