"""Poll with a deadline instead of sleeping: the emulated VM's timing is slow and noisy."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

_ANY_TRUTHY = object()


class WaitTimeout(AssertionError):
    """An AssertionError, so pytest shows it as a failed expectation."""


class StopWaiting(Exception):
    """Raised by a probe when waiting longer cannot help (e.g. the process it waits for died)."""


# A probe that raises one of these has a bug (a wrong name, attribute or argument): no amount of
# waiting fixes it, so it fails at once instead of after the timeout, with its own traceback.
PROBE_BUGS: tuple[type[Exception], ...] = (
    TypeError, AttributeError, NameError, ImportError, NotImplementedError,
)
_PROPAGATE = (StopWaiting, *PROBE_BUGS)


def wait_until(
    probe: Callable[[], Any],
    timeout: float = 30,
    *,
    what: str,
    expect: Any = _ANY_TRUTHY,
    interval: float = 0.1,
) -> Any:
    """Call probe() until it returns `expect` (default: anything truthy); return that value.

    An exception from probe counts as "not yet", except StopWaiting and PROBE_BUGS, which
    propagate at once. On timeout, raise WaitTimeout naming `what`, the expected value and the
    last value (or exception) seen.
    """
    deadline = time.monotonic() + timeout
    tries = 0
    while True:
        tries += 1
        try:
            got, error = probe(), None
            if (bool(got) if expect is _ANY_TRUTHY else got == expect):
                return got
        except _PROPAGATE:
            raise
        except Exception as exc:  # the thing may just not exist yet
            got, error = None, exc
        if time.monotonic() >= deadline:
            wanted = "something truthy" if expect is _ANY_TRUTHY else repr(expect)
            last = f"raised {error!r}" if error is not None else f"got {got!r}"
            raise WaitTimeout(f"waited {timeout}s ({tries} tries) for {what}: expected {wanted}, last {last}")
        time.sleep(interval)
