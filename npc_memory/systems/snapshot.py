"""SnapshotSystem: persists the NPCs and players that changed, under a per-tick budget
(see :mod:`npc_memory.services.persistence`)."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.persistence import PersistenceService


class SnapshotSystem(esper.Processor):
    """Runs after the other plugin systems and does one budgeted slice of snapshot work."""

    def __init__(self, persistence: PersistenceService) -> None:
        self.persistence = persistence

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.persistence.tick()
