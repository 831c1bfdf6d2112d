"""An event is streamed once its transaction commits, for the data plane's events and HA's alike:
a request that rolls back leaves no event in the dashboard's stream (nor in the table)."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from fulcrum.db import unit_of_work
from fulcrum.ha import events
from fulcrum.models import Event
from fulcrum.schemas.telemetry import Severity
from fulcrum.services.revisions import commit_lock
from fulcrum.telemetry.broadcast import Message
from fulcrum.telemetry.hub import Telemetry


class RequestFailed(Exception):
    pass


async def next_event(queue: asyncio.Queue[Message]) -> Message | None:
    """The next `event` message, or None once the stream has nothing more (stats are skipped)."""
    while True:
        try:
            message = await asyncio.wait_for(queue.get(), 0.5)
        except TimeoutError:
            return None
        if message.event == "event":
            return message


@pytest.mark.parametrize("emit", ["ha", "data plane"])
def test_a_rolled_back_requests_event_is_not_streamed(
    app: FastAPI, client: TestClient, session: Session, emit: str
) -> None:
    telemetry: Telemetry = app.state.telemetry

    def record(text: str) -> None:
        if emit == "ha":
            events.emit(telemetry, "ha.maintenance", Severity.INFO, text, session=session)
        else:
            telemetry.record("backend_down", Severity.CRITICAL, text, service="web", session=session)

    async def scenario() -> list[str]:
        subscriber = telemetry.broadcaster.subscribe()
        seen: list[str] = []
        with pytest.raises(RequestFailed), unit_of_work(session):  # the request boundary's own code
            record("rolled back")
            raise RequestFailed
        with unit_of_work(session):
            record("committed")
            await asyncio.sleep(0)  # give the stream its chance: nothing may arrive before the commit
            assert subscriber[1].empty()
        while (message := await next_event(subscriber[1])) is not None:
            seen.append(message.data)
        telemetry.broadcaster.unsubscribe(subscriber)
        return seen

    streamed = asyncio.run(scenario())
    assert len(streamed) == 1 and '"message":"committed"' in streamed[0], streamed
    assert session.scalars(select(Event.message)).all() == ["committed"]


def test_the_collector_sees_a_commit_while_it_applies_and_not_after(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API wires the statistics collector to the commit, so its rounds sit out commits
    (tests/unit/telemetry/test_collector_pace.py: what it does then); the confirm watcher's checks,
    which hold the commit lock each second, are no commit."""
    seen: list[bool] = []
    apply = app.state.applier.apply

    def observed(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(app.state.telemetry.committing())
        return apply(*args, **kwargs)

    monkeypatch.setattr(app.state.applier, "apply", observed)
    assert app.state.telemetry.committing() is False
    with commit_lock:
        assert app.state.telemetry.committing() is False
    answer = client.post("/api/v1/revisions", json={"message": "nothing but the defaults"})
    assert answer.status_code == 201, answer.text
    assert seen == [True]
    assert app.state.telemetry.committing() is False
