"""ClockSystem: advances the plugin's game clock from what the host passes to
``esper.process``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esper

from npc_memory.clock import GameClock

DtSource = Callable[[tuple[Any, ...], dict[str, Any]], float]
"""Reads the real seconds elapsed this tick from ``esper.process``'s (args, kwargs)."""


def first_positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
    """The default dt source: ``esper.process(dt)``; no argument means no time passes."""
    return float(args[0]) if args else 0.0


def keyword(name: str) -> DtSource:
    """A dt source reading ``esper.process(..., name=dt)``."""

    def read(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
        return float(kwargs.get(name, 0.0))

    return read


class ClockSystem(esper.Processor):
    """Runs first each tick and advances game time by dt × time scale."""

    def __init__(self, clock: GameClock, dt_source: DtSource = first_positional) -> None:
        self.clock = clock
        self.dt_source = dt_source

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.clock.advance_real(self.dt_source(args, kwargs))
