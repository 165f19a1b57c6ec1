"""``plugin.storage``: the store behind one installed plugin — what is on disk, what a
crash would lose, what the store holds that is not in the live world, and an export
of the world as it is in memory. (``plugin.save()`` writes everything now.)"""

from __future__ import annotations

import os
from pathlib import Path

from npc_memory.errors import StoreError
from npc_memory.services import PersistenceService
from npc_memory.state import WorldState
from npc_memory.store import Store
from npc_memory.store.files import write_atomic
from npc_memory.store.tools import export_bytes


class StorageCalls:
    """The store of one installed plugin (``plugin.storage``)."""

    def __init__(self, state: WorldState, persistence: PersistenceService) -> None:
        self._state = state
        self._persistence = persistence

    @property
    def store(self) -> Store | None:
        """The store snapshots go to, or ``None``."""
        return self._persistence.store

    def unsaved_seconds(self) -> float:
        """Game seconds since the oldest change not yet durably in the store (0.0 when the
        store holds everything, or without a store): what a crash now would lose."""
        return self._persistence.oldest_unsaved(self._state.clock.now)

    def flush(self) -> None:
        """Wait until every snapshot batch already handed to the store is on disk."""
        self._persistence.drain()

    def stored_npcs(self) -> list[str]:
        """Keys of NPCs saved in the store (or removed) and not in the live world."""
        return sorted(k for k, d in self._state.stored.items() if d.__struct_config__.tag == "npc")

    def stored_players(self) -> list[str]:
        """Keys of players saved in the store (or removed) and not in the live world."""
        return sorted(k for k, d in self._state.stored.items() if d.__struct_config__.tag == "player")

    def export(self, path: str | os.PathLike[str]) -> int:
        """Write the whole world as it is in memory to ``path`` in the export format
        (``npc-memory import --db STORE PATH`` loads it); returns the number of
        documents. For a world whose store fails or was lost: nothing is read from
        the store."""
        meta, documents = self._persistence.export()
        target = Path(path)
        try:
            write_atomic(target, export_bytes(meta, documents), keep_previous=False)
        except OSError as exc:
            raise StoreError(f"cannot write the export to {target}: {exc.strerror or exc}") from exc
        return len(documents)
