from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import WEB
from fulcrum.models._types import utcnow
from fulcrum.services import revisions


def commit(client: TestClient, **body) -> dict:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/revisions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_commit_validates_with_the_real_tools_and_says_the_data_plane_is_missing(client: TestClient) -> None:
    client.post("/api/v1/services", json=WEB)
    revision = commit(client, message="first service")
    assert revision["number"] == 1
    # This host's kernel has no IPVS: the revision is valid but nothing pretends it was applied.
    assert revision["state"] == "validated"
    result = revision["apply_result"]
    steps = [(s["step"], s["daemon"]) for s in result["steps"]]
    assert steps[3:5] == [("validate", "nftables"), ("validate", "keepalived")]
    assert "data plane unavailable" in result["message"]
    status = client.get("/api/v1/status").json()
    assert status["dataplane"]["ipvs_available"] is False
    assert status["desired_revision"] == 1 and status["pending_changes"] is False


def test_a_fresh_node_has_nothing_pending_until_it_is_edited(client: TestClient) -> None:
    """Before the first commit nothing is loaded, which is what the factory settings amount to: the
    dashboard must not ask a new admin to apply changes nobody made."""
    status = client.get("/api/v1/status").json()
    assert (status["desired_revision"], status["pending_changes"]) == (None, False)
    changes = client.get("/api/v1/changes").json()
    assert changes["has_changes"] is False and changes["plan"]["items"] == []
    client.post("/api/v1/services", json=WEB)
    assert client.get("/api/v1/status").json()["pending_changes"] is True
    assert client.get("/api/v1/changes").json()["has_changes"] is True


def test_nothing_to_commit_is_a_conflict(client: TestClient) -> None:
    client.post("/api/v1/services", json=WEB)
    commit(client)
    again = client.post("/api/v1/revisions", json={})
    assert again.status_code == 409
    assert "nothing to commit" in again.json()["detail"]


def test_pending_changes_show_a_plan_in_operators_terms(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    commit(client)
    backend = service["backends"][0]
    client.patch(f"/api/v1/services/{service['id']}/backends/{backend['id']}", json={"weight": 0})
    client.delete(f"/api/v1/services/{service['id']}/backends/{service['backends'][1]['id']}")
    changes = client.get("/api/v1/changes").json()
    assert changes["has_changes"] is True
    items = {(i["kind"], i["action"], i["target"]): i for i in changes["plan"]["items"]}
    drain = items[("backend", "change", "web → 198.51.100.1:80")]
    assert "drains" in drain["detail"] and drain["disruptive"] is False
    removal = items[("backend", "remove", "web → 198.51.100.2:80")]
    assert removal["disruptive"] is True and "cut" in removal["detail"]
    assert changes["plan"]["disruptive"] is True
    assert '-          "weight": 2' in changes["text"]


def test_diff_and_rollback_to_an_earlier_revision(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    commit(client, message="v1")
    client.patch(f"/api/v1/services/{service['id']}", json={"scheduler": "mh"})
    commit(client, message="v2")
    diff = client.get("/api/v1/revisions/diff", params={"from": 1, "to": 2}).json()
    assert '-      "scheduler": "wrr"' in diff["text"] and '+      "scheduler": "mh"' in diff["text"]
    assert "scheduler wrr → mh" in diff["plan"]["items"][0]["detail"]

    back = client.post("/api/v1/revisions/1/rollback", json={})
    assert back.status_code == 201, back.text
    assert back.json()["number"] == 3 and back.json()["rollback_of"] == 1
    assert client.get(f"/api/v1/services/{service['id']}").json()["scheduler"] == "wrr"  # same id kept
    assert client.get("/api/v1/revisions/3").json()["digest"] == client.get("/api/v1/revisions/1").json()["digest"]
    audit = client.get("/api/v1/audit", params={"revision": 3}).json()["data"]
    assert audit[0]["action"] == "revision.rollback"


def test_rollback_refuses_to_discard_uncommitted_edits(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    commit(client)
    client.patch(f"/api/v1/services/{service['id']}", json={"scheduler": "rr"})
    commit(client)
    client.patch(f"/api/v1/services/{service['id']}", json={"scheduler": "lc"})
    refused = client.post("/api/v1/revisions/1/rollback", json={})
    assert refused.status_code == 409 and "discard_changes" in refused.json()["detail"]
    assert client.post("/api/v1/revisions/1/rollback", json={"discard_changes": True}).status_code == 201


def test_commit_confirmed_is_kept_when_confirmed(client: TestClient) -> None:
    client.post("/api/v1/services", json=WEB)
    revision = commit(client, confirm_within=60)
    assert revision["state"] == "awaiting_confirm" and revision["confirm_deadline"]
    blocked = client.post("/api/v1/revisions", json={})
    assert blocked.status_code == 409
    confirmed = client.post(f"/api/v1/revisions/{revision['number']}/confirm")
    assert confirmed.status_code == 200 and confirmed.json()["state"] == "validated"


def test_commit_confirmed_rolls_back_when_the_deadline_passes(client: TestClient, session: Session, applier) -> None:  # type: ignore[no-untyped-def]
    first = client.post("/api/v1/services", json=WEB).json()
    commit(client)
    client.put("/api/v1/firewall", json={"management_allow": ["203.0.113.0/24"]})
    client.delete(f"/api/v1/services/{first['id']}")
    risky = commit(client, message="lock myself out", confirm_within=30)
    reverted = revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=31))
    assert reverted is not None and reverted.rollback_of == 1
    assert "not confirmed" in reverted.message
    assert client.get(f"/api/v1/revisions/{risky['number']}").json()["state"] == "reverted"
    assert client.get("/api/v1/firewall").json()["management_allow"] == []
    assert client.get("/api/v1/services").json()["data"][0]["name"] == "web"


def test_an_unexpired_confirmation_is_left_alone(client: TestClient, session: Session, applier) -> None:  # type: ignore[no-untyped-def]
    client.post("/api/v1/services", json=WEB)
    commit(client, confirm_within=30)
    assert revisions.revert_unconfirmed(session, applier, client.app.state.telemetry, now=utcnow() + timedelta(seconds=5)) is None


def test_revision_list_is_newest_first_with_a_count(client: TestClient) -> None:
    service = client.post("/api/v1/services", json=WEB).json()
    for scheduler in ("rr", "lc", "sed"):
        client.patch(f"/api/v1/services/{service['id']}", json={"scheduler": scheduler})
        commit(client)
    listed = client.get("/api/v1/revisions", params={"limit": 2}).json()
    assert listed["count"] == 3 and [r["number"] for r in listed["data"]] == [3, 2]


def test_draining_every_backend_is_a_valid_commit(client: TestClient) -> None:
    """keepalived -t fails on its own warning for an all-drained service; Fulcrum knows that warning
    is exactly a drain and lets it through, reporting it."""
    service = client.post("/api/v1/services", json=WEB).json()
    commit(client)
    for backend in service["backends"]:
        client.patch(f"/api/v1/services/{service['id']}/backends/{backend['id']}", json={"weight": 0})
    assert "every backend is drained" in " ".join(client.get("/api/v1/changes").json()["plan"]["warnings"])
    revision = commit(client, message="drain all")
    assert revision["state"] == "validated"
