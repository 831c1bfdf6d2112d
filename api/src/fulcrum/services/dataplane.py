"""Which applier the API uses: the privileged helper's socket, or the engine in-process."""

from __future__ import annotations

from fulcrum.apply.client import LocalApplier, SocketApplier
from fulcrum.apply.engine import ApplyEngine, EngineConfig
from fulcrum.apply.keepalived_control import keepalived_argv
from fulcrum.render import RuntimePaths
from fulcrum.services.revisions import Applier
from fulcrum.settings import Settings


def engine_config(settings: Settings) -> EngineConfig:
    assert settings.state_dir and settings.keepalived_conf and settings.nftables_conf and settings.keepalived_pidfile
    start = tuple(settings.keepalived_start or keepalived_argv(settings.keepalived_conf, settings.keepalived_pidfile, settings.state_dir))
    return EngineConfig(
        state_dir=settings.state_dir,
        keepalived_conf=settings.keepalived_conf,
        nftables_file=settings.nftables_conf,
        keepalived_pidfile=settings.keepalived_pidfile,
        keepalived_start=start,
        runtime=RuntimePaths(
            notify_fifo=str(settings.notify_fifo) if settings.notify_fifo else None,
            lvs_notify_fifo=str(settings.lvs_notify_fifo) if settings.lvs_notify_fifo else None,
            maintenance_file=None,
        ),
        readback_timeout=settings.readback_timeout,
    )


def make_applier(settings: Settings) -> Applier:
    if settings.apply_mode == "socket":
        return SocketApplier(settings.apply_socket)
    return LocalApplier(ApplyEngine(engine_config(settings)))
