"""Pure renderers: a validated ConfigSnapshot in, keepalived.conf and nftables text out."""

from fulcrum.render.keepalived import NodeHealth, RuntimePaths, render_keepalived
from fulcrum.render.nftables import render_nftables

__all__ = ["NodeHealth", "RuntimePaths", "render_keepalived", "render_nftables"]
