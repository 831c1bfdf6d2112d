"""The /ha endpoints on one node (the two-node behaviour is in test_ha_pairing and
test_ha_replication): status, VRRP roles from keepalived's notify lines, maintenance, roles."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import WEB, login_as
from fulcrum import __version__
from fulcrum.ha import wire
from fulcrum.db import unit_of_work
from fulcrum.ha.runtime import ROLE_UNKNOWN_ALARM_AFTER, HaRuntime
from fulcrum.ha.view import local_view
from fulcrum.ha.watcher import keep_local_state
from fulcrum.models._types import utcnow
from fulcrum.models.ha import HaPairing

FRONT = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"]}


@pytest.fixture
def ha(app: FastAPI, client: TestClient, session: Session, tmp_path: Path) -> Iterator[HaRuntime]:
    """The app's HA runtime on the test transaction, with its own maintenance file; the watcher
    thread is stopped (it would share the test's session from another thread)."""
    app.state.ha_watcher.stop()
    runtime: HaRuntime = app.state.ha
    runtime.session_scope = lambda: unit_of_work(session)
    runtime.settings = runtime.settings.model_copy(update={"maintenance_file": tmp_path / "maintenance"})
    yield runtime


def notify(app: FastAPI, line: str) -> None:
    app.state.telemetry.handle_line(line)


def paired_with(session: Session, name: str) -> None:
    session.add(HaPairing(id=1, peer_name=name, peer_url="http://127.0.0.1:9", key="00" * 32, initiator=True, paired_at=utcnow()))
    session.flush()


def test_an_unpaired_node_is_standalone_and_its_own_writer(client: TestClient, ha: HaRuntime) -> None:
    status = client.get("/api/v1/ha/status").json()
    assert status["node"] == {"name": "fulcrum", "role": "standalone", "groups": [], "maintenance": False, "writer": True, "priority": 100,
                              "certificate": None, "role_unknown_since": None, "role_unknown_alarm": False,
                              "software_version": __version__, "config_schema": wire.CONFIG_SCHEMA}
    assert status["peer"] is None
    assert status["active"] == {"name": None, "local": False, "url": None, "split_brain": False}
    assert status["sync"]["state"] == "unpaired"
    assert status["conn_sync"] == {"enabled": False, "interface": None, "local_daemon": "off", "local_connections": None, "peer_connections": None}
    assert status["split_brain"] == {"active": False, "since": None, "groups": [], "holding": False}
    for path in ("/ha/sync", "/ha/make-active", "/ha/drill"):
        response = client.post(f"/api/v1{path}")
        assert response.status_code == 409 and response.json()["detail"] == "this node is not paired", (path, response.text)
    assert client.post("/api/v1/ha/resolve", json={"winner": "local"}).status_code == 409
    assert client.get("/api/v1/ha/diff").status_code == 409
    assert client.delete("/api/v1/ha/pair").status_code == 409


def test_vrrp_states_come_from_keepalived_notify_lines(app: FastAPI, client: TestClient, session: Session, ha: HaRuntime) -> None:
    client.post("/api/v1/vip-groups", json=FRONT)
    client.post("/api/v1/services", json=WEB)
    assert client.post("/api/v1/revisions", json={}).status_code == 201
    # No IPVS on this host: nothing was applied, so keepalived's notifications are all there is.
    assert client.get("/api/v1/ha/status").json()["node"]["groups"] == [{"name": "front", "state": "UNKNOWN", "since": None, "vips_held": []}]

    notify(app, 'INSTANCE "VG_front" BACKUP 100')
    notify(app, 'INSTANCE "VG_front" MASTER 100')
    status = client.get("/api/v1/ha/status").json()
    group = status["node"]["groups"][0]
    assert group["state"] == "MASTER" and group["since"] is not None
    assert status["node"]["role"] == "standalone"  # unpaired
    assert [(t["group"], t["from"], t["to"]) for t in status["transitions"]] == [("front", "BACKUP", "MASTER"), ("front", None, "BACKUP")]

    paired_with(session, "alpha")
    status = client.get("/api/v1/ha/status").json()
    assert status["node"]["role"] == "active"
    assert status["active"] == {"name": "fulcrum", "local": True, "url": None, "split_brain": False}
    assert client.post("/api/v1/services", json={**WEB, "name": "mail", "address": "192.0.2.11"}).status_code == 201

    # BACKUP, and the peer ("alpha") wins the priority rule: this node is a standby now.
    notify(app, 'INSTANCE "VG_front" BACKUP 100')
    status = client.get("/api/v1/ha/status").json()
    assert status["node"]["role"] == "standby" and status["node"]["writer"] is False
    refused = client.post("/api/v1/services", json={**WEB, "name": "dns", "address": "192.0.2.12"})
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": "this node is standby; make changes on the active node alpha at http://127.0.0.1:9",
        "code": "standby_read_only",
        "active_url": "http://127.0.0.1:9",
    }
    assert client.get("/api/v1/services").status_code == 200
    anonymous = TestClient(app)  # who is active is not told before authentication
    assert anonymous.post("/api/v1/services", json=WEB).status_code == 401
    assert client.put("/api/v1/node", json={"name": "fulcrum", "priority": 120}).status_code == 200
    # The candidate holds "mail", a shared change: a standby may not commit it.
    commit = client.post("/api/v1/revisions", json={})
    assert commit.status_code == 409 and "only node-local settings can be committed here" in commit.json()["detail"]

    notify(app, 'INSTANCE "VG_front" FAULT 0')
    assert client.get("/api/v1/ha/status").json()["node"]["role"] == "fault"
    assert client.post("/api/v1/ha/drill").json()["detail"] == "a drill starts on the active node; this node is fault"
    notify(app, 'INSTANCE "VG_front" MASTER 100')
    assert client.post("/api/v1/ha/make-active").json()["detail"] == "this node is already active"


