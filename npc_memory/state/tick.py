"""The plugin's share of one tick: a wall-clock budget its systems spend in turn, and a
flag that tells the store's writer thread when the tick is running.

ClockSystem opens the tick and EventSystem, last, closes it. In between, each
budgeted system asks its :class:`TickShare` for a deadline: the earlier of its own
budget and what is left of the tick's. The tick's budget is charged from ClockSystem's
start, less any room set aside for work after the budgeted systems
(:meth:`TickBudget.reserve`), so the clock and the entity checks count, and a tick that
began late leaves less. A system that finds the tick's budget spent does no work that
tick, unless it has gone ``starve_ticks`` ticks without a turn; then it does one unit
of work, so a system late in the order never starves. A system starts a unit of work
only when it would likely end before the deadline, by what units of its kind took
lately (:class:`StepCosts`); its first unit of a tick may start anyway when it is
bigger than the system's own budget, or after ``starve_ticks`` ticks of waiting for a
tick with room for it (see :meth:`TickShare.starts`). A tick then costs about
``tick_ms`` plus a fraction of a unit, whatever each system has queued; systems keep
their units small (a room surveyed a slice of occupants at a time, a pair at a time).
"""

from __future__ import annotations

import math
import threading
import time

STARVE_TICKS = 4
"""Ticks a system may be skipped in a row before it does one unit of work anyway."""

QUIET = 0.1
"""A tick whose systems (but the one asking) worked less than this share of the budget
leaves the next one quiet (see :attr:`TickShare.quiet`)."""

STEP_WEIGHT = 0.1
"""Weight of the latest step in a running estimate of what a kind of step takes."""

CLOSE_TIMEOUT = 0.002
"""Real seconds the writer waits for a tick to close before it works anyway (a tick
that raised never closes; a save called from inside a tick must not deadlock)."""


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
        self.ran_out = False
        """Whether the running tick's budget ran out (a system found it spent)."""
        self.opened_cpu = 0.0
        self.last_cpu: float | None = None
        """CPU seconds of the game thread in the last tick whose budget did not run out,
        from ClockSystem to EventSystem (``None``: no such tick yet). CPU time, so that
        the process being descheduled does not count as work."""
        self.last_cpu_tick = 0
        """Which tick that was (see :attr:`ticks`)."""
        self.reserved = 0.0
        """Seconds set aside in the next tick's budget for work after the budgeted
        systems (see :meth:`reserve`)."""
        self.idle = threading.Event()
        """Set while no tick runs: the store's writer thread works in the game's idle
        time and holds the interpreter at most one unit of work into a tick."""
        self.idle.set()

    def open(self) -> None:
        """A tick starts (ClockSystem): what runs from here on (entity checks too) is
        charged to its budget."""
        self.idle.clear()
        self.left = self.total_ms / 1000.0 - self.reserved
        self.reserved = 0.0
        self.charged_to = time.perf_counter()
        self.ticks += 1
        self.ran_out = False
        self.opened_cpu = time.thread_time()

    def close(self) -> None:
        """The tick ended (EventSystem)."""
        if not self.ran_out:  # every system had its turn: what they did is what they had to do
            self.last_cpu, self.last_cpu_tick = time.thread_time() - self.opened_cpu, self.ticks
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
    """A running estimate of the real seconds each kind of step takes, so that a step
    that would likely end past a deadline waits for the next tick."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def fits(self, kind: str, now: float, deadline: float | None) -> bool:
        """Whether a ``kind`` step started at ``now`` (``time.perf_counter()``) would
        likely end by ``deadline`` (``None``: no deadline)."""
        return deadline is None or now + self.seconds.get(kind, 0.0) <= deadline

    def took(self, kind: str, seconds: float) -> None:
        """A ``kind`` step took ``seconds``."""
        estimate = self.seconds.get(kind, 0.0)
        self.seconds[kind] = estimate + STEP_WEIGHT * (seconds - estimate)


class TickShare:
    """One system's part of the tick's budget, and what its kinds of step take."""

    def __init__(self, tick: TickBudget, own_ms: float) -> None:
        self.tick = tick
        self.own_ms = own_ms
        self.steps = StepCosts()
        self.skipped = 0
        """Ticks in a row this system found the tick's budget spent."""
        self.waited = 0
        """Ticks in a row this system's first unit waited for a tick with room for it."""
        self.starving = False
        """Whether this tick's :meth:`deadline` is a starving system's one unit."""
        self.cramped = False
        """Whether this tick's :meth:`deadline` is what was left of the tick's budget,
        less than the system's own."""
        self.quiet = True
        """Whether the world is quiet as of the last :meth:`deadline`: in the last tick
        whose budget did not run out (one of the last ``starve_ticks``), the other systems
        worked less than ``QUIET`` of the budget; or this is the first tick. A system may
        then finish a piece of work it has begun past its deadline, so that a quiet tick
        completes it."""
        self.started_cpu = 0.0
        self.worked: tuple[int, float] = (0, 0.0)
        """The last tick this system worked in and its CPU seconds (see :meth:`done`)."""
        self.worked_calm: tuple[int, float] = (0, 0.0)
        """The same for the last such tick whose budget did not run out."""

    def deadline(self) -> float | None:
        """``time.perf_counter()`` value at which to stop this tick's work (after at
        least one unit), or ``None``: the tick's budget is spent, do nothing now."""
        tick, now = self.tick, time.perf_counter()
        if tick.charged_to is not None:
            tick.left -= now - tick.charged_to  # what the systems before this one took
        tick.charged_to = now
        if self.worked[0] == tick.last_cpu_tick:
            self.worked_calm = self.worked
        if tick.last_cpu is None or tick.ticks - tick.last_cpu_tick > tick.starve_ticks:
            self.quiet = tick.ticks <= 1  # the first tick is quiet; one after many that ran out is not
        else:
            calm_tick, worked = self.worked_calm
            own = worked if calm_tick == tick.last_cpu_tick else 0.0
            self.quiet = tick.last_cpu - own < QUIET * tick.total_ms / 1000.0
        self.started_cpu = time.thread_time()
        self.starving = self.cramped = False
        if tick.left <= 0.0:
            tick.ran_out = True
            if self.skipped < tick.starve_ticks:
                self.skipped += 1
                return None
            self.skipped, self.starving = 0, True
            return now  # starving: one unit of work
        self.skipped = 0
        own = self.own_ms / 1000.0
        self.cramped = tick.left < own
        return now + min(own, tick.left)

    def starts(self, kind: str, now: float, deadline: float, *, first: bool) -> bool:
        """Whether to start a ``kind`` unit of work at ``now`` (``time.perf_counter()``):
        one that would likely end by ``deadline`` (see :meth:`deadline`). The system's
        first unit of the tick waits only for a tick with more room: when what is left
        of this tick's budget is less than the system's own and the unit would fit the
        latter, at most ``starve_ticks`` ticks in a row."""
        steps = self.steps
        if not first:
            return steps.fits(kind, now, deadline)
        roomier = self.cramped and steps.seconds.get(kind, 0.0) <= self.own_ms / 1000.0
        if (
            steps.fits(kind, now, deadline)
            or self.starving
            or not roomier
            or self.waited >= self.tick.starve_ticks
        ):
            self.waited = 0
            return True
        self.waited += 1
        return False

    def done(self) -> None:
        """This system's work of the tick is over: what it did is not counted against
        :attr:`quiet` for it (a system that reads :attr:`quiet` says so)."""
        self.worked = (self.tick.ticks, time.thread_time() - self.started_cpu)
