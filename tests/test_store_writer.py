"""The store's writer thread: how it groups what waits in its queue."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from npc_memory.store import StoreMeta, TinyDBStore
from npc_memory.store import writer as writer_module
from npc_memory.store.base import Store
from npc_memory.store.documents import Part
from npc_memory.store.records import Capture, NpcCapture, Record, capture_document
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


def test_a_rounds_progress_counts_its_own_documents(tmp_path: Path) -> None:
    """The tick judges a round's pace by the documents of that round the writer has
    taken, not by what earlier batches held."""
    second, release = threading.Event(), threading.Event()

    def capture(key: str, parts: int, players: object, base: NpcCapture | None) -> Capture:
        if key == "npc-b":
            second.set()
            assert release.wait(10)
        return capture_document(npc(key))

    writer = StoreWriter(TinyDBStore(tmp_path / "w.db"), capture=capture)
    try:
        writer.submit(WriteBatch(keys=["npc-x", "npc-y"], round=4))  # documents, not a round's rest
        writer.submit(WriteBatch(keys=["npc-a", "npc-b", "npc-c"], round=5, captures_round=True))
        assert second.wait(10)
        assert writer.round_progress == (5, 2)  # npc-a taken, npc-b being captured
        release.set()
        writer.drain()
        assert writer.round_progress == (5, 3)
    finally:
        release.set()
        writer.close()


class FakeTime:
    """A clock that stands still but for the sleeps, each taking ``HANDOFF`` plus
    ``extra`` (the wait for the GIL that a busy game thread makes)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.extra = 0.0
        self.sleeps = 0
        self.shortest = math.inf

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.shortest = min(self.shortest, seconds)
        self.now += seconds + self.extra


def test_the_writer_yields_more_often_once_it_finds_the_game_thread_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = StoreWriter(TinyDBStore(tmp_path / "w.db"))
    writer.close()  # its thread is done: _pause runs here, on a fake clock
    clock = FakeTime()
    monkeypatch.setattr(writer_module, "time", clock)

    def yields_after(seconds: float) -> bool:
        """Whether a pause ``seconds`` after the last yield gives the GIL away."""
        clock.now = writer._yielded + seconds
        before = clock.sleeps
        writer._pause()
        return clock.sleeps > before

    writer._hand_back()  # a yield no one took the GIL in: the shortest so far
    assert not yields_after(0.0005) and yields_after(0.0011)  # every YIELD_EVERY (1 ms)
    clock.extra = 0.002  # the game thread took the GIL for 2 ms: it is busy
    writer._hand_back()
    assert yields_after(0.00025)  # every CONTENDED_YIELD_EVERY (0.2 ms) now
    clock.extra = 0.0
    assert yields_after(0.00025)  # (that yield came back at once)
    assert not yields_after(0.00025) and yields_after(0.0011)  # every millisecond again
    writer.late = True  # a round will not end in time: the interpreter's switch interval shares the GIL
    assert not yields_after(0.0051) and not yields_after(0.05)  # (the interval would count from the last yield)
    writer.late = False
    assert yields_after(0.0011)
    assert clock.shortest > 0.0  # each yield sleeps: sleep(0) takes the GIL straight back


def test_a_timer_that_sleeps_long_is_not_taken_for_a_busy_game_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the operating system cannot sleep 0.1 ms (its shortest sleep is 1.5 ms),
    only a yield that takes ``CONTENDED`` longer than the shortest counts as contended."""
    writer = StoreWriter(TinyDBStore(tmp_path / "w.db"))
    writer.close()
    writer._shortest_yield = math.inf  # forget the real yields its thread made
    clock = FakeTime()
    clock.extra = 0.0015
    monkeypatch.setattr(writer_module, "time", clock)
    for _ in range(3):
        writer._hand_back()
        assert not writer._contended
    clock.extra = 0.0015 + 0.0012
    writer._hand_back()
    assert writer._contended


class RecordingStore(TinyDBStore):
    """A real store that notes, for each journal append, the keys it carried and how
    far the writer said the round was on disk when the append began."""

    def __init__(self, path: Path, writer: list[StoreWriter]) -> None:
        super().__init__(path)
        self.writer = writer
        self.appends: list[tuple[tuple[int, int], list[str]]] = []

    def append(self, records: Iterable[Record]) -> int:
        progress = self.writer[0].round_durable
        keys: list[str] = []

        def noted() -> Iterator[Record]:
            for record in records:
                keys.append(getattr(record, "key", ""))
                yield record

        written = super().append(noted())
        self.appends.append((progress, keys))
        return written


def test_a_round_is_written_oldest_change_first_and_made_durable_a_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round's keys are taken in the order of its parts (the order of their first
    change), each ``ROUND_GROUP`` of them appended and fsynced on its own, and
    ``round_durable`` counts the entries of the parts whose documents are on disk,
    entries the round no longer holds (a key forgotten meanwhile) included."""
    monkeypatch.setattr(writer_module, "ROUND_GROUP", 2)
    holder: list[StoreWriter] = []
    store = RecordingStore(tmp_path / "w.db", holder)
    writer = StoreWriter(store, capture=lambda key, parts, players, base: capture_document(npc(key)))
    holder.append(writer)
    parts = dict.fromkeys(["npc-c", "npc-a", "npc-gone", "npc-b", "npc-e", "npc-d"], Part.ALL)
    try:
        keys = {"npc-a", "npc-b", "npc-c", "npc-d", "npc-e"}
        writer.submit(WriteBatch(keys=keys, parts=parts, round=7, captures_round=True))
        writer.drain()
        assert writer.take_failures() == []
        assert store.appends == [
            ((0, 0), ["npc-c", "npc-a"]),
            ((7, 3), ["npc-b", "npc-e"]),  # npc-c, npc-a and npc-gone are done
            ((7, 5), ["npc-d"]),
        ]
        assert writer.round_durable == (7, 6)
    finally:
        writer.close()
        store.close()


def test_a_round_with_keys_its_parts_do_not_order_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys the parts do not order (made dirty again after a failed write) come
    first, and the round is one append: how far it is on disk is then not told by
    position, so ``round_durable`` stays where it was."""
    monkeypatch.setattr(writer_module, "ROUND_GROUP", 2)
    holder: list[StoreWriter] = []
    store = RecordingStore(tmp_path / "w.db", holder)
    writer = StoreWriter(store, capture=lambda key, parts, players, base: capture_document(npc(key)))
    holder.append(writer)
    try:
        keys = ["npc-a", "npc-b", "npc-c", "npc-z"]
        parts = dict.fromkeys(["npc-c", "npc-b", "npc-a"], Part.ALL)
        writer.submit(WriteBatch(keys=keys, parts=parts, round=3, captures_round=True))
        writer.drain()
        assert writer.take_failures() == []
        assert store.appends == [((0, 0), ["npc-z", "npc-c", "npc-b", "npc-a"])]
        assert writer.round_durable == (0, 0)
    finally:
        writer.close()
        store.close()
