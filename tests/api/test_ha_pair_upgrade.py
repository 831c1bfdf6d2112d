"""The pair upgrade driven from the active node (POST /ha/upgrade), between two real API processes.

What runs here: the checks before it starts, the bundle streamed to the standby and kept there
after its own `rauc info`, and a step that fails (the standby cannot install: no RAUC service
here, so RAUC cannot say which slot runs) stopping the upgrade with the standby's reason while the
active node keeps the VIPs and stays out of maintenance. keepalived's part is played by the test
(tests/api/test_ha_handover.py says how). Installing, restarting into the new slots and the one
failover need A/B disks: the two-appliance image test runs them (make test-image-pair).
"""

from __future__ import annotations

import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from apitest import WEB
from hanode import WAIT_DEADLINE, Node, active_and_standby, kept_bundle_files, rauc_env, two_nodes
from lab.bundles import Bundles
from lab.wait import wait_until

pytestmark = pytest.mark.skipif(
    shutil.which("rauc") is None or shutil.which("mksquashfs") is None,
    reason="needs rauc and squashfs-tools (scripts/setup-host installs them)",
)


def upgrade(node: Node) -> dict[str, Any] | None:
    answer: dict[str, Any] | None = node.get("/ha/upgrade")["upgrade"]
    return answer


