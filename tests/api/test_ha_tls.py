"""The peer link over real TLS: two API processes serving HTTPS with generated certificates.
Each node's certificate is pinned through the pairing transcript; a node presenting another one
is refused (ha.peer_untrusted) until it announces a renewal in a signed request."""

from __future__ import annotations

from pathlib import Path

from fulcrum.ha.tls import served_fingerprint
from apitest import WEB
from certmaker import issue, key_pem, pem
from hanode import WAIT_DEADLINE, Node, in_sync, pair, two_nodes
from lab.wait import wait_until


def fingerprint(node: Node) -> str:
    assert node.tls is not None
    certificate = served_fingerprint(node.tls[0])
    assert certificate is not None
    return certificate


def test_each_node_pins_the_others_certificate_refuses_another_and_takes_a_signed_renewal(tmp_path: Path) -> None:
    with two_nodes(tmp_path, tls=True) as (alpha, beta, _, _):
        alpha_cert, beta_cert = fingerprint(alpha), fingerprint(beta)
        assert alpha.url.startswith("https://") and beta.url.startswith("https://")
        pair(alpha, beta)

        # Pinned on both sides from the pairing transcript: the peer's, and this node's as announced.
        assert alpha.sql("SELECT peer_certificate, announced_certificate FROM ha_pairing") == [(beta_cert, alpha_cert)]
        assert beta.sql("SELECT peer_certificate, announced_certificate FROM ha_pairing") == [(alpha_cert, beta_cert)]
        status = wait_until(
            lambda: (s := alpha.ha_status())["peer"]["reachable"] and s, WAIT_DEADLINE, what="alpha to see beta",
        )
        assert status["node"]["certificate"] == alpha_cert
        assert status["peer"]["certificate"] == beta_cert and status["peer"]["untrusted_certificate"] is None

        # beta's address now presents another certificate, never announced (beta's watcher is off,
        # so it cannot announce it): it holds the pair key, signs correctly, and is refused all the same.
        beta.stop()
        other = beta.new_certificate()
        beta.env["FULCRUM_HA_SYNC_INTERVAL"] = "0"
        beta.start()
        refused = wait_until(
            lambda: (s := alpha.ha_status())["peer"]["untrusted_certificate"] == other and s,
            WAIT_DEADLINE,
            what="alpha to refuse beta's new certificate",
        )
        assert refused["peer"]["reachable"] is False and refused["sync"]["state"] == "unreachable"
        assert f"presented a certificate with SHA-256 {other}, not the pinned {beta_cert}" in refused["sync"]["message"]
        # The watcher records the alarm just after it sets the status (the event is a database
        # write, made outside the runtime's lock): a read between the two sees no alarm yet.
        alarms = wait_until(
            lambda: (found := alpha.get("/events?kind=ha.peer_untrusted"))["count"] and found,
            WAIT_DEADLINE,
            what="alpha's ha.peer_untrusted alarm",
        )
        assert alarms["count"] == 1 and alarms["data"][0]["severity"] == "critical", alarms
        assert other in alarms["data"][0]["message"]
        assert alpha.sql("SELECT peer_certificate FROM ha_pairing") == [(beta_cert,)]  # the pin did not move

        # With its watcher, beta announces the renewed certificate in a signed request; alpha re-pins.
        beta.stop()
        beta.env["FULCRUM_HA_SYNC_INTERVAL"] = "0.3"
        beta.start()
        trusted = wait_until(
            lambda: (s := alpha.ha_status())["peer"]["reachable"] and s["peer"]["untrusted_certificate"] is None and s,
            WAIT_DEADLINE,
            what="alpha to trust beta's renewed certificate",
        )
        assert trusted["peer"]["certificate"] == other
        assert alpha.sql("SELECT peer_certificate FROM ha_pairing") == [(other,)]
        assert beta.sql("SELECT announced_certificate FROM ha_pairing") == [(other,)]
        assert alpha.get("/events?kind=ha.peer_certificate")["count"] == 1
        # Replication works over the re-pinned link.
        alpha.post("/services", WEB, expect=201)
        alpha.commit("after the renewal")
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take alpha's revision")


