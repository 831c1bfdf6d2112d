"""The candidate keeps each backend's validated model between builds, keyed by what is stored
(fulcrum.services.candidate): whatever was built before, a candidate is what a build from nothing
would make of the stored rows."""

from __future__ import annotations

import random

from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.models import Backend
from fulcrum.schemas.services import BackendCreate, BackendUpdate, ServiceCreate
from fulcrum.services import audit, candidate, service_config
from fulcrum.services.candidate import candidate_snapshot

EDITS = 60
CHANGES = [
    {"weight": 0},
    {"weight": 3},
    {"weight": 1},
    {"enabled": False},
    {"enabled": True},
    {"port": 8080},
    {"port": None},
    {"description": "rack 4"},
    {"description": ""},
    {"health_check": {"type": "tcp", "interval": 5}},
    {"health_check": None},
    {"upper_threshold": 100, "lower_threshold": 10},
    {"upper_threshold": 0, "lower_threshold": 0},
]


def test_every_stored_change_shows_in_the_next_candidate_as_in_one_built_from_nothing(session: Session) -> None:
    rng = random.Random(7)
    actor = audit.SYSTEM
    for name, address in (("a", "192.0.2.10"), ("b", "192.0.2.11")):
        spec = {"name": name, "address": address, "ports": [80], "health_check": {"type": "none"},
                "backends": [{"address": f"198.51.100.{i}"} for i in range(1, 4)]}
        service_config.create_service(session, actor, ServiceCreate(**spec))
    session.flush()
    candidate_snapshot(session)  # every backend's model kept
    for step in range(EDITS):
        rows = list(session.scalars(select(Backend)))
        backend = rng.choice(rows)
        if step % 10 == 9 and len(rows) > 2:
            service_config.delete_backend(session, actor, backend.service_id, backend.id)
        elif step % 10 == 4:
            taken = {r.address for r in rows if r.service_id == backend.service_id}
            address = next(f"198.51.100.{i}" for i in range(1, 40) if f"198.51.100.{i}" not in taken)
            service_config.add_backend(session, actor, backend.service_id, BackendCreate(address=address))
        else:
            service_config.update_backend(
                session, actor, backend.service_id, backend.id, BackendUpdate(**rng.choice(CHANGES))
            )
        session.flush()
        kept = candidate_snapshot(session)
        candidate._validated_backends.clear()
        assert kept == candidate_snapshot(session), f"after edit {step}"


def test_a_backend_stored_unchanged_is_the_same_model_and_only_what_is_stored_is_kept(session: Session) -> None:
    actor = audit.SYSTEM
    spec = {"name": "c", "address": "192.0.2.12", "ports": [80], "health_check": {"type": "none"},
            "backends": [{"address": "198.51.100.1"}, {"address": "198.51.100.2"}]}
    service = service_config.create_service(session, actor, ServiceCreate(**spec))
    session.flush()
    before = candidate_snapshot(session).services[0].backends
    first = session.scalars(select(Backend).where(Backend.service_id == service.id).order_by(Backend.id)).first()
    assert first is not None
    service_config.update_backend(session, actor, service.id, first.id, BackendUpdate(weight=5))
    session.flush()
    after = candidate_snapshot(session).services[0].backends
    assert after[1] is before[1]  # the cache's: not validated again
    assert after[0] is not before[0] and after[0].weight == 5 and before[0].weight == 1
    assert len(candidate._validated_backends) == 2  # what the last build read: the weight 1 model is gone
