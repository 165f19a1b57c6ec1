"""The plugin's share of one tick: a wall-clock budget its systems spend in turn, and a
flag that tells the store's writer thread when the tick is running.

ClockSystem opens the tick and EventSystem, last, closes it. In between, each budgeted
system asks its :class:`TickShare` for a deadline: the earlier of its own budget and
what is left of the tick's. The tick's budget is charged from ClockSystem's start, less
any room set aside for work after the budgeted systems (:meth:`TickBudget.reserve`) and
any room held for a later system, so the clock and the entity checks count, and a tick
that began late leaves less. A system that finds the tick's budget spent does no work
that tick, unless it has gone ``starve_ticks`` ticks without a turn; then the systems
before it leave it its own budget, so a system late in the order never starves. A system
starts a unit of work only when, by what units of its kind took lately
(:class:`StepCosts`), it would likely end before the system's deadline and, at most,
before the end of the tick's budget; its first unit of a tick may also start when it
would end within what is left of the tick's budget, when no tick is likely to have room
for it, or after ``starve_ticks`` ticks of waiting for room (the systems before it then
leave it that room; see :meth:`TickShare.starts`). So, on any machine, a system with
work starts a unit at least once every ``starve_ticks + 1`` ticks (:func:`ticks_bound`):
how much more a tick does depends on the machine, that bound does not. A tick then costs
about ``tick_ms``
(at times part of a unit more), whatever each system has queued; systems keep their
units small (a room surveyed a slice of occupants at a time, a pair at a time) and name
them by what they cost (a transcript's last step, which turns its lines into memories,
apart from reading a line).
"""

from __future__ import annotations

import math
import threading
import time

STARVE_TICKS = 4
"""Ticks a system may be skipped in a row before it does one unit of work anyway."""

STEP_WEIGHT = 0.125
"""Weight of the latest step in the running mean of what a kind of step takes."""

SPREAD_WEIGHT = 0.25
"""Weight of the latest step's distance from that mean in the running mean deviation."""

SPREAD_MARGIN = 3.0
"""Mean deviations over the mean that a kind of step is expected to take at most (as a
retransmission timeout is set from round-trip times, RFC 6298): steps of one kind vary
(a line read for the first time or again, a teller who has news or not, a cold cache
after the frame's sleep), and a step that ends past its deadline lengthens the tick."""

CLOSE_TIMEOUT = 0.002
"""Real seconds the writer waits for a tick to close before it works anyway (a tick
that raised never closes; a save called from inside a tick must not deadlock)."""


def ticks_bound(units: int, starve_ticks: int = STARVE_TICKS) -> int:
    """Ticks within which a system does ``units`` units of the work it has queued, on any
    machine and under any load: it starts one at least every ``starve_ticks + 1`` ticks."""
    return units * (starve_ticks + 1)


