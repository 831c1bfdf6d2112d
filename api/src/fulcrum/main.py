"""The application: routers under /api/v1, start-up reconciliation, the commit-confirmed watcher."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Scope

from fulcrum import __version__, migrate, openapi
from fulcrum.alerts.dispatcher import Dispatcher
from fulcrum.apply.client import Applier, ApplierError
from fulcrum.db import begin_write, make_engine, make_sessionmaker, protect_database_file, unit_of_work
from fulcrum.errors import install_error_handler
from fulcrum.ha.asgi import SignPeerResponses
from fulcrum.ha.pair_upgrade import PairUpgradeDriver
from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import alert_sender
from fulcrum.ha.watcher import Watcher
from fulcrum.malloc_arenas import limit_malloc_arenas
from fulcrum.routers import (
    alerts,
    audit,
    auth,
    backends,
    backup,
    bgp,
    cluster,
    console,
    diagnostics,
    firewall,
    firmware,
    ha,
    imports,
    logs,
    network,
    node,
    peer,
    revisions,
    services,
    status,
    storage,
    telemetry,
    tls,
    tokens,
    users,
    vip_groups,
)
from fulcrum.routers.one_writer import one_writer
from fulcrum.routers.params import DEFAULT_MAX_BODY
from fulcrum.services import console_token
from fulcrum.services import revisions as revision_service
from fulcrum.services.auth import TokenUsage, configure_password_hashing
from fulcrum.services.dataplane import make_applier
from fulcrum.settings import Settings, get_settings
from fulcrum.telemetry.hub import Telemetry
from fulcrum.telemetry.minutes import open_minute_store
from fulcrum.telemetry.storage_watch import StorageWatch
from fulcrum.telemetry.upgrade_watch import UpgradeWatch
from fulcrum.tls import certificate as tls_certificate

log = logging.getLogger("fulcrum")

API_PREFIX = "/api/v1"
TOKEN_USE_FLUSH_SECONDS = 60
HELPER_POLL_SECONDS = 0.5


def _operation_id(route: APIRoute) -> str:
    # "services-create_service": the generated SDK exports it as the function servicesCreateService.
    return f"{route.tags[0]}-{route.name}" if route.tags else route.name


_startup_frozen = False


def freeze_startup_objects() -> None:
    """Exclude what importing and starting the API made from every later garbage collection.

    Those objects (modules, classes, pydantic and SQLAlchemy schemas: about 200,000) live as long
    as the process, yet every full collection walked them all. Natively at 5,000 backends a full
    pass took 0.1 s, and collection was a fifth of 30 one-backend edits' time and 30 % of a
    commit's; frozen, a full pass walks 60,000-75,000 objects in 0.04-0.07 s. Garbage is collected
    first, so none of it is frozen; once per process (a test session starts many apps, and
    freezing their later garbage would leak it)."""
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.collect()
        gc.freeze()


def create_app(settings: Settings | None = None, applier: Applier | None = None) -> FastAPI:
    settings = settings or get_settings()
    limit_malloc_arenas()  # before the app's threads start: they would each take an arena
    configure_password_hashing(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        assert settings.database_url is not None
        await asyncio.to_thread(migrate.upgrade, settings.database_url)
        protect_database_file(settings.database_url)
        assert settings.statistics_history_file is not None
        assert settings.console_token_file is not None
        app.state.console_token = console_token.issue(settings.console_token_file)
        engine = make_engine(settings.database_url)
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.applier = applier or make_applier(settings)
        if settings.reapply_on_start:
            await asyncio.to_thread(_reapply, app, settings.apply_helper_start_wait)
        fifos = tuple(p for p in (settings.notify_fifo, settings.lvs_notify_fifo) if p is not None)
        app.state.telemetry = Telemetry(
            app.state.sessionmaker,
            app.state.applier,
            settings.stats_interval,
            fifos,
            committing=revision_service.committing.is_set,
            minutes=open_minute_store(settings.statistics_history_file),
        )
        if settings.stats_interval > 0:
            app.state.telemetry.start()
        app.state.ha = HaRuntime.create(settings, app.state.sessionmaker, app.state.telemetry)
        app.state.ha_watcher = ha_watcher = Watcher(app.state.ha, settings.ha_sync_interval)
        if settings.ha_sync_interval > 0:
            ha_watcher.start()
        app.state.alert_dispatcher = alert_dispatcher = Dispatcher(
            app.state.sessionmaker, lambda: alert_sender(app.state.ha), settings.alert_poll_seconds
        )
        if settings.alert_poll_seconds > 0:
            alert_dispatcher.start()
        app.state.storage_watch = storage_watch = StorageWatch(app.state.telemetry, settings)
        if settings.storage_check_seconds > 0:
            storage_watch.start()
        app.state.upgrade_watch = upgrade_watch = UpgradeWatch(app.state.telemetry, settings)
        if settings.upgrade_watch_seconds > 0:
            upgrade_watch.start()
        app.state.pair_upgrade = pair_upgrade = PairUpgradeDriver(app.state.ha, app.state.applier)
        if settings.ha_sync_interval > 0:  # with the HA watcher, whose peer state it reads
            pair_upgrade.start()
        watcher = asyncio.create_task(_confirm_watcher(app, settings.confirm_poll_seconds))
        expiry_watch = tls_certificate.start_expiry_watch(settings, app.state.telemetry)
        freeze_startup_objects()
        try:
            yield
        finally:
            for task in (watcher, expiry_watch):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            await asyncio.to_thread(ha_watcher.stop)
            await asyncio.to_thread(alert_dispatcher.stop)
            await asyncio.to_thread(storage_watch.stop)
            await asyncio.to_thread(upgrade_watch.stop)
            await asyncio.to_thread(pair_upgrade.stop)
            await asyncio.to_thread(app.state.telemetry.stop)
            engine.dispose()

    app = FastAPI(
        title="Fulcrum",
        version=__version__,
        summary="Configuration API of the Fulcrum load-balancer appliance",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        # Larger bodies get 413 before they are read (Content-Length) or as soon as they exceed
        # it (streamed); a route that needs more declares its own max_body_size.
        max_body_size=DEFAULT_MAX_BODY,
    )
    app.state.settings = settings
    app.state.token_usage = TokenUsage()
    install_error_handler(app)
    openapi.install(app)
    app.add_middleware(SignPeerResponses, prefix=f"{API_PREFIX}/peer/")
    # The one-writer rule on every route: a paired standby refuses changes (routers.one_writer).
    resources = (
        auth,
        users,
        tokens,
        services,
        backends,
        imports,
        revisions,
        status,
        audit,
        telemetry,
        peer,
        console,
        vip_groups,
        node,
        network,
        bgp,
        firewall,
        ha,
        cluster,
        tls,
        alerts,
        storage,
        firmware,
        backup,
        logs,
        diagnostics,
    )
    for module in resources:
        app.include_router(module.router, prefix=API_PREFIX, dependencies=[Depends(one_writer)])
    app.include_router(telemetry.metrics_router)
    if settings.webui_dir and settings.webui_dir.is_dir():
        app.mount("/", DashboardFiles(directory=settings.webui_dir, html=True), name="webui")
    return app


class DashboardFiles(StaticFiles):
    """The built dashboard; any other path outside the API is one of its routes: serve index.html
    so that reloading or bookmarking /services/3 works."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except StarletteHTTPException as exc:
            if exc.status_code != 404 or path.startswith(("api/", "metrics")):
                raise
            return await super().get_response("index.html", scope)


