"""Fan-out of live messages from worker threads to every open event stream."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

QUEUE_LIMIT = 64  # a client further behind than this loses its oldest messages, not our memory


@dataclass(frozen=True)
class Message:
    event: str  # stats | event | revision
    data: str  # JSON


class Broadcaster:
    def __init__(self) -> None:
        self._subscribers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Message]]] = set()
        self._lock = threading.Lock()

    def subscribe(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue[Message]]:
        subscriber = (asyncio.get_running_loop(), asyncio.Queue[Message](maxsize=QUEUE_LIMIT))
        with self._lock:
            self._subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: tuple[asyncio.AbstractEventLoop, asyncio.Queue[Message]]) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def publish(self, message: Message) -> None:
        """Callable from any thread."""
        with self._lock:
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            try:
                loop.call_soon_threadsafe(_put_dropping_oldest, queue, message)
            except RuntimeError:  # the loop has closed
                self.unsubscribe((loop, queue))


def _put_dropping_oldest(queue: asyncio.Queue[Message], message: Message) -> None:
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(message)
