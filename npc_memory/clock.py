"""Game time, owned by the plugin: everything time-based reads it."""

from __future__ import annotations

import math

from npc_memory.errors import InvalidArgumentError

SECONDS_PER_DAY = 86_400.0
"""Game seconds in one game day."""


class GameClock:
    """A monotonic game clock in game seconds.

    ``time_scale`` is how many game seconds pass per real second handed to
    :meth:`advance_real` (for instance by ``esper.process(dt)``).
    """

    __slots__ = ("_now", "time_scale")

    def __init__(self, start: float = 0.0, time_scale: float = 1.0) -> None:
        _check_finite("start", start, minimum=0.0)
        _check_finite("time_scale", time_scale, minimum=0.0)
        self._now = float(start)
        self.time_scale = float(time_scale)

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
        _check_finite("dt", dt, minimum=0.0)
        self._now += dt * self.time_scale

    def advance(self, game_seconds: float) -> None:
        """Advance by ``game_seconds`` of game time (no scaling)."""
        _check_finite("game_seconds", game_seconds, minimum=0.0)
        self._now += game_seconds

    def set(self, now: float) -> None:
        """Set the clock; game time never runs backwards."""
        _check_finite("now", now, minimum=self._now)
        self._now = float(now)


def _check_finite(name: str, value: float, *, minimum: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise InvalidArgumentError(f"{name} must be a finite number >= {minimum}, got {value!r}")
