"""Which applier the API uses: the privileged helper's socket, or the engine in-process."""

from __future__ import annotations

from fulcrum.apply.client import Applier, LocalApplier, SocketApplier
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.engine_settings import engine_config
from fulcrum.settings import Settings


def make_applier(settings: Settings) -> Applier:
    if settings.apply_mode == "socket":
        return SocketApplier(settings.apply_socket)
    return LocalApplier(ApplyEngine(engine_config(settings)))
