"""LifecycleSystem: notices NPCs and players whose entities esper deleted behind the
plugin's back (``esper.delete_entity``, ``esper.clear_database``), keeps what they held
and frees their keys."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.population import PopulationService

CHECKS_PER_TICK = 32
"""Entities checked per tick (about 1 µs each): with up to this many NPCs and players a
deletion is noticed within the tick after it; with more, within ``ceil(n / 32)`` ticks
(32 ticks, half a second at 60 fps, for 1,000; 313 for 10,000)."""


class LifecycleSystem(esper.Processor):
    """Runs right after ClockSystem and checks a round-robin slice of the plugin's
    entities (two dictionary look-ups each): O(slice) whatever the host does to its
    world. A key reused by ``add_npc``/``add_player``, and an entity id esper hands out
    again, are checked at once by the facade."""

    def __init__(self, population: PopulationService, per_tick: int = CHECKS_PER_TICK) -> None:
        self.population = population
        self.per_tick = per_tick
        self._next = 0

    def process(self, *args: Any, **kwargs: Any) -> None:
        gone, self._next = self.population.state.registry.vanished(self._next, self.per_tick)
        for handle in gone:
            self.population.vanish(handle)
