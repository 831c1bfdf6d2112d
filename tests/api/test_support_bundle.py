"""The support bundle: everything a helper needs in one tar.gz, and not one secret of this node."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from apitest import WEB, login_as
from fulcrum.models import AuthToken, User
from fulcrum.models.ha import HaPairing
from fulcrum.models.revision import utcnow

SMTP_PASSWORD = "smtp-pass-Zq81xv"
WEBHOOK_SECRET = "hook-secret-Kd92mw"
PAIR_KEY = "ab" * 32
VRRP_PASSWORD = "vrrpPw77"


def bundle_members(client: TestClient) -> dict[str, str]:
    response = client.get("/api/v1/diagnostics/support-bundle")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/gzip"
    assert response.headers["content-disposition"].startswith('attachment; filename="fulcrum-support-')
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as archive:
        return {
            member.name.removeprefix("fulcrum-support/"): archive.extractfile(member).read().decode()  # type: ignore[union-attr]
            for member in archive.getmembers()
        }


def test_the_bundle_holds_what_support_needs_and_no_secret(
    client: TestClient, session: Session, tmp_path: Path
) -> None:
    assert client.post("/api/v1/services", json=WEB).status_code == 201
    assert client.post("/api/v1/revisions", json={"message": "first"}).status_code == 201
    smtp = {
        "name": "mail",
        "config": {"type": "smtp", "host": "127.0.0.1", "port": 25, "security": "none", "username": "lb",
                   "from_address": "lb@example.org", "to_addresses": ["ops@example.org"]},
        "secret": SMTP_PASSWORD,
    }  # fmt: skip
    hook = {
        "name": "hook",
        "config": {"type": "webhook", "url": "https://hooks.example.org/x"},
        "secret": WEBHOOK_SECRET,
    }
    for channel in (smtp, hook):
        assert client.post("/api/v1/alerts/channels", json=channel).status_code == 201, channel
    login_as(client, "olga", "operator")
    session.add(HaPairing(id=1, peer_name="lb2", peer_url="http://127.0.0.1:9", key=PAIR_KEY, initiator=True,
                          paired_at=utcnow()))  # fmt: skip
    session.flush()
    # Rendered files that carry secrets (as a keepalived.conf with VRRP authentication would).
    keepalived_conf = tmp_path / "keepalived.conf"
    keepalived_conf.write_text(
        f"vrrp_instance VI_1 {{\n  authentication {{\n    auth_pass {VRRP_PASSWORD}\n  }}\n}}\n"
        f"# {PAIR_KEY} {SMTP_PASSWORD} {WEBHOOK_SECRET}\n"
    )
    settings = client.app.state.settings
    client.app.state.settings = settings.model_copy(
        update={"keepalived_conf": keepalived_conf, "nftables_conf": tmp_path / "absent.nft"}
    )
    try:
        members = bundle_members(client)
    finally:
        client.app.state.settings = settings

    assert set(members) == {
        "versions.json", "ha-status.json", "revisions.json", "ipvs.txt", "logs.txt",
        "config/running-revision.json", "config/keepalived.conf", "config/absent.nft.missing",
    }  # fmt: skip
    versions = json.loads(members["versions.json"])
    assert versions["keepalived"].startswith("Keepalived v") and versions["nftables"].startswith("nftables v")
    assert versions["dataplane"]["keepalived_running"] is False
    assert json.loads(members["revisions.json"])[0]["message"] == "first"
    assert json.loads(members["revisions.json"])[0]["apply_result"]["outcome"] == "validated"
    assert json.loads(members["config/running-revision.json"])["services"][0]["name"] == "web"
    assert json.loads(members["ha-status.json"])["node"]["role"]
    assert members["ipvs.txt"].startswith("IPVS unavailable")  # no IPVS in this host's kernel
    assert "auth_pass [redacted]" in members["config/keepalived.conf"]

    hashes = [*session.scalars(select(User.password_hash)), *session.scalars(select(AuthToken.token_hash))]
    assert len(hashes) >= 4
    everything = "\n".join(members.values())
    for secret in (SMTP_PASSWORD, WEBHOOK_SECRET, PAIR_KEY, VRRP_PASSWORD, *hashes):
        assert secret not in everything, secret


def test_only_admins_get_the_bundle(client: TestClient) -> None:
    operator = login_as(client, "oscar", "operator")
    assert operator.get("/api/v1/diagnostics/support-bundle").status_code == 403
