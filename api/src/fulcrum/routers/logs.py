"""System → Logs: this node's journal, filtered, paged, live-tailed and downloadable."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from fulcrum.deps import Operator, SettingsDep
from fulcrum.routers.params import Since
from fulcrum.schemas.logs import LogPage, LogSource
from fulcrum.services import journal

router = APIRouter(prefix="/logs", tags=["logs"])

TAIL_POLL_SECONDS = 1.0
TAIL_BATCH = 500
KEEPALIVE_SECONDS = 15
DOWNLOAD_LIMIT = 10_000
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"
Cursor = Annotated[
    str | None,
    Query(max_length=256, pattern=journal.CURSOR.pattern, description="a journal cursor from an entry"),
]


def log_query(
    source: Annotated[list[LogSource] | None, Query(description="repeat for several; none: all")] = None,
    priority: Annotated[int, Query(ge=0, le=7, description="this priority or more severe (0 emergency)")] = 7,
    since: Since = None,
    until: Since = None,
    text: Annotated[str | None, Query(max_length=200, pattern=NO_CONTROL_CHARACTERS)] = None,
    before: Cursor = None,
    after: Cursor = None,
) -> journal.LogQuery:
    return journal.LogQuery(
        sources=tuple(source or ()),
        max_priority=priority,
        since=since,
        until=until,
        text=text or None,
        before=before,
        after=after,
    )


LogQueryDep = Annotated[journal.LogQuery, Depends(log_query)]


@router.get("", summary="This node's journal, newest first: keepalived, API, helper, networking, kernel")
def read_logs(
    query: LogQueryDep,
    settings: SettingsDep,
    _: Operator,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> LogPage:
    return journal.read(settings.journal_directory, replace(query, limit=limit))


@router.get(
    "/download",
    summary="The journal as text, oldest first, with the same filters",
    response_class=PlainTextResponse,
)
def download_logs(
    query: LogQueryDep,
    settings: SettingsDep,
    _: Operator,
    limit: Annotated[int, Query(ge=1, le=DOWNLOAD_LIMIT)] = DOWNLOAD_LIMIT,
) -> PlainTextResponse:
    page = journal.read(settings.journal_directory, replace(query, limit=limit))
    body = journal.as_text(reversed(page.entries)) if page.available else f"{page.reason}\n"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return PlainTextResponse(
        body, headers={"Content-Disposition": f'attachment; filename="fulcrum-logs-{stamp}.txt"'}
    )


@router.get(
    "/stream",
    summary="Live tail as Server-Sent Events: `log` for each new entry (oldest first), `unavailable`",
    response_class=StreamingResponse,
)
async def tail_logs(
    request: Request, query: LogQueryDep, settings: SettingsDep, _: Operator
) -> StreamingResponse:
    # Where to start is read before the response opens: a client sees the stream open only once
    # an entry written from then on is sure to be sent.
    newest = None
    if query.after is None:  # start after the newest entry there is now
        newest = await asyncio.to_thread(
            journal.read, settings.journal_directory, replace(query, before=None, limit=1)
        )
    return StreamingResponse(
        _tail(request, query, settings.journal_directory, newest),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _tail(
    request: Request, query: journal.LogQuery, directory: Path | None, newest: LogPage | None
) -> AsyncIterator[str]:
    position = query.after
    if newest is not None:
        if not newest.available:
            yield f"event: unavailable\ndata: {json.dumps(newest.reason)}\n\n"
            return
        position = newest.entries[0].cursor if newest.entries else None
    yield ": tailing\n\n"
    quiet = 0.0
    while not await request.is_disconnected():
        if position is None:  # the journal was empty: everything that has come since
            step = replace(query, before=None, limit=TAIL_BATCH)
        else:
            step = replace(query, before=None, after=position, limit=TAIL_BATCH)
        page = await asyncio.to_thread(journal.read, directory, step)
        fresh = page.entries[::-1]  # oldest first
        for entry in fresh:
            yield f"event: log\ndata: {entry.model_dump_json()}\n\n"
        if fresh:
            position, quiet = fresh[-1].cursor, 0.0
        else:
            quiet += TAIL_POLL_SECONDS
            if quiet >= KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                quiet = 0.0
        await asyncio.sleep(TAIL_POLL_SECONDS)
