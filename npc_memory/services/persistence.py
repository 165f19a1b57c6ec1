"""Persistence: documents of NPCs and players, snapshot rounds under a per-tick budget,
``save()``, deleting forgotten keys, and the audit trail.

Every ``snapshot_interval`` game seconds a round starts with the keys marked dirty
since the last one. Each tick encodes at most ``snapshot_documents_per_tick``
documents (stopping early past ``snapshot_tick_ms``) and hands them to the store's
writer thread; the round ends with the metadata (clock, random state, pending
extractions). Disk work never happens on the tick, and a tick whose writer is still
busy skips encoding.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable

from npc_memory.components import (
    FactionMember,
    Handle,
    Identity,
    Location,
    NpcHandle,
    PlayerHandle,
)
from npc_memory.errors import StoreError
from npc_memory.events import SnapshotFailed
from npc_memory.extraction.model import ExtractionJob
from npc_memory.state import WorldState
from npc_memory.store import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    EncodedDocument,
    NpcDocument,
    PlayerDocument,
    Store,
    StoreMeta,
    encode_document,
)
from npc_memory.store.documents import pack_rng_state
from npc_memory.store.writer import StoreWriter, WriteBatch

log = logging.getLogger("npc_memory.snapshot")

MAX_BATCHES_IN_FLIGHT = 4
"""Encoding pauses while the writer has this many batches queued (slow disk)."""


def document_of(handle: Handle, now: float) -> Document:
    """The document that persists ``handle``'s components (``saved_at`` = ``now``)."""
    if isinstance(handle, NpcHandle):
        return NpcDocument(
            v=SCHEMA_VERSION,
            key=handle.identity.key,
            name=handle.identity.name,
            faction=handle.faction.faction,
            archetype=handle.traits.archetype,
            room=handle.location.room,
            traits=handle.traits,
            bank=handle.bank,
            relationships=handle.relationships,
            working=handle.working,
            knowledge=handle.knowledge,
            saved_at=now,
        )
    return PlayerDocument(
        v=SCHEMA_VERSION,
        key=handle.identity.key,
        name=handle.identity.name,
        faction=handle.faction.faction,
        room=handle.location.room,
        profile=handle.profile,
        saved_at=now,
    )


def handle_of(document: Document) -> Handle:
    """A stored (entity-less, read-only) handle over ``document``'s components."""
    identity = Identity(key=document.key, name=document.name)
    if isinstance(document, NpcDocument):
        return NpcHandle(
            entity=None,
            identity=identity,
            faction=FactionMember(faction=document.faction),
            location=Location(document.room),
            traits=document.traits,
            bank=document.bank,
            relationships=document.relationships,
            working=document.working,
            knowledge=document.knowledge,
        )
    return PlayerHandle(
        entity=None,
        identity=identity,
        faction=FactionMember(faction=document.faction),
        location=Location(document.room),
        profile=document.profile,
    )


