"""LifecycleSystem: notices NPCs and players whose entities esper deleted behind the
plugin's back (``esper.delete_entity``, ``esper.clear_database``), keeps what they held
and frees their keys — within the tick after it happened."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.components import Identity
from npc_memory.services.population import PopulationService


class LifecycleSystem(esper.Processor):
    """Runs right after ClockSystem. While esper's world has not changed structurally
    its cached ``Identity`` list is the same object, and a tick costs O(1); after a
    change it compares counts, and only a shortfall costs a pass over the plugin's
    NPCs and players."""

    def __init__(self, population: PopulationService) -> None:
        self.population = population
        self._seen: list[tuple[int, Identity]] | None = None

    def process(self, *args: Any, **kwargs: Any) -> None:
        live = esper.get_component(Identity)
        if live is self._seen:
            return
        self._seen = live
        for handle in self.population.state.registry.vanished(live):
            self.population.vanish(handle)
