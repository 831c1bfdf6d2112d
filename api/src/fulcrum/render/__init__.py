"""Pure renderers: a validated ConfigSnapshot in, keepalived.conf, nftables, network and FRR files out."""

from fulcrum.render.frr import render_frr
from fulcrum.render.keepalived import NodeHealth, RuntimePaths, render_keepalived
from fulcrum.render.network import render_network
from fulcrum.render.nftables import render_nftables

__all__ = [
    "NodeHealth",
    "RuntimePaths",
    "render_frr",
    "render_keepalived",
    "render_network",
    "render_nftables",
]