def test_pairing_is_refused_when_the_certificate_seen_is_not_the_one_the_peer_serves(tmp_path: Path) -> None:
    with two_nodes(tmp_path, tls=True) as (alpha, beta, _, _):
        # beta serves one certificate but believes it serves another: what a TLS-terminating box
        # between the nodes looks like from beta.
        beta.stop()
        served = beta.tls
        believed = beta.new_certificate()
        beta.tls = served
        beta.start()
        code = beta.post("/ha/pairing-code", expect=201)["code"]
        body = {"peer_url": beta.url, "code": code, "local_url": alpha.url}
        response = alpha.post("/ha/pair", body, expect=409)
        assert f"sees certificate SHA-256 {fingerprint(beta)} here, but this node serves {believed}" in response["detail"]
        assert alpha.sql("SELECT count(*) FROM ha_pairing") == [(0,)] == beta.sql("SELECT count(*) FROM ha_pairing")

        # The refusal did not use the code up: with the setting right, the same code pairs.
        beta.stop()
        beta.env["FULCRUM_TLS_CERTFILE"] = str(served[0]) if served else ""
        beta.start()
        alpha.post("/ha/pair", body, expect=200)
        assert alpha.sql("SELECT peer_certificate FROM ha_pairing") == [(fingerprint(beta),)]


def trust_served_certificate(node: Node) -> None:
    """The test's own client trusts exactly the certificate the node serves: the uploaded one now."""
    node.reconnect()


def test_an_uploaded_certificate_is_pinned_by_the_peer_before_it_is_served(tmp_path: Path) -> None:
    with two_nodes(tmp_path, tls=True) as (alpha, beta, _, _):
        pair(alpha, beta)
        beta.login("admin")  # pairing gave beta alpha's accounts
        wait_until(lambda: beta.ha_status()["peer"]["reachable"], WAIT_DEADLINE, what="beta to see alpha")
        old = fingerprint(alpha)

        # The peer cannot be told: refused, and the old certificate stays served and pinned.
        beta.stop()
        refused_upload = issue("alpha", names=["127.0.0.1"])
        body = {
            "certificate_chain": pem(refused_upload.certificate),
            "private_key": key_pem(refused_upload.key),
        }
        response = alpha.http.put("/api/v1/tls/certificate", json=body)
        assert response.status_code == 409
        assert "could not be told to pin the new certificate" in response.json()["detail"]
        assert fingerprint(alpha) == old
        assert alpha.sql("SELECT announced_certificate FROM ha_pairing") == [(old,)]
        beta.start()

        new = issue("alpha", names=["127.0.0.1"])
        body = {"certificate_chain": pem(new.certificate), "private_key": key_pem(new.key)}
        response = alpha.http.put("/api/v1/tls/certificate", json=body)
        assert response.status_code == 200, response.text
        pinned = response.json()["fingerprint_sha256"]
        assert pinned != old and fingerprint(alpha) == pinned
        # Pinned on beta by the time the upload answered, before alpha served it.
        assert beta.sql("SELECT peer_certificate FROM ha_pairing") == [(pinned,)]
        assert alpha.sql("SELECT announced_certificate FROM ha_pairing") == [(pinned,)]
        trust_served_certificate(alpha)
        assert alpha.get("/tls/certificate")["fingerprint_sha256"] == pinned

        seen = wait_until(
            lambda: (s := beta.ha_status())["peer"]["certificate"] == pinned and s,
            WAIT_DEADLINE,
            what="beta to reach alpha's new certificate",
        )
        assert seen["peer"]["reachable"] and seen["peer"]["untrusted_certificate"] is None
        assert beta.get("/events?kind=ha.peer_untrusted")["count"] == 0
        alpha.post("/services", WEB, expect=201)
        alpha.commit("after the upload")
        wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta to take alpha's revision")