class TickBudget:
    """Wall-clock time (``total_ms`` milliseconds; ``math.inf``: none) the plugin's
    systems may spend in one tick, and whether a tick is running."""

    def __init__(self, total_ms: float, starve_ticks: int = STARVE_TICKS) -> None:
        self.total_ms = total_ms
        self.starve_ticks = starve_ticks
        self.left = math.inf
        """Seconds of the running tick's budget not yet charged."""
        self.charged_to: float | None = None
        """``time.perf_counter()`` up to which the running tick is charged (``None``:
        no tick runs)."""
        self.ticks = 0
        """Ticks opened so far."""
        self.reserved = 0.0
        """Seconds set aside in the next tick's budget for work after the budgeted
        systems (see :meth:`reserve`)."""
        self.holding = 0.0
        """Seconds of the running tick's budget held for systems that waited in the
        last tick and have not had their turn yet (see :meth:`TickShare.deadline`)."""
        self.held = 0.0
        """Seconds held so far for systems in the next tick."""
        self._opened_with = 0.0  # what was reserved for the running tick (see abort)
        self.idle = threading.Event()
        """Set while no tick runs: the store's writer thread works in the game's idle
        time and holds the interpreter at most one unit of work into a tick."""
        self.idle.set()

    def open(self) -> None:
        """A tick starts (ClockSystem, first thing): what runs from now on, the clock's
        work and the entity checks too, is charged to its budget."""
        self.idle.clear()
        self.left = self.total_ms / 1000.0 - self.reserved
        self._opened_with = self.reserved
        self.reserved = 0.0
        self.holding, self.held = self.held, 0.0
        self.charged_to = time.perf_counter()
        self.ticks += 1

    def close(self) -> None:
        """The tick ended (EventSystem)."""
        self.left = math.inf
        self.charged_to = None
        self.idle.set()

    def abort(self) -> None:
        """The tick failed before its systems ran (ClockSystem raised): as if it had
        not opened; the room set aside or held for the next tick is kept for it."""
        self.reserved, self._opened_with = self._opened_with, 0.0
        self.held, self.holding = self.holding, 0.0
        self.ticks -= 1
        self.left = math.inf
        self.charged_to = None
        self.idle.set()

    def reserve(self, seconds: float) -> None:
        """Set ``seconds`` aside in the next tick's budget for work that runs after the
        budgeted systems (a snapshot round's end), so that tick still ends in time."""
        self.reserved = min(self.reserved + seconds, self.total_ms / 1000.0)

    def wait_idle(self) -> bool:
        """Block the calling (writer) thread until no tick runs, at most ``CLOSE_TIMEOUT``
        seconds; whether it waited. Waiting releases the interpreter to the game thread."""
        if self.idle.is_set():
            return False
        self.idle.wait(CLOSE_TIMEOUT)
        return True

    def share(self, own_ms: float) -> TickShare:
        """A system's share: at most ``own_ms`` milliseconds per tick."""
        return TickShare(self, own_ms)


class StepCosts:
    """What each kind of step takes, so that a step that would likely end past a
    deadline waits for the next tick. Per kind: the running mean of the real seconds
    its steps took (:attr:`seconds`) and what a step is expected to take at most
    (:attr:`most`: the mean plus ``SPREAD_MARGIN`` running mean deviations). A step
    fits when its mean ends by the system's deadline, a soft bound (what a system
    overruns, the systems after it lose), and its most by :attr:`limit`, the end of the
    tick's budget."""

    def __init__(self, unknown: float = 0.0) -> None:
        self.unknown = unknown
        """Real seconds a step of a kind not seen yet is taken to take."""
        self.seconds: dict[str, float] = {}
        """Real seconds a step of each kind takes, on average lately."""
        self.most: dict[str, float] = {}
        """Real seconds a step of each kind is expected to take at most."""
        self.deviation: dict[str, float] = {}
        """Running mean deviation of each kind's steps from :attr:`seconds`."""
        self.limit = math.inf
        """``time.perf_counter()`` value by which every step is to end: the end of the
        running tick's budget, less what systems later in the order hold (set by
        :meth:`TickShare.deadline`)."""

    def fits(self, kind: str, now: float, deadline: float | None) -> bool:
        """Whether a ``kind`` step started at ``now`` (``time.perf_counter()``) would
        likely end by ``deadline`` (``None``: no deadline), and by :attr:`limit` at most."""
        if deadline is None:
            return True
        return now + self.mean(kind) <= deadline and now + self.at_most(kind) <= self.limit

    def mean(self, kind: str) -> float:
        """Real seconds a ``kind`` step takes on average lately."""
        return self.seconds.get(kind, self.unknown)

    def at_most(self, kind: str) -> float:
        """Real seconds a ``kind`` step is expected to take at most."""
        return self.most.get(kind, self.unknown)

    def took(self, kind: str, seconds: float) -> None:
        """A ``kind`` step took ``seconds``."""
        mean = self.seconds.get(kind)
        if mean is None:  # a first sample: its own size as its deviation
            mean, deviation = seconds, seconds / 2.0
        else:
            deviation = self.deviation[kind] + SPREAD_WEIGHT * (abs(seconds - mean) - self.deviation[kind])
            mean += STEP_WEIGHT * (seconds - mean)
        self.seconds[kind], self.deviation[kind] = mean, deviation
        self.most[kind] = mean + SPREAD_MARGIN * deviation


