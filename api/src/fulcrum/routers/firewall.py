"""The management access policy: shared configuration, edited on the writer of a pair only."""

from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, Viewer
from fulcrum.openapi import STANDBY_REFUSAL
from fulcrum.schemas.ha import FirewallSettings
from fulcrum.services import ha_config

router = APIRouter(prefix="/firewall", tags=["firewall"], responses=STANDBY_REFUSAL)


@router.get("", summary="Management access policy")
def get_firewall(session: SessionDep, _: Viewer) -> FirewallSettings:
    return ha_config.get_firewall(session)


@router.put("", summary="Replace the management access policy (commit it with a confirmation deadline)")
def put_firewall(body: FirewallSettings, session: SessionDep, _: Admin, actor: ActorDep) -> FirewallSettings:
    return ha_config.set_firewall(session, actor, body)
