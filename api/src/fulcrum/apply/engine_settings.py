"""The apply engine's configuration from the appliance settings (the same FULCRUM_* variables as the
API's), for the privileged helper and for an API that runs the engine in-process."""

from __future__ import annotations

import sys
from pathlib import Path

from fulcrum.apply.daemons.frr import FrrPaths
from fulcrum.apply.daemons.networkd import NetworkPaths
from fulcrum.apply.engine import EngineConfig
from fulcrum.apply.keepalived_control import keepalived_argv
from fulcrum.render import NodeHealth, RuntimePaths
from fulcrum.settings import Settings

# The console script of fulcrum.ha.node_health, installed beside the Python running this helper.
NODE_HEALTH_PROGRAM = "fulcrum-node-health"


def engine_config(settings: Settings) -> EngineConfig:
    """The engine's paths from the appliance settings: the same FULCRUM_* variables as the API's."""
    assert settings.state_dir and settings.keepalived_conf and settings.nftables_conf
    assert settings.keepalived_pidfile
    return EngineConfig(
        state_dir=settings.state_dir,
        keepalived_conf=settings.keepalived_conf,
        nftables_file=settings.nftables_conf,
        keepalived_pidfile=settings.keepalived_pidfile,
        keepalived_start=tuple(
            settings.keepalived_start
            or keepalived_argv(settings.keepalived_conf, settings.keepalived_pidfile, settings.state_dir)
        ),
        keepalived_vrrp_pidfile=(
            settings.keepalived_vrrp_pidfile or _keepalived_run_dir(settings) / "keepalived-vrrp.pid"
        ),
        runtime=runtime_paths(settings),
        readback_timeout=settings.readback_timeout,
        network=NetworkPaths(
            settings.network_dir,
            settings.networkd_runtime_dir,
            settings.network_restart_services,
            settings.readback_timeout,
        )
        if settings.network_dir
        else None,
        frr=FrrPaths(settings.frr_config) if settings.frr_config else None,
        reboot_command=tuple(settings.reboot_command) if settings.reboot_command else None,
        ssh_host_key_dir=settings.ssh_host_key_dir,
        ssh_reload_command=tuple(settings.ssh_reload_command) if settings.ssh_reload_command else None,
    )


def _keepalived_run_dir(settings: Settings) -> Path:
    """Where keepalived's children write their pid files unless the settings name them."""
    assert settings.keepalived_pidfile and settings.state_dir
    # The default start command (keepalived_argv) writes every pid file into state_dir.
    return settings.state_dir if not settings.keepalived_start else settings.keepalived_pidfile.parent


def runtime_paths(settings: Settings) -> RuntimePaths:
    """What keepalived.conf refers to on this appliance, all from the settings."""
    run_dir = _keepalived_run_dir(settings)
    checkers = settings.keepalived_checkers_pidfile or run_dir / "keepalived-checkers.pid"
    return RuntimePaths(
        notify_fifo=str(settings.notify_fifo) if settings.notify_fifo else None,
        lvs_notify_fifo=str(settings.lvs_notify_fifo) if settings.lvs_notify_fifo else None,
        maintenance_file=str(settings.maintenance_file) if settings.maintenance_file else None,
        node_health=NodeHealth(
            program=str(settings.node_health_program or Path(sys.executable).parent / NODE_HEALTH_PROGRAM),
            url=settings.node_health_url,
            checker_pidfile=str(checkers),
            verdict_file=str(run_dir / "node-health.verdict"),
            interval=settings.node_health_interval,
            timeout=settings.node_health_timeout,
            fall=settings.node_health_fall,
            rise=settings.node_health_rise,
        ),
    )
