"""SnapshotSystem: persists the NPCs and players that changed, under a per-tick budget
(see :mod:`npc_memory.services.persistence`), and has the plugin's health judged
(see :mod:`npc_memory.services.health`)."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.health import HealthService
from npc_memory.services.persistence import PersistenceService


class SnapshotSystem(esper.Processor):
    """Runs after the other plugin systems and does one budgeted slice of snapshot
    work, then lets ``health`` (if given) judge the plugin's health when due."""

    def __init__(self, persistence: PersistenceService, health: HealthService | None = None) -> None:
        self.persistence = persistence
        self.health = health

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.persistence.tick()
        if self.health is not None:
            self.health.tick()
