"""The store's writer thread: how it groups what waits in its queue."""

from __future__ import annotations

import threading
from pathlib import Path

from npc_memory.store import StoreMeta, TinyDBStore
from npc_memory.store.base import Store
from npc_memory.store.documents import Part
from npc_memory.store.records import Capture, NpcCapture, capture_document
from npc_memory.store.writer import StoreWriter, WriteBatch

from .test_store_contract import npc


def test_a_round_is_durable_before_the_next_rounds_documents_are_written(tmp_path: Path) -> None:
    """Batches that wait together are written as one group with one fsync, but a group
    ends with the batch that completes a round: the round's end never waits for the
    next round's documents (thousands, at a busy world's size)."""
    store = TinyDBStore(tmp_path / "w.db")
    busy, capturing, release = threading.Event(), threading.Event(), threading.Event()

    def capture(key: str, parts: int, players: object, base: NpcCapture | None) -> Capture:
        capturing.set()
        assert release.wait(10)
        return capture_document(npc(key))

    def hold(_: Store) -> None:
        assert busy.wait(10)

    writer = StoreWriter(store, capture=capture)
    try:
        writer.submit(WriteBatch(after=hold))  # the writer is busy while the next two queue up
        writer.submit(WriteBatch(meta=StoreMeta(world="w", snapshots=1), round=1))
        writer.submit(WriteBatch(keys=["npc-a"], parts={"npc-a": Part.ALL}, round=2, captures_round=True))
        busy.set()
        assert capturing.wait(10)  # the writer is on round 2's documents...
        assert writer.durable_round == 1  # ...with round 1 already on disk
        release.set()
        writer.drain()
        assert writer.take_failures() == []
    finally:
        release.set()
        busy.set()
        writer.close()
        store.close()
    reopened = TinyDBStore(tmp_path / "w.db")
    contents = reopened.load()
    reopened.close()
    assert contents.meta is not None and contents.meta.snapshots == 1
    assert list(contents.documents) == ["npc-a"]
