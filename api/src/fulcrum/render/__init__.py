"""Pure renderers: a validated ConfigSnapshot in, keepalived.conf, nftables and network files out."""

from fulcrum.render.keepalived import NodeHealth, RuntimePaths, render_keepalived
from fulcrum.render.network import render_network
from fulcrum.render.nftables import render_nftables

__all__ = ["NodeHealth", "RuntimePaths", "render_keepalived", "render_network", "render_nftables"]
