"""Game time, owned by the plugin: everything time-based reads it."""

from __future__ import annotations

import math
import numbers

from npc_memory.errors import InvalidArgumentError

SECONDS_PER_DAY = 86_400.0
"""Game seconds in one game day."""

MAX_GAME_TIME = 1e12
"""The clock's range: game time runs from 0 to 10¹² game seconds (about 31,700 game
years). Every stored time stays a finite number, so a world always saves and loads."""

MAX_TIME_SCALE = 1e6
"""Most game seconds per real second."""


class GameClock:
    """A monotonic game clock in game seconds.

    ``time_scale`` is how many game seconds pass per real second handed to
    :meth:`advance_real` (for instance by ``esper.process(dt)``), at most
    :data:`MAX_TIME_SCALE`. Game time stays within [0, :data:`MAX_GAME_TIME`]: a step
    that would pass the end is refused with :class:`InvalidArgumentError` and changes
    nothing. Times are numbers (``int`` or ``float``, not ``bool`` or text).
    """

    __slots__ = ("_now", "time_scale")

    def __init__(self, start: float = 0.0, time_scale: float = 1.0) -> None:
        self._now = check_number("start", start, 0.0, MAX_GAME_TIME)
        self.time_scale = check_number("time_scale", time_scale, 0.0, MAX_TIME_SCALE)

    @property
    def now(self) -> float:
        """Current game time, in game seconds since the world began."""
        return self._now

    @property
    def day(self) -> float:
        """Current game time in game days."""
        return self._now / SECONDS_PER_DAY

    def advance_real(self, dt: float) -> None:
        """Advance by ``dt`` real seconds, scaled by ``time_scale``."""
        step = check_number("dt", dt, 0.0, MAX_GAME_TIME) * self.time_scale
        self._now = self._within("dt", dt, self._now + step)

    def advance(self, game_seconds: float) -> None:
        """Advance by ``game_seconds`` of game time (no scaling)."""
        step = check_number("game_seconds", game_seconds, 0.0, MAX_GAME_TIME)
        self._now = self._within("game_seconds", game_seconds, self._now + step)

    def set(self, now: float) -> None:
        """Set the clock; game time never runs backwards."""
        self._now = check_number("now", now, self._now, MAX_GAME_TIME)

    def _within(self, name: str, value: float, then: float) -> float:
        if then > MAX_GAME_TIME:
            raise InvalidArgumentError(
                f"{name}={value!r} would move game time from {self._now:g} past {MAX_GAME_TIME:g} "
                "game seconds, the end of the clock's range"
            )
        return then


def check_number(name: str, value: float, low: float = 0.0, high: float = MAX_GAME_TIME) -> float:
    """``value`` as a float; it must be a real number (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise InvalidArgumentError(f"{name} must be a finite number from {low:g} to {high:g}, got {value!r}")
    return number
