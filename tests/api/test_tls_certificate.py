"""Your own TLS certificate (/tls/certificate): an uploaded chain and key are checked with real
certificates made here, stored with the key kept private, and served by a real uvicorn
(fulcrum.serve) from the next TLS connection on, with no restart."""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from certmaker import Issued, chain, issue, key_pem, new_key, pem
from apitest import PASSWORD, login_as
from fulcrum import serve
from fulcrum.main import create_app
from fulcrum.tls.validation import read_served
from fulcrum.tls.expiry import raise_if_due
from fulcrum.settings import Settings

URL = "/api/v1/tls/certificate"


def install_self_signed(directory: Path) -> tuple[Path, Path]:
    server = issue("first boot", names=["fulcrum", "127.0.0.1"])
    certfile, keyfile = directory / "fulcrum.crt", directory / "fulcrum.key"
    certfile.write_text(pem(server.certificate))
    keyfile.write_text(key_pem(server.key))
    keyfile.chmod(0o600)
    return certfile, keyfile


@pytest.fixture
def tls_client(app, tmp_path: Path) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    certfile, keyfile = install_self_signed(tmp_path)
    app.state.settings = app.state.settings.model_copy(
        update={"tls_certfile": certfile, "tls_keyfile": keyfile}
    )
    with TestClient(app, base_url="http://testserver") as client:
        response = client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD})
        client.headers["Authorization"] = f"Bearer {response.json()['token']}"
        yield client


def upload(client: TestClient, certificates: str, key: str | None, expect: int) -> dict[str, Any]:
    response = client.put(URL, json={"certificate_chain": certificates, "private_key": key})
    assert response.status_code == expect, response.text
    return response.json()  # type: ignore[no-any-return]


def refusal(client: TestClient, certificates: str, key: str | None) -> tuple[list[str | int], str]:
    detail = upload(client, certificates, key, 422)["detail"]
    assert len(detail) == 1, detail
    return detail[0]["loc"], detail[0]["msg"]


def test_a_good_chain_is_stored_with_a_private_key_and_shown_without_it(
    tls_client: TestClient, app: FastAPI
) -> None:
    root, intermediate, server = chain()
    shown = upload(tls_client, pem(server.certificate, intermediate.certificate), key_pem(server.key), 200)
    assert shown["subject"] == "CN=lb.example.net" and shown["issuer"] == "CN=Test Intermediate"
    assert (
        shown["names"] == ["lb.example.net", "127.0.0.1"]
        and shown["chain_length"] == 2
        and not shown["self_signed"]
    )
    assert tls_client.get(URL).json() == shown
    assert "private" not in tls_client.get(URL).text.lower()
    settings = app.state.settings
    assert settings.tls_keyfile.stat().st_mode & 0o777 == 0o600
    assert settings.tls_certfile.read_text() == pem(server.certificate, intermediate.certificate)
    assert app.state.ha.served_certificate == shown["fingerprint_sha256"]
    audit = tls_client.get("/api/v1/audit?action=tls.certificate").json()["data"]
    assert audit[0]["detail"]["fingerprint"] == shown["fingerprint_sha256"], audit


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        (
            "wrong order",
            "certificate_chain",
            "the private key does not belong to the first certificate of the chain "
            "(it belongs to certificate 2",
        ),
        (
            "mismatched key",
            "private_key",
            "the private key does not belong to the first certificate of the chain",
        ),
        (
            "missing link",
            "certificate_chain",
            "certificate 1 (CN=lb.example.net) is not issued by certificate 2 (CN=Test Root)",
        ),
        ("expired", "certificate_chain", "certificate 1 (CN=lb.example.net) expired on"),
        ("not yet valid", "certificate_chain", "certificate 1 (CN=lb.example.net) is not valid before"),
        ("no names", "certificate_chain", "names no host in subject alternative names"),
        ("a CA", "certificate_chain", "the first certificate is a CA certificate"),
        ("garbage chain", "certificate_chain", "no PEM certificate found"),
        ("broken PEM", "certificate_chain", "a certificate in the chain is not valid PEM"),
        ("garbage key", "private_key", "no PEM private key found"),
        ("weak RSA", "private_key", "an RSA key of 1024 bits is too weak"),
    ],
)
def test_a_bad_upload_is_a_422_naming_the_field(
    tls_client: TestClient, app, case: str, field: str, message: str
) -> None:  # type: ignore[no-untyped-def]
    root, intermediate, server = chain()
    now = datetime.now(UTC)
    certificates, key = pem(server.certificate, intermediate.certificate), key_pem(server.key)
    if case == "wrong order":
        certificates, key = pem(intermediate.certificate, server.certificate), key_pem(server.key)
    elif case == "mismatched key":
        key = key_pem(new_key())
    elif case == "missing link":
        certificates = pem(server.certificate, root.certificate)
    elif case == "expired":
        old = issue(
            "lb.example.net",
            intermediate,
            names=["lb"],
            not_before=now - timedelta(days=400),
            not_after=now - timedelta(days=1),
        )
        certificates, key = pem(old.certificate, intermediate.certificate), key_pem(old.key)
    elif case == "not yet valid":
        early = issue("lb.example.net", intermediate, names=["lb"], not_before=now + timedelta(days=1))
        certificates, key = pem(early.certificate, intermediate.certificate), key_pem(early.key)
    elif case == "no names":
        nameless = issue("lb.example.net", intermediate)
        certificates, key = pem(nameless.certificate, intermediate.certificate), key_pem(nameless.key)
    elif case == "a CA":
        certificates, key = pem(intermediate.certificate, root.certificate), key_pem(intermediate.key)
    elif case == "garbage chain":
        certificates = "hello"
    elif case == "broken PEM":
        certificates = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    elif case == "garbage key":
        key = "not a key"
    elif case == "weak RSA":
        weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        server = issue("lb.example.net", intermediate, names=["lb"], key=weak)
        certificates, key = pem(server.certificate, intermediate.certificate), key_pem(weak)
    before = app.state.settings.tls_certfile.read_bytes()
    loc, msg = refusal(tls_client, certificates, key)
    assert loc == ["body", field] and message in msg, msg
    assert app.state.settings.tls_certfile.read_bytes() == before  # nothing written


