"""Python's cyclic garbage collector, run between frames instead of inside them.

CPython's collector runs whenever enough container objects have been allocated, in whatever
code allocates: a tick, a facade call, the store's writer thread. A young collection costs a
few milliseconds in a world of thousands of NPCs and a full one tens to hundreds, enough to
blow any frame budget. :class:`FrameCollector` turns the automatic collector off and runs
the young generation in the slack a frame leaves, then freezes what survived
(``gc.freeze()``), so no later collection walks long-lived state again. Memory held by
objects that die is still freed at once by reference counting; only reference *cycles* that
outlive a frame and die later wait for :meth:`FrameCollector.full`, which a game runs where
a pause is invisible (a loading screen, a level change). The plugin itself makes no
reference cycles as it runs.
"""

from __future__ import annotations

import gc
import time
from types import TracebackType

SLACK_SHARE = 0.5
"""Share of a frame's slack a collection may take (the rest is the store writer's and
the game's)."""


class FrameCollector:
    """Runs the garbage collector between frames.

    ``young`` is the number of container objects allocated (net) that makes a collection
    due (CPython's own first threshold is 700). A due collection runs in a frame whose
    slack holds twice the pause expected (the latest collection's cost per object times
    the objects pending), or regardless once ``backlog`` times ``young`` objects have
    piled up. Pauses are in seconds of wall time.

    Usage::

        collector = FrameCollector().start()   # after loading: collect, freeze, go manual
        collector.between_frames(slack)        # each frame, with the seconds left until the next
        collector.full()                       # at a loading screen: reclaim stray cycles
        collector.stop()                       # automatic collection again
    """

    __slots__ = (
        "_per_object",
        "_was_enabled",
        "backlog",
        "collections",
        "forced",
        "last_pause",
        "max_pause",
        "running",
        "young",
    )

    def __init__(self, *, young: int = 700, backlog: int = 50) -> None:
        if young < 1 or backlog < 1:
            raise ValueError(f"young and backlog must be positive, got young={young}, backlog={backlog}")
        self.young = young
        self.backlog = backlog
        self.collections = 0
        """Young collections run by :meth:`between_frames`."""
        self.forced = 0
        """Of those, the ones run without the slack for them (the backlog was full)."""
        self.last_pause = 0.0
        """Seconds the latest young collection took."""
        self.max_pause = 0.0
        """Seconds the longest young collection took."""
        self.running = False
        self._was_enabled = True
        self._per_object = 0.0  # seconds per pending object, as the latest collection took

    def start(self) -> FrameCollector:
        """Collect everything, freeze the survivors and turn automatic collection off.
        Call it where a pause is invisible, after the world is loaded or built."""
        if self.running:
            return self
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.running = True
        self.full()
        return self

    def stop(self) -> None:
        """Give collection back to CPython as it was before :meth:`start` (frozen objects
        stay frozen; :func:`gc.unfreeze` hands them back too)."""
        if not self.running:
            return
        self.running = False
        if self._was_enabled:
            gc.enable()

    def due(self) -> bool:
        """Whether enough objects were allocated since the last collection for another."""
        return gc.get_count()[0] >= self.young

    def between_frames(self, slack: float | None = None) -> bool:
        """Run a young collection if one is due and fits in ``slack`` (seconds until the next
        frame must start; ``None``: the loop is not paced, any time will do), then freeze
        what survived. Returns whether a collection ran."""
        if not self.running:
            return False
        pending = gc.get_count()[0]
        if pending < self.young:
            return False
        forced = pending >= self.young * self.backlog
        if slack is not None and not forced and self._per_object * pending > SLACK_SHARE * slack:
            return False
        start = time.perf_counter()
        gc.collect(0)
        gc.freeze()
        self.last_pause = time.perf_counter() - start
        self._per_object = self.last_pause / pending
        self.max_pause = max(self.max_pause, self.last_pause)
        self.collections += 1
        self.forced += forced
        return True

    def full(self) -> float:
        """Collect every generation, frozen ones included, and freeze the survivors again:
        reclaims the cycles that outlived a frame. Takes as long as a full collection of
        the whole process (hundreds of milliseconds for a large world); returns the
        seconds it took."""
        start = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return time.perf_counter() - start

    def __enter__(self) -> FrameCollector:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
