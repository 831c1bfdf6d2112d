from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse, StreamingResponse

from fulcrum.db import SessionDep
from fulcrum.deps import TelemetryDep, Viewer
from fulcrum.routers.params import Offset, Since
from fulcrum.schemas.telemetry import EventRead, EventsList, Series, SeriesPoint, StatsSnapshot
from fulcrum.services import events, revisions
from fulcrum.telemetry import metrics
from fulcrum.telemetry.series import METRICS

router = APIRouter(tags=["telemetry"])

_RANGES = {"5m": (300, False, 1), "1h": (3600, False, 1), "24h": (86400, True, 60)}
KEEPALIVE_SECONDS = 15


@router.get("/stats/current", summary="Per-service and per-backend IPVS counters and rates, now")
def current(telemetry: TelemetryDep, _: Viewer) -> StatsSnapshot:
    return telemetry.latest or telemetry.collect()


@router.get("/stats/history", summary="A service's or backend's recent statistics")
def history(
    telemetry: TelemetryDep,
    _: Viewer,
    service: Annotated[str, Query(max_length=63)],
    backend: Annotated[
        str | None, Query(max_length=64, description="ADDRESS:PORT as in /stats/current")
    ] = None,
    range: Literal["5m", "1h", "24h"] = "5m",  # noqa: A002 (the API's word)
) -> Series:
    seconds, coarse, resolution = _RANGES[range]
    # Backends keep 5 minutes at 1 s; longer backend ranges come from the 1-minute series.
    if backend is not None and seconds > 300:
        coarse, resolution = True, 60
    # The fine series holds a point per collection: with a slower collector, points that far apart
    # are no gap (readers break the line beyond 2.5x the resolution).
    if not coarse:
        resolution = max(resolution, math.ceil(telemetry.interval))
    points = telemetry.history.read((service, backend), time.time() - seconds, coarse)
    return Series(
        service=service,
        backend=backend,
        range=range,
        resolution_seconds=resolution,
        points=[
            SeriesPoint(t=datetime.fromtimestamp(t, UTC), **dict(zip(METRICS, values, strict=True)))
            for t, values in points
        ],
    )


@router.get("/events", summary="Data-plane events, newest first")
def list_events(
    session: SessionDep,
    _: Viewer,
    kind: Annotated[str | None, Query(max_length=32)] = None,
    service: Annotated[str | None, Query(max_length=63)] = None,
    since: Since = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Offset = 0,
) -> EventsList:
    rows, total = events.list_events(session, kind, service, since, limit, offset)
    return EventsList(data=[EventRead.model_validate(r) for r in rows], count=total)


@router.get(
    "/stream",
    summary="Live updates as Server-Sent Events: `stats` every second, `event`, `revision`",
    response_class=StreamingResponse,
)
async def stream(telemetry: TelemetryDep, _: Viewer) -> StreamingResponse:
    broadcaster = telemetry.broadcaster

    async def messages() -> AsyncIterator[str]:
        subscriber = broadcaster.subscribe()
        _, queue = subscriber
        try:
            yield "retry: 2000\n\n"
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                yield f"event: {message.event}\ndata: {message.data}\n\n"
        finally:
            broadcaster.unsubscribe(subscriber)

    return StreamingResponse(
        messages(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


metrics_router = APIRouter(tags=["telemetry"])


@metrics_router.get(
    "/metrics",
    summary="Prometheus metrics (authenticate with an API token)",
    response_class=PlainTextResponse,
)
def prometheus(telemetry: TelemetryDep, session: SessionDep, _: Viewer) -> PlainTextResponse:
    current = revisions.running(session)
    text = metrics.render(telemetry, revisions.count_by_state(session), current.number if current else None)
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")
