"""The API's malloc arena limit holds: threads alive at once share two arenas, not one each."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, sys, threading
from fulcrum.malloc_arenas import limit_malloc_arenas
if sys.argv[1] == "limited":
    assert limit_malloc_arenas()
together = threading.Barrier(8)
def allocate():
    held = [bytearray(4096) for _ in range(64)]  # above pymalloc's 512 bytes: glibc's malloc
    together.wait()  # all alive at once: a thread that ended would hand its arena on
    del held
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ctypes.CDLL(None).malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def arenas(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, check=True)
    return sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="glibc's allocator")
def test_threads_share_two_arenas_once_limited() -> None:
    assert arenas("default") > 2  # the control: glibc gives each of them an arena of its own
    assert arenas("limited") <= 2


def test_an_arena_limit_in_the_environment_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    from fulcrum.malloc_arenas import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
