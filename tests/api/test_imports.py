"""POST /imports: preview and apply keepalived.conf / ipvsadm rules into the candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from apitest import WEB, login_as
from fulcrum.cli import main

FIXTURES = Path(__file__).parents[1] / "unit" / "importer" / "fixtures"
RR = (FIXTURES / "seed" / "rr.sh").read_text()
SAMPLE = (FIXTURES / "keepalived" / "keepalived.conf.sample").read_text()


def test_preview_reports_and_changes_nothing(client: TestClient) -> None:
    pending = client.get("/api/v1/changes").json()
    response = client.post("/api/v1/imports", json={"text": RR})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["format"], body["mode"], body["applied"]) == ("ipvsadm", "preview", False)
    assert [(o["kind"], o["name"], o["action"]) for o in body["objects"]] == [("service", "202.103.106.5-80", "add")]
    assert [(i["kind"], i["action"], i["target"]) for i in body["changes"]["items"]][0][:2] == ("service", "add")
    assert body["report"][1] == {
        "file": "rules", "line": 3, "text": "-A -t 202.103.106.5:80 -s rr", "outcome": "changed",
        "detail": "service 202.103.106.5-80 (named after its address: IPVS services have no name); no health check (ipvsadm has none)",
    }
    assert client.get("/api/v1/services").json()["count"] == 0
    assert client.get("/api/v1/changes").json() == pending


def test_apply_writes_the_candidate_only_and_the_plan_shows_it(client: TestClient) -> None:
    response = client.post("/api/v1/imports", json={"text": SAMPLE, "mode": "apply"})
    assert response.status_code == 200, response.text
    assert response.json()["applied"] is True
    [service] = client.get("/api/v1/services").json()["data"]
    assert (service["name"], service["health_check"]["type"]) == ("10.10.10.2-1358", "http")
    assert [g["name"] for g in client.get("/api/v1/vip-groups").json()["data"]] == ["VI_1"]
    changes = client.get("/api/v1/changes").json()
    assert changes["has_changes"] is True
    assert {(i["kind"], i["action"]) for i in changes["plan"]["items"]} >= {("service", "add")}
    assert client.get("/api/v1/revisions").json()["count"] == 0  # nothing committed, nothing applied
    [entry] = client.get("/api/v1/audit", params={"action": "import."}).json()["data"]
    assert entry["action"] == "import.apply"


def test_conflicts_are_skipped_or_replaced_per_service(client: TestClient) -> None:
    existing = {**WEB, "name": "web", "address": "202.103.106.5"}
    assert client.post("/api/v1/services", json=existing).status_code == 201
    skipped = client.post("/api/v1/imports", json={"text": RR, "mode": "apply"}).json()
    assert [(o["action"], o["conflicts_with"]) for o in skipped["objects"]] == [("skip", ["web"])]
    assert [s["name"] for s in client.get("/api/v1/services").json()["data"]] == ["web"]
    replaced = client.post(
        "/api/v1/imports", json={"text": RR, "mode": "apply", "conflicts": {"202.103.106.5-80": "replace"}}
    ).json()
    assert [(o["action"], o["conflicts_with"]) for o in replaced["objects"]] == [("replace", ["web"])]
    [service] = client.get("/api/v1/services").json()["data"]
    assert (service["name"], service["scheduler"]) == ("202.103.106.5-80", "rr")


def test_an_operator_imports_services_but_not_vrrp(client: TestClient) -> None:
    operator = login_as(client, "op", "operator")
    body = operator.post("/api/v1/imports", json={"text": SAMPLE, "mode": "apply"}).json()
    actions = {(o["kind"], o["action"]) for o in body["objects"]}
    assert actions == {("service", "add"), ("vip_group", "needs_admin"), ("node", "needs_admin")}
    assert client.get("/api/v1/vip-groups").json()["data"] == []
    viewer = login_as(client, "viewer", "viewer")
    assert viewer.post("/api/v1/imports", json={"text": RR}).status_code == 403


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({"text": "x" * 1_000_001}, "text", "at most 1000000 characters"),
        ({"text": "-A -t 192.0.2.1:80\x00"}, "text", "control character 0x00"),
        ({"text": "include a\n", "includes": {"a": "include b\n", "b": "include a\n"}}, "includes", "include loop"),
        ({"text": RR, "format": "nginx"}, "format", "Input should be"),
        ({"text": RR, "conflicts": {"a b": "replace"}}, "conflicts", "String should match"),
        ({"text": RR, "surprise": 1}, "surprise", "Extra inputs"),
    ],
)
def test_bad_input_is_a_precise_422_and_changes_nothing(client: TestClient, body: dict, field: str, fragment: str) -> None:  # type: ignore[type-arg]
    response = client.post("/api/v1/imports", json={**body, "mode": "apply"})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"][:1]
    assert error["loc"][1] == field and fragment in error["msg"], error
    assert client.get("/api/v1/services").json()["count"] == 0


def test_fulcrumctl_import_previews_then_applies(client: TestClient, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = tmp_path / "rr.sh"
    rules.write_text(RR)
    assert main(["import", str(rules)], client=client) == 0
    out = capsys.readouterr().out
    assert "rules:3: changed: service 202.103.106.5-80" in out
    assert "preview only: nothing changed" in out
    assert client.get("/api/v1/services").json()["count"] == 0
    assert main(["import", str(rules), "--apply"], client=client) == 0
    assert "imported into the candidate" in capsys.readouterr().out
    assert client.get("/api/v1/services").json()["count"] == 1
