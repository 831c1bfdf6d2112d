"""Whether this node is in maintenance: keepalived's track file, read by the HA view and by the
daemons that must step aside with it (FRR withdraws the VIPs)."""

from __future__ import annotations

from pathlib import Path


def in_maintenance(path: Path) -> bool:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return False
    try:
        return int(text or "0") != 0
    except ValueError:
        return True  # not written by us: say maintenance rather than promise the node is live
