"""The certificate this node's dashboard and API serve over HTTPS (node-local, never replicated)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, HaRuntimeDep, SettingsDep
from fulcrum.openapi import error
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.tls import CertificateUpload, CsrRead, CsrRequest, ServedCertificate
from fulcrum.tls import certificate as tls_certificate
from fulcrum.tls import csr as tls_csr

PLAIN_HTTP: dict[int | str, dict[str, Any]] = {
    409: error(
        "This API serves plain HTTP: it has no certificate "
        "(or, on PUT, the HA peer could not pin the new one first)"
    )
}

router = APIRouter(prefix="/tls", tags=["tls"])


@router.get(
    "/certificate",
    summary="The certificate this node serves: subject, issuer, names, validity (null: plain HTTP)",
)
def get_certificate(settings: SettingsDep, _: Admin) -> ServedCertificate | None:
    return tls_certificate.get_served(settings)


@router.put(
    "/certificate",
    summary="Replace the served certificate with an uploaded chain and key; served from the next connection",
    responses={**PLAIN_HTTP, 404: error("No private_key sent and no certificate signing request pending")},
)
@any_node  # each node serves its own certificate: a standby's admin replaces it there
def put_certificate(
    body: CertificateUpload,
    ha: HaRuntimeDep,
    settings: SettingsDep,
    session: SessionDep,
    _: Admin,
    actor: ActorDep,
) -> ServedCertificate:
    return tls_certificate.replace_served(session, actor, settings, ha, body)


@router.post(
    "/csr",
    status_code=201,
    responses=PLAIN_HTTP,
    summary="Make a key on this node and a certificate signing request for it (the key stays on the node)",
)
@any_node
def create_csr(
    body: CsrRequest, settings: SettingsDep, session: SessionDep, _: Admin, actor: ActorDep
) -> CsrRead:
    return tls_csr.create(session, actor, settings, body)


@router.get("/csr", summary="The pending certificate signing request (null: none is pending)")
def get_csr(settings: SettingsDep, _: Admin) -> CsrRead | None:
    return tls_csr.current(settings)