def _reapply(app: FastAPI, wait: float) -> None:
    _wait_for_helper(app.state.applier, wait)
    with revision_service.commit_lock, app.state.sessionmaker() as session, session.begin():
        try:
            result = revision_service.reapply_running(session, app.state.applier)
        except Exception:
            log.exception("re-applying the running revision at start-up failed")
            return
        if result is not None:
            log.info("start-up re-apply of the running revision: %s %s", result.outcome.value, result.message)


def _wait_for_helper(applier: Applier, seconds: float) -> None:
    """Until the apply helper answers, for at most `seconds` (it may be starting beside the API)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            applier.status()
            return
        except ApplierError as error:
            if time.monotonic() >= deadline:
                log.warning("the apply helper did not answer within %g s: %s", seconds, error)
                return
            time.sleep(HELPER_POLL_SECONDS)


def _expire_confirmations(app: FastAPI) -> None:
    # unit_of_work, not session.begin(): the commit ends its read before applying (end_read), which
    # inside begin() closed the transaction the context manager owns, and every revert failed.
    with revision_service.commit_lock, app.state.sessionmaker() as session, unit_of_work(session):
        reverted = revision_service.revert_unconfirmed(session, app.state.applier, app.state.telemetry)
        if reverted is not None:
            log.warning("commit-confirmed deadline passed: %s", reverted.message)


def _record_token_use(app: FastAPI) -> None:
    usage: TokenUsage = app.state.token_usage
    seen = usage.take()
    if not seen:  # no token used since the last write: no write transaction for nothing
        return
    try:
        # unit_of_work, not session.begin(): inside begin() the transaction has started, and
        # begin_write could no longer make it BEGIN IMMEDIATE.
        with app.state.sessionmaker() as session, unit_of_work(session):
            begin_write(session)
            usage.write(session, seen)
    except Exception:
        usage.put_back(seen)  # the database was busy (locked past busy_timeout): the next round writes them
        raise


async def _confirm_watcher(app: FastAPI, interval: float) -> None:
    """Expires unconfirmed commits; also writes token last-use times about once a minute."""
    last_token_flush = 0.0
    while True:
        try:
            await asyncio.to_thread(_expire_confirmations, app)
        except Exception:
            log.exception("background housekeeping: expiring unconfirmed commits")
        if time.monotonic() - last_token_flush > TOKEN_USE_FLUSH_SECONDS:
            try:
                await asyncio.to_thread(_record_token_use, app)
                last_token_flush = time.monotonic()
            except Exception:
                log.warning(
                    "background housekeeping: token last-use times not written yet; retrying", exc_info=True
                )
        await asyncio.sleep(interval)


def run() -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(), host="127.0.0.1", port=8000, proxy_headers=False)
