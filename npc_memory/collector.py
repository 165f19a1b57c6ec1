"""Python's cyclic garbage collector, run between frames instead of inside them: an
opt-in helper for the game. The plugin itself never changes the collector (no
``gc.disable()``, ``gc.freeze()`` or collection of its own); only the game's calls
into this module do.

CPython's collector runs whenever enough container objects have been allocated, in whatever
code allocates: a tick, a facade call, the store's writer thread. A young collection costs a
few milliseconds in a world of thousands of NPCs and a full one tens to hundreds, enough to
blow any frame budget. :class:`FrameCollector` turns the automatic collector off and runs
the young generation in the slack a frame leaves, then freezes what survived
(``gc.freeze()``), so no later collection walks long-lived state again. Memory held by
objects that die is still freed at once by reference counting; only reference *cycles* that
outlive a frame and die later wait for :meth:`FrameCollector.full`, which a game runs where
a pause is invisible (a loading screen, a level change). The plugin itself makes no
reference cycles as it runs. :func:`collection_paused` keeps automatic collection off
for a block, such as loading a large store.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from types import TracebackType

from npc_memory.errors import InvalidArgumentError

SLACK_SHARE = 0.5
"""Share of a frame's slack a collection may take (the rest is the store writer's and
the game's)."""


class _Switch:
    """The one owner of ``gc.enable()``/``gc.disable()`` in the process's use of this
    package: blocks that pause automatic collection (on any thread) and running
    :class:`FrameCollector` instances, so that neither turns it back on under the other."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pauses = 0  # blocks in collection_paused()
        self.collectors = 0  # FrameCollectors running
        self.automatic = True  # what to give back once neither holds it: CPython's own state

    def hold(self, *, collector: bool) -> None:
        with self.lock:
            if not (self.pauses or self.collectors):
                self.automatic = gc.isenabled()
                gc.disable()
            if collector:
                self.collectors += 1
            else:
                self.pauses += 1

    def release(self, *, collector: bool) -> None:
        with self.lock:
            if collector:
                self.collectors -= 1
            else:
                self.pauses -= 1
            if not (self.pauses or self.collectors) and self.automatic:
                gc.enable()


_switch = _Switch()


class _Paused:
    """The context manager :func:`collection_paused` returns (one for all: the count is
    in the switch)."""

    def __enter__(self) -> None:
        _switch.hold(collector=False)

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        _switch.release(collector=False)


_PAUSED = _Paused()


def collector_running() -> bool:
    """Whether a :class:`FrameCollector` runs (automatic collection is then off)."""
    return _switch.collectors > 0


def collection_paused() -> _Paused:
    """No automatic collection during the ``with`` block: for the game to wrap a block
    that builds many long-lived objects, such as installing the plugin on a large store
    (a 1,000-NPC load then skips the collections that would walk what it has decoded so
    far). Safe from any thread and beside a running :class:`FrameCollector`: automatic
    collection comes back after the block only if it was on before and no collector
    runs. The plugin never enters it itself."""
    return _PAUSED


class FrameCollector:
    """Runs the garbage collector between frames.

    A collection is due once ``young`` container objects were allocated (net) since the
    last (CPython's own first threshold is 700), or once its expected pause reaches
    ``longest`` seconds whatever the count. A due collection runs in a frame whose slack
    holds twice the pause expected, or regardless once that pause reaches ``longest`` or
    ``backlog`` times ``young`` objects have piled up; the first one runs regardless, to
    measure what the estimates start from. Pauses are in seconds of wall time.

    The expected pause is the larger of two estimates: the objects pending times the
    latest collection's cost per object, and the frames since it times its cost per
    frame. CPython's count of pending objects is net: it falls when *any* tracked container
    dies, however old, so in a world that has reached its caps (a new fact for each one
    evicted) it stays low while the young generation grows without bound. Counting frames
    as well keeps forced pauses about ``longest`` however the count goes; counted by
    objects alone, a busy world's forced collections take 17 ms at first and 190–410 ms
    once it is full.

    Usage::

        collector = FrameCollector().start()   # after loading: collect, freeze, go manual
        collector.between_frames(slack)        # each frame, with the seconds left until the next
        collector.full()                       # at a loading screen: reclaim stray cycles
        collector.stop()                       # automatic collection again

    Automatic collection stays off while any collector runs (several may: it comes back
    when the last one stops, if it was on before the first started). The estimate can be
    wrong (a frame that allocates far more than the ones before; at stress 10k the longest
    of ~4,000 collections took 16 ms). A smaller ``longest`` makes forced pauses shorter
    and more frequent for about the same time in all, as a collection's cost follows the
    objects it walks (stress 10k, 8,000 frames: 16.8 s in 3,979 pauses with ``longest`` 4 ms,
    15.5 s in 691 pauses counted by objects alone). Cycles still alive when a
    collection runs are frozen with the survivors; ``gc.get_freeze_count()`` tells how
    many objects are frozen, and :meth:`full` reclaims the dead ones (a game without
    loading screens runs it where a pause shows least).
    """

    __slots__ = (
        "_estimated",
        "_frames",
        "_per_frame",
        "_per_object",
        "backlog",
        "collections",
        "forced",
        "last_pause",
        "longest",
        "max_pause",
        "reenabled",
        "running",
        "total_pause",
        "young",
    )

    def __init__(self, *, young: int = 700, backlog: int = 50, longest: float = 0.004) -> None:
        for name, value in (("young", young), ("backlog", backlog)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"FrameCollector: {name} must be a positive int, got {value!r}")
        if isinstance(longest, bool) or not isinstance(longest, (int, float)) or not 0 < longest < math.inf:
            raise InvalidArgumentError(f"FrameCollector: longest must be positive seconds, got {longest!r}")
        self.young = young
        self.backlog = backlog
        self.longest = float(longest)
        self.collections = 0
        """Young collections run by :meth:`between_frames`."""
        self.forced = 0
        """Of those, the ones run in a frame without the slack for them (expected to
        reach ``longest``, ``backlog`` full, or the first)."""
        self.last_pause = 0.0
        """Seconds the latest young collection took."""
        self.max_pause = 0.0
        """Seconds the longest young collection took."""
        self.total_pause = 0.0
        """Seconds all young collections took."""
        self.running = False
        self.reenabled = 0
        """Times :meth:`between_frames` found automatic collection turned on by code
        outside this package (``gc.enable()``) and turned it off again."""
        self._per_object = 0.0  # seconds per pending object, as the latest collection took
        self._per_frame = 0.0  # seconds per frame since the one before, as the latest took
        self._frames = 0  # frames ended (between_frames calls) since the latest collection
        self._estimated = False  # a young collection ran: the two costs above are measured

    def start(self) -> FrameCollector:
        """Collect everything, freeze the survivors and turn automatic collection off.
        Call it where a pause is invisible, after the world is loaded or built."""
        if self.running:
            return self
        _switch.hold(collector=True)
        self.running = True
        self.full()
        return self

    def stop(self) -> None:
        """Give collection back to CPython as it was before :meth:`start`, once no other
        collector runs (frozen objects stay frozen; :func:`gc.unfreeze` hands them back
        too)."""
        if not self.running:
            return
        self.running = False
        _switch.release(collector=True)

    def due(self) -> bool:
        """Whether :meth:`between_frames`, called now, would find a collection due (slack
        aside): ``young`` objects allocated (net) since the last, or a pause of
        ``longest`` expected."""
        pending = gc.get_count()[0]
        return pending >= self.young or self._expected(pending, self._frames + 1) >= self.longest

    def expected_pause(self) -> float:
        """Seconds a young collection is expected to take at the end of this frame (see
        the class); 0 until one has run."""
        return self._expected(gc.get_count()[0], self._frames + 1)

    def _expected(self, pending: int, frames: int) -> float:
        return max(self._per_object * pending, self._per_frame * frames)

    def between_frames(self, slack: float | None = None) -> bool:
        """Run a young collection if one is due and fits in ``slack`` (seconds until the next
        frame must start; ``None``: the loop is not paced, any time will do), or regardless
        when it is expected to reach ``longest`` or ``backlog`` is full, then freeze what
        survived. The first due collection runs regardless too: it measures what the
        estimates start from. Returns whether a collection ran."""
        if slack is not None and (
            isinstance(slack, bool) or not isinstance(slack, (int, float)) or math.isnan(slack)
        ):
            raise InvalidArgumentError(f"between_frames: slack must be seconds or None, got {slack!r}")
        if not self.running:
            return False
        if gc.isenabled():  # someone called gc.enable(): automatic collection stays off
            gc.disable()
            self.reenabled += 1
        frames = self._frames + 1
        pending = gc.get_count()[0]
        expected = self._expected(pending, frames)
        if pending < self.young and expected < self.longest:
            self._frames = frames
            return False
        fits = slack is None or expected <= SLACK_SHARE * slack
        must = not self._estimated or expected >= self.longest or pending >= self.young * self.backlog
        if not (fits or must):
            self._frames = frames
            return False
        start = time.perf_counter()
        gc.collect(0)
        gc.freeze()
        self.last_pause = time.perf_counter() - start
        # Both costs from every collection, so that neither estimate outlives what it measured
        # (a count below ``young`` says little about what was walked: it stands for ``young``).
        self._per_object = self.last_pause / max(pending, self.young)
        self._per_frame = self.last_pause / frames
        self._frames = 0
        self._estimated = True
        self.total_pause += self.last_pause
        self.max_pause = max(self.max_pause, self.last_pause)
        self.collections += 1
        self.forced += not fits
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
        self._frames = 0
        return time.perf_counter() - start

    def __enter__(self) -> FrameCollector:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
