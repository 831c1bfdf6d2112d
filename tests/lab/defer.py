"""Cleanup that always runs: a stack of scopes, each a LIFO queue of deferred calls.

Like the kernel selftests' `defer()`: whatever the lab creates (namespaces, processes) queues
its own undo in the innermost scope as soon as it exists. A pytest fixture opens a scope per
test (and per module, for shared labs); leaving the scope runs the queue even if the test
failed, and reports every cleanup error, not just the first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


class CleanupError(RuntimeError):
    pass


class Scope:
    def __init__(self, name: str):
        self.name = name
        self._queue: list[tuple[Callable, tuple, dict]] = []

    def add(self, fn: Callable, *args, **kwargs) -> None:
        self._queue.append((fn, args, kwargs))

    def run(self) -> None:
        errors = []
        while self._queue:
            fn, args, kwargs = self._queue.pop()
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # keep cleaning up; report all at the end
                errors.append(f"{getattr(fn, '__qualname__', fn)}: {exc!r}")
        if errors:
            raise CleanupError(f"cleanup of {self.name} failed:\n" + "\n".join(errors))


_scopes: list[Scope] = []


@contextlib.contextmanager
def scope(name: str) -> Iterator[Scope]:
    """Run everything deferred inside the block when it ends, however it ends."""
    current = Scope(name)
    _scopes.append(current)
    try:
        yield current
    finally:
        _scopes.remove(current)
        current.run()


def defer(fn: Callable, *args, **kwargs) -> None:
    """Queue fn(*args, **kwargs) in the innermost cleanup scope."""
    if not _scopes:
        raise RuntimeError("defer() outside a cleanup scope: use `with lab.defer.scope(...)` or the kernel fixtures")
    _scopes[-1].add(fn, *args, **kwargs)


def innermost() -> Scope:
    """The scope `defer` queues into now (e.g. a shared lab's, kept to defer into later)."""
    if not _scopes:
        raise RuntimeError("no cleanup scope is open")
    return _scopes[-1]


@contextlib.contextmanager
def within(existing: Scope) -> Iterator[None]:
    """Defer into `existing` while the block runs: what a test starts again for a lab that
    outlives the test (a node's keepalived, restarted) is cleaned up with that lab, not when the
    test's own scope ends."""
    _scopes.append(existing)
    try:
        yield
    finally:
        assert _scopes.pop() is existing, "cleanup scopes nested across within()"
