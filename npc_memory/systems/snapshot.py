"""SnapshotSystem: persists the NPCs and players that changed, under a per-tick budget
(see :mod:`npc_memory.services.persistence`), and has the plugin's health judged
(see :mod:`npc_memory.services.health`)."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.health import HealthService
from npc_memory.services.persistence import PersistenceService
from npc_memory.services.privacy import PrivacyService


class SnapshotSystem(esper.Processor):
    """Runs after the other plugin systems and does one budgeted slice of snapshot
    work (after this server's part of a forgetting other game servers of a shared
    store began, if ``privacy`` has one), then lets ``health`` (if given) judge the
    plugin's health when due."""

    def __init__(
        self,
        persistence: PersistenceService,
        health: HealthService | None = None,
        privacy: PrivacyService | None = None,
    ) -> None:
        self.persistence = persistence
        self.health = health
        self.privacy = privacy

    def process(self, *args: Any, **kwargs: Any) -> None:
        if self.privacy is not None:  # forgetting other game servers began (O(1) while none)
            self.privacy.tick()
        self.persistence.tick()
        if self.health is not None:
            self.health.tick()
