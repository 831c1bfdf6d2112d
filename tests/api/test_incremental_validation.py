"""An edit checks only what it can break, and that equals validating the whole candidate.

Random edits (services, backends, VIP groups, node settings) drawn from small pools of names,
addresses, ports and VRIDs, so that clashes are frequent. Each edit runs twice on the real SQLite
session: once with the whole-candidate validation the edits used before (the reference), rolled
back, and once as shipped. Both must accept, or reject with the same located errors; and after
every accepted edit the whole candidate must still validate.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.errors import AppError, ConfigInvalid
from fulcrum.models import Backend, Service, VipGroup
from fulcrum.schemas.ha import NodeSettingsUpdate, VipGroupCreate, VipGroupUpdate
from fulcrum.schemas.services import BackendCreate, BackendUpdate, ServiceCreate, ServiceUpdate
from fulcrum.services import audit, ha_config, service_config
from fulcrum.services.candidate import candidate_snapshot
from fulcrum.services.validation import validated

NAMES = ["a", "b", "c", "d"]
ADDRESSES = ["192.0.2.10", "192.0.2.11", "2001:db8::10"]
PORTS = [80, 81, 443]
BACKENDS = ["198.51.100.1", "198.51.100.2", "2001:db8::1"]
GROUP_ADDRESSES = ["192.0.2.100/24", "192.0.2.101/24", "2001:db8::100/64"]
EDITS = 100


def _reference_service_fits(session: Session, service: Any, own_id: int | None) -> None:
    """The old rule: the whole candidate with this service in its place (last, so errors land on it)."""
    stored = candidate_snapshot(session)
    own_name = session.get(Service, own_id).name if own_id is not None else None  # type: ignore[union-attr]
    others = [s.model_dump(mode="json") for s in stored.services if s.name != own_name]
    data = {**stored.model_dump(mode="json"), "services": [*others, service.model_dump(mode="json")]}
    validated(lambda: ConfigSnapshot.model_validate(data), strip=("services", len(others)))


def _reference_groups_and_node(session: Session, focus_group: str | None = None) -> None:
    candidate_snapshot(session, focus=("vip_groups", focus_group) if focus_group else None)


def _outcome(session: Session, edit: Callable[[], object]) -> list[dict[str, Any]] | str | None:
    """None when accepted, else the located errors (or the error's text for not-found and the like)."""
    savepoint = session.begin_nested()
    try:
        edit()
        session.flush()
    except ConfigInvalid as error:
        savepoint.rollback()
        return error.errors
    except AppError as error:
        savepoint.rollback()
        return str(error)
    savepoint.commit()
    return None


def _random_service(rng: random.Random) -> dict[str, Any]:
    address = rng.choice(ADDRESSES)
    backends = [b for b in rng.sample(BACKENDS, rng.randint(0, 2)) if (":" in b) == (":" in address)]
    return {
        "name": rng.choice(NAMES),
        "address": address,
        "ports": rng.sample(PORTS, rng.choice([1, 1, 2])),
        "protocol": rng.choice(["tcp", "tcp", "udp"]),
        "health_check": {"type": "none"},
        "backends": [{"address": b} for b in backends],
    }


def _random_edit(rng: random.Random, session: Session) -> Callable[[], object]:
    """One edit, every random choice made now, so that it can run twice alike."""
    actor = audit.SYSTEM
    services = [(row.id, [b.id for b in row.backends]) for row in session.scalars(select(Service))]
    group_ids = list(session.scalars(select(VipGroup.id)))
    kind = rng.choice(["create", "update", "update", "backend", "group", "group", "node"])
    if kind == "update" and services:
        service_id = rng.choice(services)[0]
        changes = {k: v for k, v in _random_service(rng).items() if k != "backends" and rng.random() < 0.5}
        return lambda: service_config.update_service(session, actor, service_id, ServiceUpdate(**changes))
    if kind == "backend" and services:
        service_id, backend_ids = rng.choice(services)
        if backend_ids and rng.random() < 0.5:
            backend_id, weight = rng.choice(backend_ids), rng.randint(0, 5)
            return lambda: service_config.update_backend(
                session, actor, service_id, backend_id, BackendUpdate(weight=weight)
            )
        address = rng.choice(BACKENDS)
        return lambda: service_config.add_backend(session, actor, service_id, BackendCreate(address=address))
    if kind == "group":
        group = {"name": rng.choice(NAMES), "virtual_router_id": rng.choice([1, 2]),
                 "addresses": rng.sample(GROUP_ADDRESSES, rng.choice([1, 1, 2]))}
        if group_ids and rng.random() < 0.5:
            group_id = rng.choice(group_ids)
            changes = {k: v for k, v in group.items() if rng.random() < 0.5}
            return lambda: ha_config.update_vip_group(session, actor, group_id, VipGroupUpdate(**changes))
        return lambda: ha_config.create_vip_group(session, actor, VipGroupCreate(**group))
    if kind == "node":
        peer = rng.choice([None, "192.0.2.2", "2001:db8::2"])
        return lambda: ha_config.update_node(session, actor, NodeSettingsUpdate(peer_address=peer))
    spec = _random_service(rng)
    return lambda: service_config.create_service(session, actor, ServiceCreate(**spec))


@pytest.mark.parametrize("seed", range(3))
def test_edits_decide_as_the_whole_candidate_would(
    session: Session, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    decided = {"accepted": 0, "rejected": 0}
    for _ in range(EDITS):
        edit = _random_edit(rng, session)
        trial = session.begin_nested()  # the reference's run is undone before the shipped code's
        with monkeypatch.context() as reference:
            reference.setattr(service_config, "check_service_fits", _reference_service_fits)
            reference.setattr(ha_config, "check_groups_and_node", _reference_groups_and_node)
            expected = _outcome(session, edit)
        trial.rollback()
        assert _outcome(session, edit) == expected
        candidate_snapshot(session)  # the whole candidate is still valid
        decided["accepted" if expected is None else "rejected"] += 1
    assert decided["accepted"] > 20 and decided["rejected"] > 20, decided


def test_an_edit_loads_no_other_service(session: Session) -> None:
    """What makes an edit cost the same at 10 or 10,000 backends: no other service's backends are read."""
    actor = audit.SYSTEM
    rows = [
        service_config.create_service(session, actor, ServiceCreate(**{
            "name": f"s{n}", "address": "192.0.2.10", "ports": [80 + n], "health_check": {"type": "none"},
            "backends": [{"address": f"198.51.100.{b}"} for b in range(1, 6)],
        }))
        for n in range(3)
    ]
    edited, backend = rows[0].id, rows[0].backends[0].id
    session.flush()
    session.expunge_all()
    loaded: list[int] = []

    def note(target: Backend, _context: object) -> None:
        loaded.append(target.service_id)

    event.listen(Backend, "load", note)
    try:
        service_config.update_backend(session, actor, edited, backend, BackendUpdate(weight=3))
        service_config.add_backend(session, actor, edited, BackendCreate(address="198.51.100.9"))
        service_config.update_service(session, actor, edited, ServiceUpdate(ports=[80, 90]))
        service_config.create_service(session, actor, ServiceCreate(**{
            "name": "s9", "address": "192.0.2.10", "ports": [99], "backends": [{"address": "198.51.100.1"}],
        }))
    finally:
        event.remove(Backend, "load", note)
    assert loaded and set(loaded) == {edited}