def test_maintenance_writes_keepalived_track_file(app: FastAPI, client: TestClient, ha: HaRuntime) -> None:
    path = ha.settings.maintenance_file
    assert path is not None and not path.exists()
    answer = client.post("/api/v1/ha/maintenance", json={"enabled": True})
    assert answer.status_code == 200 and answer.json() == {"maintenance": True, "file": str(path)}
    assert path.read_text() == "1\n"
    status = client.get("/api/v1/ha/status").json()
    assert status["node"]["maintenance"] is True and status["node"]["role"] == "maintenance"
    assert client.post("/api/v1/ha/maintenance", json={"enabled": False}).json()["maintenance"] is False
    assert path.read_text() == "0\n"
    kinds = [(e["kind"], e["detail"]["enabled"]) for e in client.get("/api/v1/events?kind=ha.maintenance").json()["data"]]
    assert kinds == [("ha.maintenance", False), ("ha.maintenance", True)]
    assert client.get("/api/v1/audit?action=ha.maintenance").json()["count"] == 2
    assert client.post("/api/v1/ha/maintenance", json={"enabled": "maybe"}).status_code == 422


def test_roles_and_the_pairing_code(client: TestClient, ha: HaRuntime) -> None:
    viewer = login_as(client, "vera", "viewer")
    operator = login_as(client, "otto", "operator")
    assert viewer.get("/api/v1/ha/status").status_code == 200
    assert viewer.post("/api/v1/ha/maintenance", json={"enabled": True}).status_code == 403
    assert operator.post("/api/v1/ha/pairing-code").status_code == 403
    assert operator.post("/api/v1/ha/pair", json={"peer_url": "http://127.0.0.1:9", "code": "ABCD-EFGH-JKLM"}).status_code == 403
    assert operator.post("/api/v1/ha/resolve", json={"winner": "local"}).status_code == 403

    created = client.post("/api/v1/ha/pairing-code")
    assert created.status_code == 201
    code = created.json()
    assert re.fullmatch(r"[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}", code["code"])
    assert code["expires_at"] is not None
    bad = client.post("/api/v1/ha/pair", json={"peer_url": "ftp://somewhere", "code": "x"})
    assert bad.status_code == 422 and {tuple(e["loc"]) for e in bad.json()["detail"]} == {("body", "peer_url"), ("body", "code")}


def test_events_and_transitions_of_the_pair_are_kept(app: FastAPI, client: TestClient, session: Session, ha: HaRuntime) -> None:
    client.post("/api/v1/vip-groups", json=FRONT)
    client.post("/api/v1/services", json=WEB)
    client.post("/api/v1/revisions", json={})
    client.post("/api/v1/ha/maintenance", json={"enabled": True})
    notify(app, 'INSTANCE "VG_front" FAULT 0')
    transition = client.get("/api/v1/ha/status").json()["transitions"][0]
    assert transition["to"] == "FAULT" and transition["reason"].startswith("maintenance on")
    assert timedelta(0) <= utcnow() - datetime.fromisoformat(transition["time"]) < timedelta(minutes=1)


def test_a_role_unknown_for_seconds_is_an_alarm(app: FastAPI, client: TestClient, session: Session, ha: HaRuntime) -> None:
    """A paired node with VIP groups whose state nothing tells (no IPVS here, so no data plane to
    read, and no notification from keepalived): unknown, then the ha.role_unknown alarm."""
    client.post("/api/v1/vip-groups", json=FRONT)
    client.post("/api/v1/services", json=WEB)
    assert client.post("/api/v1/revisions", json={}).status_code == 201
    paired_with(session, "alpha")

    def observe(now: float) -> dict:
        with ha.session_scope() as scope:
            keep_local_state(ha, local_view(scope, ha), now)
        return client.get("/api/v1/ha/status").json()

    node = observe(100.0)["node"]
    assert node["role"] == "unknown" and node["role_unknown_since"] is not None and node["role_unknown_alarm"] is False
    assert observe(100.0 + ROLE_UNKNOWN_ALARM_AFTER - 1)["node"]["role_unknown_alarm"] is False
    status = observe(100.0 + ROLE_UNKNOWN_ALARM_AFTER)
    assert status["node"]["role_unknown_alarm"] is True
    assert status["active"] == {"name": None, "local": False, "url": None, "split_brain": False}
    raised = client.get("/api/v1/events?kind=ha.role_unknown").json()["data"]
    assert len(raised) == 1 and raised[0]["severity"] == "critical" and "front UNKNOWN" in raised[0]["message"]
    observe(200.0)
    assert len(client.get("/api/v1/events?kind=ha.role_unknown").json()["data"]) == 1  # raised once

    notify(app, 'INSTANCE "VG_front" BACKUP 100')
    node = observe(201.0)["node"]
    assert (node["role"], node["role_unknown_since"], node["role_unknown_alarm"]) == ("standby", None, False)
    assert [e["message"] for e in client.get("/api/v1/events?kind=ha.role_known").json()["data"]] == [
        "the role of this node is known again: standby"
    ]
