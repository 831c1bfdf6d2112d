"""The certificate this node's dashboard and API serve over HTTPS (node-local, never replicated)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, SettingsDep
from fulcrum.schemas.tls import CertificateUpload, ServedCertificate
from fulcrum.services import tls_certificate

router = APIRouter(prefix="/tls", tags=["tls"])


@router.get("/certificate", summary="The certificate this node serves: subject, issuer, names, validity, SHA-256")
def get_certificate(settings: SettingsDep, _: Admin) -> ServedCertificate:
    return tls_certificate.get_served(settings)


@router.put(
    "/certificate",
    summary="Replace the served certificate with an uploaded chain and key; served from the next connection",
    responses={409: {"description": "Plain HTTP, or the HA peer could not be made to pin the certificate first"}},
)
def put_certificate(body: CertificateUpload, request: Request, settings: SettingsDep, session: SessionDep, _: Admin, actor: ActorDep) -> ServedCertificate:
    return tls_certificate.replace_served(session, actor, settings, request.app.state.ha, body)
