"""The wall clock of the peer link: request timestamps, their check, and the time a node tells
its peer. One function, looked up at each call, so that a test can run a node whose clock is
off (tests/api/hanode.py replaces it in one node's process); nothing else replaces it."""

from __future__ import annotations

import time


def now() -> float:
    return time.time()
