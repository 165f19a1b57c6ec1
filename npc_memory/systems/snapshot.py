"""SnapshotSystem: persists the NPCs and players that changed, under a per-tick budget.

Every ``snapshot_interval`` game seconds a snapshot round starts with the keys marked
dirty since the last one. Each tick encodes at most ``snapshot_documents_per_tick``
documents (and stops early past ``snapshot_tick_ms``) and hands them to the store's
writer thread; the round ends with the metadata (clock, random state). Disk work never
happens on the tick, and a tick whose writer is still busy skips encoding.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import esper

from npc_memory.clock import GameClock
from npc_memory.content.schema import Budgets
from npc_memory.errors import StoreError
from npc_memory.store.documents import Document, EncodedDocument, StoreMeta, encode_document
from npc_memory.store.writer import StoreWriter, WriteBatch

log = logging.getLogger("npc_memory.snapshot")

MAX_BATCHES_IN_FLIGHT = 4
"""Encoding pauses while the writer has this many batches queued (slow disk)."""


class Snapshotter:
    """Tracks dirty keys and turns them into write batches, round by round."""

    def __init__(
        self,
        writer: StoreWriter,
        clock: GameClock,
        budgets: Budgets,
        document_for: Callable[[str], Document | None],
        meta_for: Callable[[int], StoreMeta],
        on_failure: Callable[[Exception], None],
        snapshots: int = 0,
    ) -> None:
        self.writer = writer
        self.clock = clock
        self.budgets = budgets
        self.document_for = document_for
        self.meta_for = meta_for
        self.on_failure = on_failure
        self.snapshots = snapshots
        """Snapshot rounds completed (or handed to the writer) over the store's life."""
        self.dirty: set[str] = set()
        self._deleted: set[str] = set()
        self._round: list[str] = []
        self._round_position = 0
        self._round_active = False
        self._last_round_start = clock.now

    def mark(self, key: str) -> None:
        """Persist ``key`` in the next round."""
        self.dirty.add(key)

    def forget(self, key: str) -> None:
        """Delete ``key`` from the store with the next batch."""
        self.dirty.discard(key)
        self._deleted.add(key)

    @property
    def round_active(self) -> bool:
        """Whether a snapshot round is being written."""
        return self._round_active

    def tick(self) -> None:
        """One tick's share of snapshot work: O(budget), never waits on the disk."""
        self._report_failures()
        due = self.clock.now - self._last_round_start >= self.budgets.snapshot_interval
        if due and not self._round_active:
            self._round = sorted(self.dirty)
            self._round_position = 0
            self.dirty.clear()
            self._round_active = True
            self._last_round_start = self.clock.now
        if self._round_active and self.writer.in_flight < MAX_BATCHES_IN_FLIGHT:
            self._encode_slice()

    def save(self) -> None:
        """Write everything dirty now and wait until it is on disk; raises
        :class:`StoreError` if any write failed."""
        self._report_failures()
        keys = sorted(set(self._round[self._round_position :]) | self.dirty)
        self.dirty.clear()
        self._round, self._round_position, self._round_active = [], 0, False
        self._last_round_start = self.clock.now
        self._submit([d for d in map(self._encode, keys) if d is not None], complete=True)
        self.writer.drain()
        failures = self._report_failures()
        if failures:
            raise StoreError(f"saving to {self.writer.store!r} failed: {failures[0]}") from failures[0]

    def _encode_slice(self) -> None:
        deadline = time.perf_counter() + self.budgets.snapshot_tick_ms / 1000.0
        encoded: list[EncodedDocument] = []
        limit = self.budgets.snapshot_documents_per_tick
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
        document = self.document_for(key)
        return None if document is None else encode_document(document)

    def _submit(self, encoded: list[EncodedDocument], *, complete: bool) -> None:
        deletions = sorted(self._deleted)
        self._deleted.clear()
        meta = None
        if complete:
            self.snapshots += 1
            meta = self.meta_for(self.snapshots)
        if encoded or deletions or meta is not None:
            self.writer.submit(WriteBatch(documents=encoded, deletions=deletions, meta=meta))

    def _report_failures(self) -> list[Exception]:
        errors = []
        for batch, error in self.writer.take_failures():
            log.error("snapshot write to %r failed (will retry): %s", self.writer.store, error)
            self.dirty.update(d.key for d in batch.documents)
            self._deleted.update(batch.deletions)
            errors.append(error)
            self.on_failure(error)
        return errors


class SnapshotSystem(esper.Processor):
    """Runs last each tick and does one budgeted slice of snapshot work."""

    def __init__(self, snapshotter: Snapshotter) -> None:
        self.snapshotter = snapshotter

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.snapshotter.tick()
