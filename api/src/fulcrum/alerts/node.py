"""What the dispatcher needs to know about this node: its name, and whether it speaks for the pair.

`fulcrum.ha.view.alert_sender` fills it in (the HA layer sits above this one)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeView:
    name: str
    sends_pair_wide: bool  # not paired, or the pair's active node
