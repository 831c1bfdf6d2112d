"""What the dispatcher needs to know about this node: its name, and whether it speaks for the pair."""

from __future__ import annotations

from dataclasses import dataclass

from fulcrum.ha.runtime import HaRuntime
from fulcrum.ha.view import local_view


@dataclass(frozen=True)
class NodeView:
    name: str
    sends_pair_wide: bool  # not paired, or the pair's active node


def node_view(runtime: HaRuntime) -> NodeView:
    with runtime.session_scope() as session:
        view = local_view(session, runtime)
    return NodeView(view.name, view.pairing is None or view.role == "active")
