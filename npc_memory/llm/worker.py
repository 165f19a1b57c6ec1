"""The one LLM worker thread: it runs one asyncio event loop, which owns the
``AsyncAnthropic`` client. Ticks only submit work to it and poll futures."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerLoop:
    """A daemon thread running an asyncio event loop until :meth:`stop`."""

    def __init__(self, name: str = "npc-memory-llm") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the loop still runs."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the loop; a future of its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call_soon(self, callback: Callable[..., object], *args: Any) -> bool:
        """Schedule ``callback(*args)`` on the loop; ``False`` if the loop is gone."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed
            return False
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and join the thread (idempotent)."""
        if self.loop.is_closed():
            return
        self.call_soon(self.loop.stop)
        self._thread.join(timeout=timeout)
        if not self._thread.is_alive():
            self.loop.close()
