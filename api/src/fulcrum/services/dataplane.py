"""Which applier the API uses: the privileged helper's socket, or the engine in-process."""

from __future__ import annotations

from fulcrum.apply.client import LocalApplier, SocketApplier
from fulcrum.apply.daemon import engine_config
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.client import Applier
from fulcrum.settings import Settings


def make_applier(settings: Settings) -> Applier:
    if settings.apply_mode == "socket":
        return SocketApplier(settings.apply_socket)
    return LocalApplier(ApplyEngine(engine_config(settings)))
