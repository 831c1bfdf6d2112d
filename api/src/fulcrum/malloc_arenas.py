"""At most two glibc malloc arenas for the API process.

glibc gives each thread that allocates an arena of its own (up to eight per core; nine for eight
threads in tests/unit/test_malloc_arenas.py) and keeps what was freed in each for that arena's
next use. The API's threads (the
statistics collector, the request workers, the HA watcher) each churn through megabytes a second
at size, so every arena grows to its own high-water mark. In the kernel VM at 5,000 backends the
API held 197 MB with glibc's default and 165 MB with two arenas, at 10,000 241 and 214 MB, its
edits and commits no slower (`make bench` control part, one run each, 2026-12-01).

`MALLOC_ARENA_MAX` in the environment is glibc's own and is left alone; a C library without
`mallopt` (musl has it as a stub) changes nothing.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 2


def limit_malloc_arenas(count: int = ARENAS) -> bool:
    """Set glibc's arena limit for arenas made from now on; True if it was set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, count) == 1