def test_a_huge_upload_is_refused_before_it_is_read(tls_client: TestClient) -> None:
    response = tls_client.put(URL, json={"certificate_chain": "A" * (2 << 20), "private_key": "x"})
    assert response.status_code == 413, response.text


def test_only_an_admin_sees_or_replaces_the_certificate(tls_client: TestClient) -> None:
    operator = login_as(tls_client, "olivia", "operator")
    assert operator.get(URL).status_code == 403
    root, intermediate, server = chain()
    response = operator.put(
        URL, json={"certificate_chain": pem(server.certificate), "private_key": key_pem(server.key)}
    )
    assert response.status_code == 403


def test_plain_http_has_no_certificate_to_replace(client: TestClient) -> None:
    response = client.get(URL)
    assert response.status_code == 200 and response.json() is None


def presented_certificate(port: int) -> str:
    """SHA-256 of the certificate a new TLS connection to the port is served."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw) as connection:
        der = connection.getpeercert(binary_form=True)
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def test_an_uploaded_certificate_is_served_from_the_next_connection_without_a_restart(tmp_path: Path) -> None:
    certfile, keyfile = install_self_signed(tmp_path)
    settings = Settings(
        data_dir=tmp_path / "data",
        apply_mode="local",
        cookie_secure=False,
        reapply_on_start=False,
        stats_interval=0,
        ha_sync_interval=0,
        tls_certfile=certfile,
        tls_keyfile=keyfile,
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        serve.config(create_app(settings), "127.0.0.1", port, certfile, keyfile, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        first = presented_certificate(port)
        # Not verified: the first certificate is self-signed (presented_certificate checks what is served).
        with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=False, timeout=30) as client:
            token = client.post("/api/v1/setup", json={"username": "admin", "password": PASSWORD}).json()[
                "token"
            ]
            client.headers["Authorization"] = f"Bearer {token}"
            assert client.get(URL).json()["fingerprint_sha256"] == first
            root, intermediate, new = chain()
            body = {
                "certificate_chain": pem(new.certificate, intermediate.certificate),
                "private_key": key_pem(new.key),
            }
            uploaded = client.put(URL, json=body)
            assert uploaded.status_code == 200, uploaded.text
        assert uploaded.json()["fingerprint_sha256"] != first
        assert presented_certificate(port) == uploaded.json()["fingerprint_sha256"]
        # A client that trusts only the root now verifies the served chain and its name.
        trusting = ssl.create_default_context(cadata=pem(root.certificate))
        with httpx.Client(verify=trusting, timeout=30) as verified:
            assert verified.get(f"https://127.0.0.1:{port}/api/v1/health").status_code == 200
        # A pair of files that does not load (a key of another certificate) keeps the last good one served.
        keyfile.write_text(key_pem(new_key()))
        assert presented_certificate(port) == uploaded.json()["fingerprint_sha256"]
    finally:
        server.should_exit = True
        thread.join(15)


def expiry_events(client: TestClient) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get("/api/v1/events?kind=tls.certificate_expiry").json()["data"]
    return events


def test_uploading_a_certificate_that_expires_within_30_days_raises_the_alarm(tls_client: TestClient) -> None:
    root, intermediate, _ = chain()
    now = datetime.now(UTC)
    short = issue(
        "lb.example.net", intermediate, names=["lb.example.net"], not_after=now + timedelta(days=20)
    )
    shown = upload(tls_client, pem(short.certificate, intermediate.certificate), key_pem(short.key), 200)
    [alarm] = expiry_events(tls_client)
    assert alarm["severity"] == "warning" and "expires in 19 days" in alarm["message"], alarm
    assert alarm["detail"]["fingerprint"] == shown["fingerprint_sha256"]
    renewed = issue("lb.example.net", intermediate, names=["lb.example.net"])
    upload(tls_client, pem(renewed.certificate, intermediate.certificate), key_pem(renewed.key), 200)
    assert len(expiry_events(tls_client)) == 1  # a certificate valid for 90 days raises nothing


def test_the_periodic_check_raises_each_stage_once_per_certificate(
    tls_client: TestClient, app, session
) -> None:  # type: ignore[no-untyped-def]
    info = read_served(app.state.settings.tls_certfile)
    telemetry = app.state.telemetry
    for days_before_expiry in (31, 29, 29, 1, -1, -2):
        raise_if_due(session, telemetry, info, info.not_after - timedelta(days=days_before_expiry))
    alarms = expiry_events(tls_client)
    assert [(a["severity"], a["detail"]["stage"]) for a in alarms] == [
        ("critical", "expired"),
        ("warning", "expiring"),
    ], alarms
    assert all(a["detail"]["fingerprint"] == info.fingerprint for a in alarms)


def sign_request(csr_pem: str, issuer: Issued) -> x509.Certificate:
    """What the certificate authority does with the request."""
    request = x509.load_pem_x509_csr(csr_pem.encode())
    assert request.is_signature_valid
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(issuer.certificate.subject)
        .public_key(request.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(days=90))
        .add_extension(
            request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value, critical=False
        )
        .sign(issuer.key, hashes.SHA256())
    )


def test_a_csr_made_on_the_box_then_its_signed_certificate_is_installed_with_the_key_that_never_left(
    tls_client: TestClient, app
) -> None:  # type: ignore[no-untyped-def]
    assert tls_client.get("/api/v1/tls/csr").json() is None
    request = {
        "common_name": "lb.example.net",
        "names": ["LB.example.net", "*.lb.example.net", "192.0.2.10"],
        "key_type": "rsa-2048",
    }
    made = tls_client.post("/api/v1/tls/csr", json=request)
    assert made.status_code == 201, made.text
    csr = made.json()
    assert csr["subject"] == "CN=lb.example.net" and csr["names"] == [
        "lb.example.net",
        "*.lb.example.net",
        "192.0.2.10",
    ]
    assert "PRIVATE" not in made.text and tls_client.get("/api/v1/tls/csr").json() == csr
    pending_key = app.state.settings.tls_keyfile.with_name("pending.key")
    assert pending_key.stat().st_mode & 0o777 == 0o600

    root, intermediate, other = chain()
    # A certificate signed for another key, uploaded without one: refused, naming the key.
    loc, msg = refusal(tls_client, pem(other.certificate, intermediate.certificate), None)
    assert loc == ["body", "private_key"] and "does not belong to the first certificate" in msg
    signed = sign_request(csr["csr"], intermediate)
    key_made_on_the_box = pending_key.read_text()
    shown = upload(tls_client, pem(signed, intermediate.certificate), None, 200)
    assert shown["subject"] == "CN=lb.example.net" and shown["chain_length"] == 2
    assert app.state.settings.tls_keyfile.read_text() == key_made_on_the_box and not pending_key.exists()
    assert tls_client.get("/api/v1/tls/csr").json() is None  # used: the pending key is now the served one
    assert upload(tls_client, pem(signed, intermediate.certificate), None, 404)  # no key and none pending


@pytest.mark.parametrize(
    ("request_body", "loc"),
    [
        ({"common_name": "lb", "names": ["bad name"]}, ["body", "names", 0]),
        ({"common_name": "lb", "names": ["-lead.example"]}, ["body", "names", 0]),
        ({"common_name": "lb", "names": []}, ["body", "names"]),
        ({"common_name": "lb\n/CN=evil", "names": ["lb"]}, ["body", "common_name"]),
        ({"common_name": "lb", "names": ["lb"], "country": "Germany"}, ["body", "country"]),
        ({"common_name": "lb", "names": ["lb"], "key_type": "dsa-1024"}, ["body", "key_type"]),
    ],
)
def test_a_bad_csr_request_is_a_422_naming_the_field(
    tls_client: TestClient, request_body: dict, loc: list
) -> None:  # type: ignore[type-arg]
    response = tls_client.post("/api/v1/tls/csr", json=request_body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc


def test_the_schema_declares_what_the_tls_operations_answer(client: TestClient) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {"401", "403", "404", "409", "413", "422"} <= paths["/api/v1/tls/certificate"]["put"][
        "responses"
    ].keys()
    assert {"401", "403", "409", "413", "422"} <= paths["/api/v1/tls/csr"]["post"]["responses"].keys()
    assert (
        client.post("/api/v1/tls/csr", json={"common_name": "lb", "names": ["lb"]}).status_code == 409
    )  # plain HTTP
