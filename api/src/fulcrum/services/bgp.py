"""Business rules for this node's BGP (node-local: never replicated to the peer).

TCP-MD5 passwords are write-only: a read says only whether a neighbor has one, and a write that
leaves a neighbor's password out keeps the one stored for that neighbor's address.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier, ApplierError
from fulcrum.apply.result import BgpView
from fulcrum.config.bgp import BgpConfig
from fulcrum.errors import ConfigInvalid, NotFound, Unavailable
from fulcrum.schemas.bgp import BgpRead, BgpWrite
from fulcrum.services import audit
from fulcrum.services.candidate import bgp_settings, candidate_snapshot, store_bgp
from fulcrum.services.validation import validated

NOT_CONFIGURED = "this node has no BGP configured; PUT /bgp to announce the VIPs to a router"


def live_view(applier: Applier) -> BgpView:
    """This node's BGP as FRR runs it now, from bgpd and bfdd through the apply helper."""
    try:
        return applier.bgp_view()
    except ApplierError as error:
        raise Unavailable(str(error)) from error


def get_bgp(session: Session) -> BgpRead | None:
    """None while this node has no BGP."""
    data = bgp_settings(session)
    return _readable(BgpConfig.model_validate(data)) if data is not None else None


def set_bgp(session: Session, actor: audit.Actor, request: BgpWrite) -> BgpRead:
    before = bgp_settings(session)
    stored = {n["address"]: n.get("password") for n in (before or {}).get("neighbors", [])}
    data = request.model_dump(mode="json")
    for neighbor in data["neighbors"]:
        if neighbor["password"] is None:
            neighbor["password"] = stored.get(neighbor["address"])
        elif neighbor["password"] == "":
            neighbor["password"] = None
    bgp = validated(lambda: BgpConfig.model_validate(data))
    store_bgp(session, bgp)
    try:
        candidate_snapshot(session)
    except ConfigInvalid as exc:
        # The body is the BGP settings themselves: an error in them is located there, not under "bgp".
        raise ConfigInvalid([_unnest(error) for error in exc.errors]) from exc
    audit.record(
        session, actor, "bgp.update", str(bgp.asn), {"before": _audited(before), "after": _audited(data)}
    )
    return _readable(bgp)


def remove_bgp(session: Session, actor: audit.Actor) -> None:
    before = bgp_settings(session)
    if before is None:
        raise NotFound(NOT_CONFIGURED)
    store_bgp(session, None)
    candidate_snapshot(session)
    audit.record(session, actor, "bgp.delete", "", {"before": _audited(before)})


def _readable(bgp: BgpConfig) -> BgpRead:
    data = bgp.model_dump(mode="json")
    for neighbor in data["neighbors"]:
        neighbor["has_password"] = neighbor.pop("password") is not None
    return BgpRead.model_validate(data)


def _audited(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The settings as the audit log keeps them: whether a neighbor has a password, never the password."""
    if data is None:
        return None
    neighbors = [
        {**{k: v for k, v in n.items() if k != "password"}, "has_password": n.get("password") is not None}
        for n in data["neighbors"]
    ]
    return {**data, "neighbors": neighbors}


def _unnest(error: dict[str, Any]) -> dict[str, Any]:
    loc = list(error["loc"])
    if loc[:2] == ["body", "bgp"]:
        loc = ["body", *loc[2:]]
    return {**error, "loc": loc}
