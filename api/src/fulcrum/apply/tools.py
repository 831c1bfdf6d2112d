"""Running the external tools (keepalived, nft) and turning their failures into operator messages."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

# Enough for `nft -f` of a large ruleset; a tool that takes longer is stuck, not busy.
DEFAULT_TIMEOUT = 60.0
# Tool output shown to an operator: the first lines carry the error, the rest is repetition.
MAX_MESSAGE_LINES = 20

T = TypeVar("T")


class ToolError(RuntimeError):
    """An external tool failed; the message says which and includes its own words."""


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    output: str  # stdout and stderr, interleaved as the tool wrote them


def run_tool(argv: Sequence[str], prefix: Sequence[str] = (), timeout: float = DEFAULT_TIMEOUT) -> ToolRun:
    """Run `prefix + argv` and capture its output; raise ToolError if it cannot run at all.

    `prefix` wraps the command, e.g. ("ip", "netns", "exec", "fulcrum-test-1a2b") in tests.
    """
    command = [*prefix, *argv]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as error:
        raise ToolError(f"{command[0]} is not installed or not on PATH: {error.strerror}") from error
    except subprocess.TimeoutExpired as error:
        raise ToolError(f"{' '.join(argv)} did not finish within {timeout:g} s") from error
    return ToolRun(done.returncode, done.stdout)


def trim_lines(lines: Sequence[str]) -> str:
    """Join at most MAX_MESSAGE_LINES lines, saying how many were left out."""
    kept = list(lines[:MAX_MESSAGE_LINES])
    if len(lines) > MAX_MESSAGE_LINES:
        kept.append(f"... ({len(lines) - MAX_MESSAGE_LINES} more lines)")
    return "\n".join(kept)


def poll(check: Callable[[], T | None], timeout: float, interval: float = 0.1) -> T | None:
    """Call `check` until it returns something other than None or `timeout` seconds pass.

    Returns the last result (None on timeout). `check` runs at least once, and once more at the
    deadline, so a condition that becomes true during the last interval is still seen.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result is not None:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        time.sleep(min(interval, remaining))
