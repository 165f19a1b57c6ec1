"""ClockSystem: advances the plugin's game clock from what the host passes to
``esper.process``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esper

from npc_memory.clock import GameClock
from npc_memory.errors import InvalidArgumentError
from npc_memory.state import TickBudget

DtSource = Callable[[tuple[Any, ...], dict[str, Any]], float | None]
"""Reads the real seconds elapsed this tick from ``esper.process``'s (args, kwargs);
``None`` when the host passed none. The clock checks what it returns: a number (not a
bool or text) that keeps game time within its range."""

DEFAULT_FIXED_STEP = 1.0 / 60.0
"""Real seconds a tick counts when ``esper.process()`` gets no dt: one frame at 60 fps."""


def first_positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float | None:
    """The default dt source: ``esper.process(dt)``."""
    return args[0] if args else None  # checked by the clock, never converted


def keyword(name: str) -> DtSource:
    """A dt source reading ``esper.process(..., name=dt)``."""

    def read(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float | None:
        return kwargs.get(name)  # checked by the clock, never converted

    return read


class ClockSystem(esper.Processor):
    """Runs first each tick, advances game time by dt × time scale and opens the
    plugin's tick budget. A tick without a dt counts ``fixed_step`` real seconds; with
    ``fixed_step=None`` it is an error."""

    def __init__(
        self,
        clock: GameClock,
        dt_source: DtSource = first_positional,
        fixed_step: float | None = DEFAULT_FIXED_STEP,
        tick: TickBudget | None = None,
    ) -> None:
        self.clock = clock
        self.tick = tick
        self.dt_source = dt_source
        self.fixed_step = fixed_step

    def process(self, *args: Any, **kwargs: Any) -> None:
        tick = self.tick
        if tick is not None:  # first: the clock's own work is charged, and the writer thread stops sooner
            tick.open()
        try:
            dt = self.dt_source(args, kwargs)
            if dt is None:
                if self.fixed_step is None:
                    raise InvalidArgumentError(
                        "esper.process() was called without dt: pass the real seconds of the frame, "
                        "esper.process(dt), or install the plugin with fixed_step=<seconds per tick>"
                    )
                dt = self.fixed_step
            self.clock.advance_real(dt)
        except BaseException:
            if tick is not None:  # no tick runs: the writer thread must not wait for one
                tick.abort()
            raise