def steps(record: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {step["name"]: (step["state"], step["detail"]) for step in record["steps"]}


def test_a_pair_upgrade_starts_only_when_the_pair_is_ready_and_stops_at_a_failed_step(
    tmp_path: Path, bundles: Bundles
) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        assert alpha.post("/ha/upgrade", expect=409)["detail"] == "this node is not paired"
        active_and_standby(alpha, beta, WEB)
        wait_until(lambda: alpha.ha_status()["sync"]["state"] == "in_sync", WAIT_DEADLINE, what="alpha in sync")
        assert upgrade(alpha) is None

        # Not before a bundle waits here; never from the standby.
        detail = alpha.post("/ha/upgrade", expect=409)["detail"]
        assert detail.startswith("no firmware bundle is waiting on this node"), detail
        assert beta.post("/ha/upgrade", expect=409)["code"] == "standby_read_only"

        alpha.call("POST", "/firmware/bundle", content=bundles.good.read_bytes(),
                   headers={"Content-Type": "application/octet-stream"}, expect=201)
        started = alpha.post("/ha/upgrade", expect=202)["upgrade"]
        assert (started["version"], started["node"], started["peer"], started["state"]) == ("2.0.0", "alpha", "beta", "running")
        assert [step["name"] for step in started["steps"]] == [
            "send_bundle", "install_peer", "restart_peer", "install_self", "hand_over", "restart_self", "rejoin"]
        assert alpha.post("/ha/upgrade", expect=409)["detail"] == "a pair upgrade to 2.0.0 is running already"

        final = wait_until(lambda: (record := upgrade(alpha)) and record["state"] != "running" and record,
                           WAIT_DEADLINE, what="the pair upgrade to stop")
        assert final["state"] == "failed", final
        found = steps(final)
        assert found["send_bundle"] == ("done", f"beta checked the bundle with RAUC and keeps it ({bundles.good.stat().st_size} bytes)")
        assert kept_bundle_files(beta) == ["bundle.json", "bundle.raucb"]
        state, reason = found["install_peer"]
        assert state == "failed" and reason is not None
        assert reason.startswith("beta did not start the install: RAUC cannot say which slot is running"), reason
        assert all(found[name][0] == "pending" for name in ("restart_peer", "install_self", "hand_over", "restart_self", "rejoin"))
        assert final["message"].startswith("install peer failed: beta did not start the install")

        # beta follows it from the status alpha sends with each poll answer: its own record is empty.
        followed = wait_until(lambda: (seen := beta.get("/ha/upgrade"))["peer_upgrade"] and
                              seen["peer_upgrade"]["state"] == "failed" and seen, WAIT_DEADLINE,
                              what="beta to see alpha's stopped upgrade")
        assert followed["upgrade"] is None and followed["peer_seen_at"], followed
        assert followed["peer_upgrade"]["message"] == final["message"], followed

        # Nothing on alpha moved: it is active, not in maintenance, its bundle still waiting.
        assert alpha.ha_status()["node"]["role"] == "active"
        assert not alpha.maintenance_file.exists() or alpha.maintenance_file.read_text().strip() == "0"
        assert alpha.get("/firmware")["bundle"]["version"] == "2.0.0"
        audit = alpha.sql("SELECT username, target FROM audit_log WHERE action = 'ha.upgrade'")
        assert audit == [("admin", "2.0.0")]
        # The start and the stop are events, which alert rules can send on.
        announced = [(e["severity"], e["message"]) for e in reversed(alpha.events(kind="ha.upgrade"))]
        assert announced == [
            ("info", "pair upgrade to 2.0.0 started by admin: beta first, then alpha"),
            ("critical", f"pair upgrade to 2.0.0 stopped: {final['message']}"),
        ], announced

        # Not while the peer drives one: beta's record says running (as when beta drove an upgrade,
        # handed the VIPs to alpha and is away restarting itself), and alpha, told so with beta's
        # status, refuses to start another.
        driven_by_beta = {**final, "state": "running", "node": "beta", "peer": "alpha", "message": None}
        beta_record = beta.data / "firmware" / "pair-upgrade.json"
        beta_record.write_text(json.dumps(driven_by_beta))
        wait_until(lambda: (alpha.get("/ha/upgrade")["peer_upgrade"] or {}).get("state") == "running",
                   WAIT_DEADLINE, what="alpha to see beta's running upgrade")
        refused = alpha.post("/ha/upgrade", expect=409)["detail"]
        assert refused == "beta drives a pair upgrade to 2.0.0: wait until it ends", refused
        beta_record.unlink()
        wait_until(lambda: alpha.get("/ha/upgrade")["peer_upgrade"] is None, WAIT_DEADLINE,
                   what="alpha to see beta's record gone")

        # A failed upgrade may be started again, once: of two admins pressing Start together, one
        # starts it and the other is told it runs.
        barrier = threading.Barrier(2)

        def press_start() -> int:
            barrier.wait()
            return int(alpha.request("POST", "/ha/upgrade").status_code)

        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = sorted(pool.map(lambda _: press_start(), range(2)))
        assert answers == [202, 409], answers
        assert len(alpha.events(kind="ha.upgrade")) == 3
        wait_until(lambda: upgrade(alpha)["state"] == "failed", WAIT_DEADLINE, what="the second try to stop")


def test_an_admin_stops_the_pair_upgrade_at_its_next_step(tmp_path: Path, bundles: Bundles) -> None:
    with two_nodes(tmp_path, env=rauc_env(tmp_path)) as (alpha, beta, _, _):
        active_and_standby(alpha, beta, WEB)
        wait_until(lambda: alpha.ha_status()["sync"]["state"] == "in_sync", WAIT_DEADLINE, what="alpha in sync")
        assert alpha.post("/ha/upgrade/stop", expect=409)["detail"] == "no pair upgrade is running on this node"
        alpha.call("POST", "/firmware/bundle", content=bundles.good.read_bytes(),
                   headers={"Content-Type": "application/octet-stream"}, expect=201)
        started = alpha.post("/ha/upgrade", expect=202)["upgrade"]
        wait_until(lambda: upgrade(alpha)["state"] == "failed", WAIT_DEADLINE, what="the upgrade to fail here")
        # As if the standby's steps were done and alpha's own install were under way: an install
        # the host cannot finish (no RAUC service here), so the step keeps waiting.
        under_way = {**started, "state": "running", "message": None, "steps": [
            {**step, "state": "done", "started_at": started["started_at"], "ended_at": started["started_at"],
             "requested_at": started["started_at"]} for step in started["steps"][:3]
        ] + [{**started["steps"][3], "state": "running", "started_at": started["started_at"],
              "requested_at": started["started_at"]}] + started["steps"][4:]}  # fmt: skip
        (alpha.data / "firmware" / "pair-upgrade.json").write_text(json.dumps(under_way))

        # The standby follows it and says where it is stopped.
        wait_until(lambda: (beta.get("/ha/upgrade")["peer_upgrade"] or {}).get("state") == "running",
                   WAIT_DEADLINE, what="beta to see alpha's running upgrade")
        refused = beta.post("/ha/upgrade/stop", expect=409)["detail"]
        assert refused == "alpha drives the pair upgrade to 2.0.0: stop it there", refused

        asked = alpha.post("/ha/upgrade/stop", expect=202)["upgrade"]
        assert asked["state"] == "stopped" or asked["stop_requested_by"] == "admin", asked
        stopped = wait_until(lambda: (record := upgrade(alpha)) and record["state"] == "stopped" and record,
                             WAIT_DEADLINE, what="the driver to stop the upgrade")
        assert stopped["message"] == (
            "stopped by admin during install self; alpha has 2.0.0 installed, to boot at the next restart "
            "(System → Firmware on that node cancels it)"
        ), stopped
        assert steps(stopped)["install_self"][0] == "stopped"
        assert [step["state"] for step in stopped["steps"]][4:] == ["pending"] * 3, stopped
        assert stopped["stop_requested_by"] is None
        assert alpha.post("/ha/upgrade/stop", expect=409)["detail"] == "no pair upgrade is running on this node"
        assert alpha.sql("SELECT username, target FROM audit_log WHERE action = 'ha.upgrade.stop'") == [
            ("admin", "2.0.0")]
        warned = alpha.events(kind="ha.upgrade")[0]
        assert (warned["severity"], warned["message"]) == ("warning", f"pair upgrade to 2.0.0 {stopped['message']}")
        # Stopped before the hand-over: alpha never left its role.
        assert alpha.ha_status()["node"]["role"] == "active"