class PersistenceService:
    """Snapshots of one plugin's world to its store (or nothing, without a store)."""

    def __init__(
        self,
        state: WorldState,
        store: Store | None,
        pending: Callable[[], list[ExtractionJob]],
        snapshots: int = 0,
    ) -> None:
        self.state = state
        self.store = store
        self.pending = pending
        self.snapshots = snapshots
        """Snapshot rounds completed (or handed to the writer) over the store's life."""
        self.writer = None if store is None else StoreWriter(store, name=f"npc-memory-{state.world}")
        state.persistent = store is not None
        self._round: list[str] = []
        self._round_position = 0
        self._round_active = False
        self._last_round_start = state.clock.now

    @property
    def round_active(self) -> bool:
        """Whether a snapshot round is being written."""
        return self._round_active

    # ------------------------------------------------------------------ documents

    def document(self, key: str) -> Document | None:
        """The document of ``key`` now: live components, or the stored document."""
        handle = self.state.registry.live(key)
        if handle is None:
            return self.state.stored.get(key)
        return document_of(handle, self.state.clock.now)

    def keep(self, handle: Handle) -> None:
        """``handle`` leaves the live world: keep its document as stored, to restore it
        if its key is added again (and persist it with the next snapshot)."""
        key = handle.identity.key
        self.state.stored[key] = document_of(handle, self.state.clock.now)
        self.state.mark(key)

    def forget(self, key: str, actor: str = "plugin") -> None:
        """Delete ``key``'s document, live or stored, from memory and the store."""
        self.state.stored.pop(key, None)
        self.state.dirty.discard(key)
        if self.writer is not None:
            self.state.deleted.add(key)
            self.audit("forget", key, actor)

    def audit(self, action: str, target: str, actor: str = "plugin") -> None:
        """Append an entry to the store's audit log (with the next batch)."""
        if self.writer is None:
            return
        entry = AuditEntry(
            action=action,
            target=target,
            game_time=self.state.clock.now,
            wall_time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        self.writer.submit(WriteBatch(audit=[entry]))

    def meta(self, snapshots: int) -> StoreMeta:
        """The store-wide metadata now."""
        state = self.state
        rng_state, rng_gauss = pack_rng_state(state.rng)
        return StoreMeta(
            world=state.world,
            pack=state.pack.pack.name,
            seed=state.seed,
            clock=state.clock.now,
            rng_state=rng_state,
            rng_gauss=rng_gauss,
            snapshots=snapshots,
            pending_extractions=self.pending(),
        )

    # ------------------------------------------------------------------ snapshot rounds

    def tick(self) -> None:
        """One tick's share of snapshot work: O(budget), never waits on the disk."""
        if self.writer is None:
            return
        self._report_failures()
        budgets = self.state.pack.budgets
        due = self.state.clock.now - self._last_round_start >= budgets.snapshot_interval
        if due and not self._round_active:
            self._round = sorted(self.state.dirty)
            self._round_position = 0
            self.state.dirty.clear()
            self._round_active = True
            self._last_round_start = self.state.clock.now
        if self._round_active and self.writer.in_flight < MAX_BATCHES_IN_FLIGHT:
            self._encode_slice()

    def save(self) -> None:
        """Write everything dirty now and wait until it is on disk; raises
        :class:`StoreError` if any write failed (the changes stay queued)."""
        if self.writer is None:
            return
        self._report_failures()
        keys = sorted(set(self._round[self._round_position :]) | self.state.dirty)
        self.state.dirty.clear()
        self._round, self._round_position, self._round_active = [], 0, False
        self._last_round_start = self.state.clock.now
        self._submit([d for d in map(self._encode, keys) if d is not None], complete=True)
        self.writer.drain()
        failures = self._report_failures()
        if failures:
            raise StoreError(f"saving to {self.store!r} failed: {failures[0]}") from failures[0]

    def drain(self) -> None:
        """Wait until the writer has written every batch handed to it."""
        if self.writer is not None:
            self.writer.drain()

    @property
    def in_flight(self) -> int:
        """Batches handed to the writer and not yet written."""
        return 0 if self.writer is None else self.writer.in_flight

    def close(self) -> None:
        """Stop the writer (after what it holds is written) and close the store."""
        if self.writer is not None:
            self.writer.close()
        if self.store is not None:
            self.store.close()

    def _encode_slice(self) -> None:
        budgets = self.state.pack.budgets
        deadline = time.perf_counter() + budgets.snapshot_tick_ms / 1000.0
        encoded: list[EncodedDocument] = []
        limit = budgets.snapshot_documents_per_tick
        while self._round_position < len(self._round) and len(encoded) < limit:
            if encoded and time.perf_counter() > deadline:
                break
            document = self._encode(self._round[self._round_position])
            self._round_position += 1
            if document is not None:
                encoded.append(document)
        complete = self._round_position >= len(self._round)
        if complete:
            self._round_active = False
        self._submit(encoded, complete=complete)

    def _encode(self, key: str) -> EncodedDocument | None:
        document = self.document(key)
        return None if document is None else encode_document(document)

    def _submit(self, encoded: list[EncodedDocument], *, complete: bool) -> None:
        assert self.writer is not None
        deletions = sorted(self.state.deleted)
        self.state.deleted.clear()
        meta = None
        if complete:
            self.snapshots += 1
            meta = self.meta(self.snapshots)
        if encoded or deletions or meta is not None:
            self.writer.submit(WriteBatch(documents=encoded, deletions=deletions, meta=meta))

    def _report_failures(self) -> list[Exception]:
        assert self.writer is not None
        errors = []
        for batch, error in self.writer.take_failures():
            log.error("snapshot write to %r failed (will retry): %s", self.store, error)
            self.state.dirty.update(d.key for d in batch.documents)
            self.state.deleted.update(batch.deletions)
            errors.append(error)
            self.state.publish(SnapshotFailed(game_time=self.state.clock.now, error=str(error)))
        return errors