class TickShare:
    """One system's part of the tick's budget, and what its kinds of step take."""

    def __init__(self, tick: TickBudget, own_ms: float) -> None:
        self.tick = tick
        self.own_ms = own_ms
        self.steps = StepCosts(own_ms / 1000.0)  # a kind not seen yet: as long as the budget
        self.waited = 0
        """Ticks since this system last started a unit of work in which it started none:
        it found the tick's budget spent, or its first unit waited for a tick with room."""
        self.starving = False
        """Whether this tick's :meth:`deadline` is a starving system's one unit."""
        self.hold: tuple[int, float] = (0, 0.0)
        """The tick in which the systems before this one leave it room, and how many
        seconds (see :meth:`deadline`)."""
        self.room: float | None = None
        """Running mean of the seconds of the tick's budget left at this system's turn
        (``None``: no turn yet): the room a tick usually has for it."""

    def deadline(self) -> float | None:
        """``time.perf_counter()`` value at which to stop this tick's work, or ``None``:
        the tick's budget is spent, do nothing now. What systems later in the order hold
        is not this system's to spend: a system that will do a unit of work anyway next
        tick, having waited ``starve_ticks`` ticks for room, holds room for it (its own
        budget, or what the unit takes at most)."""
        tick, now = self.tick, time.perf_counter()
        if tick.charged_to is not None:
            tick.left -= now - tick.charged_to  # what the systems before this one took
        tick.charged_to = now
        held_at, held = self.hold
        if held_at == tick.ticks:  # room the systems before this one left it
            tick.holding -= held
            self.hold = (0, 0.0)
        left = tick.left - max(0.0, tick.holding)
        self.starving = False
        self.steps.limit = now + left  # the tick's budget, but what later systems hold
        if not math.isinf(left):
            room = max(0.0, left)
            self.room = room if self.room is None else self.room + STEP_WEIGHT * (room - self.room)
        own = self.own_ms / 1000.0
        if left <= 0.0:
            if self.waited < tick.starve_ticks:
                self.waited += 1
                if self.waited == tick.starve_ticks:  # its turn comes next tick: room for it
                    self.hold_next(own)
                return None
            self.starving = True
            return now  # starving: one unit of work
        return now + min(own, left)

    def hold_next(self, seconds: float) -> None:
        """Have the systems before this one leave it ``seconds`` in the next tick (at
        most what the budget has after its reserve and the other holds). Room this system
        does not claim in that tick (it did not run) is lost to the others for that tick."""
        tick = self.tick
        seconds = min(seconds, tick.total_ms / 1000.0 - tick.reserved - tick.held)
        if seconds > 0.0:
            self.hold = (tick.ticks + 1, seconds)
            tick.held += seconds

    def starts(self, kind: str, now: float, deadline: float, *, first: bool) -> bool:
        """Whether to start a ``kind`` unit of work at ``now`` (``time.perf_counter()``):
        one that would likely end by ``deadline`` (see :meth:`deadline`). The system's
        first unit of the tick may also start when it would likely end within what is
        left of the tick's budget (a unit bigger than the system's own budget), when the
        system is starving, or when what it takes at most is more than a tick usually
        has for it (:attr:`room`: waiting would not help) and what it takes on average
        fits what is left; else it waits for a tick with room, at most ``starve_ticks``
        ticks in a row."""
        steps = self.steps
        if steps.fits(kind, now, deadline):
            if first:
                self.waited = 0
            return True
        if not first:
            return False
        starved = self.starving or self.waited >= self.tick.starve_ticks
        unlikely = self.room is not None and steps.at_most(kind) > self.room
        if (
            starved
            or steps.fits(kind, now, steps.limit)
            or (unlikely and now + steps.mean(kind) <= steps.limit)
        ):
            self.waited = 0
            return True
        self.waited += 1
        if self.waited == self.tick.starve_ticks:  # it starts next tick: room for it
            self.hold_next(steps.at_most(kind))
        return False
