"""The plugin with a store: what is saved comes back exactly, snapshots are budgeted
and incremental (patches), the tick never waits on the disk, failures are retried,
and the oldest unsaved change is known."""

from __future__ import annotations

import contextlib
import gc
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.components import DIMENSIONS, TriggerContext
from npc_memory.content import load_pack
from npc_memory.errors import StoreError
from npc_memory.events import Event, Hostile, SnapshotFailed
from npc_memory.services import persistence
from npc_memory.store import AuditEntry, EncodedDocument, JournalStore, StoreContents, StoreMeta, TinyDBStore
from npc_memory.store import writer as writer_module
from npc_memory.store.records import MetaRecord, NpcPatch, Put, Record
from npc_memory.store.tinydb_store import file_name
from npc_memory.store.writer import StoreWriter
from npc_memory.systems.snapshot import SnapshotSystem

from .conftest import reset_esper, tick

ARCHETYPES = ["blacksmith", "innkeeper", "guard_captain", None]
FACTIONS = ["adventurers", "thieves", None]


def snapshot_pack(interval: float = 10.0, per_tick: int = 2) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=interval, snapshot_documents_per_tick=per_tick, snapshot_tick_ms=1000.0)
    return npc_memory.content.validate_pack(data)


def components(plugin: npc_memory.MemoryPlugin) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key in plugin.npcs():
        h = plugin.npc(key)
        state[key] = (h.identity, h.faction, h.location, h.traits, h.bank, h.relationships, h.working, h.knowledge)
    for key in plugin.players():
        p = plugin.player(key)
        state[key] = (p.identity, p.faction, p.location, p.profile)
    return state


spawn_npc = st.tuples(st.sampled_from(ARCHETYPES), st.sampled_from(["forge", "market", None]))
spawn_player = st.tuples(st.sampled_from(FACTIONS), st.sampled_from(["consent", "anon", "plain"]))
operation = st.one_of(
    st.tuples(st.just("remember"), st.integers(0, 9), st.integers(0, 9), st.sampled_from(["episodic", "semantic", "procedural"]),
              st.lists(st.sampled_from(["trade", "heroic", "theft", "gift", "secret"]), max_size=3),
              st.floats(0, 1), st.booleans(), st.booleans()),
    st.tuples(st.just("adjust"), st.integers(0, 9), st.integers(0, 9),
              st.dictionaries(st.sampled_from(DIMENSIONS), st.floats(-0.5, 0.5), min_size=1)),
    st.tuples(st.just("meet"), st.integers(0, 9), st.integers(0, 9)),
    st.tuples(st.just("wait"), st.floats(0, 10 * 86_400)),
    st.tuples(st.just("world"), st.integers(0, 9), st.floats(0, 1)),
    st.tuples(st.just("observe"), st.sampled_from(["forge", "market"]), st.integers(0, 9), st.floats(0, 1)),
    st.tuples(st.just("talk"), st.integers(0, 9), st.integers(0, 9)),
)


def build(plugin: npc_memory.MemoryPlugin, npcs: Sequence[tuple[str | None, str | None]],
          players: Sequence[tuple[str | None, str]]) -> None:
    for i, (archetype, room) in enumerate(npcs):
        plugin.add_npc(key=f"npc{i}", archetype=archetype, room=room)
    for i, (faction, privacy) in enumerate(players):
        plugin.add_player(key=f"pc{i}", faction=faction, consent=privacy == "consent", anonymous=privacy == "anon")


def apply(plugin: npc_memory.MemoryPlugin, ops: Iterable[tuple[Any, ...]], n_npcs: int, n_players: int) -> None:
    for op in ops:
        kind = op[0]
        if kind == "wait":
            plugin.clock.advance(op[1])
            continue
        if kind == "observe":
            plugin.observe(room=op[1], subject=f"pc{op[2] % n_players}", content=f"seen in {op[1]}",
                           tags=["theft"], importance=op[3])
            continue
        npc = f"npc{op[1] % n_npcs}"
        if kind == "world":
            plugin.remember(npc, None, "the harvest failed", importance=op[2], tags=["world"])
            continue
        player = f"pc{op[2] % n_players}"
        if kind == "remember":
            _, _, _, mem_kind, tags, importance, locked, affect = op
            with contextlib.suppress(npc_memory.MemoryCapacityError):  # a kind full of locked memories
                plugin.remember(npc, player, f"{mem_kind} about {player}", kind=mem_kind, tags=tags, importance=importance,
                                locked=locked, affect_relationship=affect and bool(tags),
                                trigger=TriggerContext(time_of_day="night") if mem_kind == "procedural" else None)
        elif kind == "adjust":
            plugin.adjust_relationship(npc, player, **op[3])
        elif kind == "talk":
            plugin.say(npc, player, player, "Let me help you carry that, here is a gift for you.")
            plugin.end_conversation(npc, player)
        else:
            plugin.record_interaction(npc, player)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(spawn_npc, min_size=1, max_size=4),
    st.lists(spawn_player, min_size=1, max_size=3),
    st.lists(operation, max_size=40),
    st.integers(0, 2**32),
)
def test_what_was_saved_comes_back_exactly(
    npcs: list[tuple[str | None, str | None]], players: list[tuple[str | None, str]], ops: list[tuple[Any, ...]], seed: int
) -> None:
    reset_esper()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "world.db"
        plugin = npc_memory.install(world="w", store=db, seed=seed)
        build(plugin, npcs, players)
        apply(plugin, ops, len(npcs), len(players))
        plugin.rng.random()  # the random stream has moved on: its state must come back too
        before, clock, rng = components(plugin), plugin.clock.now, plugin.rng.getstate()
        npc_memory.uninstall("w")

        restored = npc_memory.install(world="w", store=db, seed=seed + 1)
        assert sorted(restored.storage.stored_npcs() + restored.storage.stored_players()) == sorted(before)
        build(restored, npcs, players)
        assert components(restored) == before
        assert (restored.clock.now, restored.rng.getstate()) == (clock, rng)
        npc_memory.uninstall("w")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(spawn_npc, min_size=1, max_size=3),
    st.lists(spawn_player, min_size=1, max_size=2),
    st.lists(st.lists(operation, max_size=15), min_size=2, max_size=4),
    st.integers(0, 2**32),
    st.booleans(),
)
def test_sessions_that_patch_what_earlier_ones_saved_come_back_exactly(
    npcs: list[tuple[str | None, str | None]], players: list[tuple[str | None, str]],
    sessions: list[list[tuple[Any, ...]]], seed: int, on_writer: bool
) -> None:
    """Each session after the first writes patches against the documents it loaded;
    some sessions end with a checkpoint (a small journal is folded on close), some
    leave their journal (checkpoint_bytes is large and close is told not to fold).
    Captures are made by the writer thread or by the tick."""
    reset_esper()
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(persistence, "writer_may_capture", lambda: on_writer):
        db = Path(tmp) / "world.db"
        before: dict[str, Any] = {}
        for number, ops in enumerate(sessions):
            store = TinyDBStore(db, checkpoint_on_close=number % 2 == 0)
            plugin = npc_memory.install(world="w", store=store, seed=seed)
            build(plugin, npcs, players)
            if before:
                assert components(plugin) == before
            apply(plugin, ops, len(npcs), len(players))
            tick("w", 61)  # a snapshot round (patches), then more changes saved by uninstall
            apply(plugin, ops[:3], len(npcs), len(players))
            before = components(plugin)
            npc_memory.uninstall("w")


def test_after_a_restart_the_first_writes_are_patches(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice bought nails")
    npc_memory.uninstall("w")
    writes: list[list[str]] = []
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), writes)
    plugin = npc_memory.install(world="w", store=store)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice came back for more")
    plugin.save()
    assert writes == [["hilda"]] and store.kinds == ["patch"]
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice came back for more", "Alice bought nails"]
    npc_memory.uninstall("w")


@pytest.mark.parametrize("on_writer", [True, False])
def test_the_oldest_unsaved_change_is_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_writer: bool) -> None:
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: on_writer)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=10.0, per_tick=10), store=tmp_path / "w.db")
    snapshot = next(p for p in plugin.processors if isinstance(p, SnapshotSystem))
    service = snapshot.persistence

    def oldest() -> float:
        return service.oldest_unsaved(plugin.clock.now)

    plugin.add_npc(key="hilda")
    plugin.save()
    assert oldest() == 0.0
    tick("w", 3)
    plugin.remember("hilda", None, "rain")  # at game second 3
    tick("w", 1)
    assert oldest() == 1.0  # dated to the tick before the one that saw it
    tick("w", 5)
    assert oldest() == 6.0  # a round is due at 10
    tick("w", 1)
    plugin.storage.flush()
    tick("w", 1)  # the round's documents are on disk
    if on_writer:  # the writer captured them: the metadata follows, with the jobs pending after the captures,
        tick("w", 1)  # a tick later (with room set aside for it in that tick's budget)
        plugin.storage.flush()
        tick("w", 1)
    assert oldest() == 0.0
    plugin.remember("hilda", None, "wind")
    tick("w", 2)
    assert oldest() == 2.0
    plugin.save()
    assert oldest() == 0.0
    npc_memory.uninstall("w")


def test_arguments_win_and_omitted_ones_come_from_the_store(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="spy", name="Sly", archetype="innkeeper", faction="thieves", room="tavern")
    plugin.add_player(key="alice", faction="adventurers", consent=True, room="market")
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="spy", room="cellar")
    plugin.add_player(key="alice")
    spy, alice = plugin.npc("spy"), plugin.player("alice")
    assert (spy.identity.name, spy.faction.faction, spy.traits.archetype, spy.location.room) == ("Sly", "thieves", "innkeeper", "cellar")
    assert (alice.faction.faction, alice.profile.consent, alice.location.room) == ("adventurers", True, "market")
    npc_memory.uninstall("w")


def test_a_stored_key_keeps_its_role(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    with pytest.raises(npc_memory.DuplicateKeyError, match="'hilda' belongs to a stored NPC"):
        plugin.add_player(key="hilda")
    npc_memory.uninstall("w")


def test_threshold_events_fire_once_per_crossing_across_a_restart(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="bram", faction="thieves")
    fired: list[Event] = []
    plugin.on(Hostile, fired.append)
    plugin.adjust_relationship("hilda", "bram", trust=-0.3)
    assert len(fired) == 1
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="bram")
    plugin.on(Hostile, fired.append)
    plugin.adjust_relationship("hilda", "bram", trust=-0.05)  # still below: the same crossing
    assert len(fired) == 1
    plugin.adjust_relationship("hilda", "bram", trust=+0.3)
    plugin.adjust_relationship("hilda", "bram", trust=-0.3)
    assert len(fired) == 2
    npc_memory.uninstall("w")


def test_the_plugin_leaves_the_garbage_collector_as_the_game_set_it(tmp_path: Path) -> None:
    """Installing on a store, snapshot rounds, a save and a reload: automatic collection
    stays on and runs throughout (collections seen during the load), nothing is
    frozen, and on Python 3.11 the tick captures (a collection inside the writer's copy
    could let the game's thread change what it copies)."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    pack = snapshot_pack(interval=10.0, per_tick=2)
    gc.set_threshold(100)
    try:
        plugin = npc_memory.install(world="gcw", pack=pack, store=tmp_path / "g.db")
        snapshot = next(p for p in plugin.processors if isinstance(p, SnapshotSystem))
        assert snapshot.persistence.capture_on_writer is (sys.version_info >= (3, 12))
        for i in range(40):
            plugin.add_npc(key=f"npc{i}")
            plugin.remember(f"npc{i}", None, f"The mill burned down, part {i}")
        tick("gcw", 25)
        plugin.save()
        # Nothing frozen: objects an earlier test froze may die meanwhile, none are added.
        assert gc.isenabled() and gc.get_freeze_count() <= frozen
        npc_memory.uninstall("gcw")
        gc.callbacks.append(seen)
        try:
            again = npc_memory.install(world="gcw", pack=pack, store=tmp_path / "g.db")
        finally:
            gc.callbacks.remove(seen)
        assert len(again.storage.stored_npcs()) == 40
        assert collections and gc.isenabled() and gc.get_freeze_count() <= frozen
    finally:
        gc.set_threshold(*thresholds)


@pytest.fixture
def tick_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Captures on the tick, as on an interpreter without a GIL."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: False)


@pytest.fixture
def frame_collector() -> Iterator[npc_memory.FrameCollector]:
    """The game runs a FrameCollector (automatic collection off)."""
    collector = npc_memory.FrameCollector().start()
    yield collector
    collector.stop()
    gc.unfreeze()


def test_the_writer_captures_each_round_and_the_tick_hands_it_the_keys(
    tmp_path: Path, frame_collector: npc_memory.FrameCollector
) -> None:
    writes: list[list[str]] = []
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), writes)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=10.0, per_tick=2), store=store)
    snapshot = next(p for p in plugin.processors if isinstance(p, SnapshotSystem))
    assert snapshot.persistence.capture_on_writer
    for i in range(5):
        plugin.add_npc(key=f"npc{i}")
    tick("w", 9)
    plugin.storage.flush()
    assert writes == [] and store.metas == []
    tick("w", 1)  # interval reached: the whole round goes to the writer at once
    plugin.storage.flush()
    assert [sorted(batch) for batch in writes] == [[f"npc{i}" for i in range(5)]]
    assert store.metas == [] and snapshot.persistence.round_active  # the metadata follows the captures
    tick("w", 1)  # seen captured: room for the metadata is set aside in the next tick's budget
    plugin.storage.flush()
    assert store.metas == []
    tick("w", 1)
    plugin.storage.flush()
    assert store.metas[-1].clock == 12.0 and store.metas[-1].snapshots == 1
    tick("w", 1)
    assert not snapshot.persistence.round_active and snapshot.persistence.oldest_unsaved(plugin.clock.now) == 0.0
    plugin.remember("npc3", None, "rain")
    tick("w", 10)
    plugin.storage.flush()
    assert writes[1:] == [["npc3"]] and store.kinds == ["put"] * 5 + ["patch"]
    npc_memory.uninstall("w")


def test_snapshots_run_each_interval_within_the_document_budget(tmp_path: Path, tick_captures: None) -> None:
    writes: list[list[str]] = []
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), writes)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=10.0, per_tick=2), store=store)
    for i in range(5):
        plugin.add_npc(key=f"npc{i}")
    tick("w", 9)  # before the interval: nothing written
    plugin.storage.flush()
    assert writes == [] and store.metas == []
    for _ in range(3):  # interval reached: a round starts, 2 documents per tick
        tick("w", 1)
        plugin.storage.flush()
    assert [len(batch) for batch in writes] == [2, 2, 1]
    assert sorted(k for batch in writes for k in batch) == [f"npc{i}" for i in range(5)]
    assert store.kinds == ["put"] * 5  # first writes are whole documents
    assert store.metas[-1].clock == 12.0 and store.metas[-1].snapshots == 1
    # Only what changed is written in the next round, as a patch.
    plugin.remember("npc3", None, "rain")
    tick("w", 10)
    plugin.storage.flush()
    assert writes[3:] == [["npc3"]] and store.kinds[5:] == ["patch"]
    npc_memory.uninstall("w")
    restored = npc_memory.install(world="w", store=tmp_path / "w.db")
    assert [m.content for m in restored.memories("npc3")] == ["rain"]
    npc_memory.uninstall("w")


@pytest.mark.parametrize("on_writer", [True, False])
def test_the_tick_never_waits_for_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_writer: bool) -> None:
    monkeypatch.setattr(persistence, "MAX_BACKLOG", 3)
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: on_writer)
    gate = threading.Event()
    writes: list[list[str]] = []
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), writes, gate=gate)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=1.0, per_tick=1), store=store)
    for i in range(12):
        plugin.add_npc(key=f"npc{i}")
    tick("w", 20)  # the store is blocked: ticks return regardless
    assert writes == []
    snapshot = next(p for p in plugin.processors if isinstance(p, SnapshotSystem))
    assert snapshot.persistence.snapshots == 1  # no new round while the first is not captured
    if not on_writer:
        assert snapshot.persistence.backlog == 3  # tick capture pauses while the writer is behind
    assert snapshot.persistence.round_active  # the rest of the round waits, coalescing changes
    assert snapshot.persistence.oldest_unsaved(plugin.clock.now) >= 19.0
    writer = snapshot.persistence.writer
    assert writer is not None and writer.late == on_writer  # a late round gets the writer more of the GIL
    gate.set()
    plugin.storage.flush()
    tick("w", 2)  # (the round ends the tick after its documents are seen captured)
    assert not writer.late
    npc_memory.uninstall("w")  # flushes everything
    assert sorted(k for batch in writes for k in batch) == sorted(f"npc{i}" for i in range(12))


def test_failed_writes_are_reported_and_retried(tmp_path: Path) -> None:
    writes: list[list[str]] = []
    # Two failures: the round's append, then hilda's own (a failed append is retried a document at a time).
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), writes, fail=2)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=1.0, per_tick=10), store=store)
    failures: list[SnapshotFailed] = []
    plugin.on(SnapshotFailed, failures.append)
    plugin.add_npc(key="hilda")
    tick("w", 1)
    plugin.storage.flush()
    tick("w", 1)  # the failure is noticed on the next tick and hilda is queued again
    assert [f.error for f in failures] == ["disk full"]
    plugin.save()
    assert writes == [["hilda"]]
    npc_memory.uninstall("w")


def test_save_raises_when_the_store_fails(tmp_path: Path) -> None:
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), [], fail=10)
    plugin = npc_memory.install(world="w", store=store)
    plugin.add_npc(key="hilda")
    with pytest.raises(StoreError, match="disk full"):
        plugin.save()
    with pytest.raises(StoreError, match=r"disk full.*stays installed"):
        npc_memory.uninstall("w")
    assert plugin.installed and plugin.npc("hilda")  # everything is still in memory
    store.fail = 0  # the disk recovers: uninstalling saves
    npc_memory.uninstall("w")
    assert not plugin.installed and "w" not in npc_memory.installation._INSTALLED
    reopened = TinyDBStore(tmp_path / "w.db")
    assert "hilda" in reopened.load().documents
    reopened.close()


def test_save_without_a_store_is_a_no_op() -> None:
    plugin = npc_memory.install(world="w")
    plugin.add_npc(key="hilda")
    plugin.save()
    assert plugin.storage.store is None


def test_remove_keeps_the_document_and_forget_deletes_it(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    plugin.add_npc(key="brandt")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice bought nails")
    plugin.remove("hilda")
    assert plugin.storage.stored_npcs() == ["hilda"]
    plugin.remove("brandt", forget=True)
    npc_memory.uninstall("w")
    docs = tmp_path / "w.db" / "docs"
    store = TinyDBStore(tmp_path / "w.db")
    assert sorted(store.load().documents) == ["alice", "hilda"]
    store.checkpoint()
    assert (docs / file_name("hilda")).exists() and not (docs / file_name("brandt")).exists()
    assert [(e.action, e.target) for e in store.audit()] == [("forget", "brandt")]
    store.close()
    plugin = npc_memory.install(world="w", store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice bought nails"]
    npc_memory.uninstall("w")


def test_the_demo_resumes_from_its_store(tmp_path: Path) -> None:
    from npc_memory.demo import run_village

    def all_memories(plugin: npc_memory.MemoryPlugin) -> set[tuple[str, str, str]]:
        return {(n, p, m.id) for n in plugin.npcs() for p in plugin.players() for m in plugin.memories(n, p)}

    db = tmp_path / "demo.db"
    first = run_village(days=2, seed=5, store=db, keep_installed=True)
    assert "2 game days" in first.report and "Saved to" in first.report
    after_two_days = all_memories(first.plugin)
    npc_memory.uninstall(first.plugin.world)
    resumed = run_village(days=2, seed=5, store=db, resume=True, keep_installed=True)
    assert "game days 3-4" in resumed.report
    assert resumed.plugin.clock.day == 4.0
    assert after_two_days and after_two_days < all_memories(resumed.plugin)  # days 1-2 came back, 3-4 added
    npc_memory.uninstall(resumed.plugin.world)
    fresh = run_village(days=2, seed=5, store=db)  # not resuming: a fresh village, the same report
    assert fresh.report == first.report
    (tmp_path / "notastore").mkdir()
    (tmp_path / "notastore" / "thesis.txt").write_text("precious")
    with pytest.raises(StoreError, match="not an npc-memory store"):
        run_village(days=1, store=tmp_path / "notastore")
    assert (tmp_path / "notastore" / "thesis.txt").exists()


@pytest.fixture
def blocked_village(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[npc_memory.MemoryPlugin, StoreWriter, threading.Event]]:
    """12 NPCs, a round every 16 s captured on the writer, whose disk is blocked until
    the gate is set (set again at the end, so the writer never waits for its timeout)."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)
    gate = threading.Event()
    store = RecordingStore(TinyDBStore(tmp_path / "w.db"), [], gate=gate)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=16.0), store=store)
    for i in range(12):
        plugin.add_npc(key=f"npc{i}")
    writer = plugin._persistence.writer
    assert writer is not None
    try:
        yield plugin, writer, gate
    finally:
        gate.set()
        npc_memory.uninstall("w")


def test_a_round_on_course_to_overrun_is_late_before_half_its_interval(
    blocked_village: tuple[npc_memory.MemoryPlugin, StoreWriter, threading.Event],
) -> None:
    plugin, writer, gate = blocked_village
    tick("w", 16)  # the round starts; the disk is blocked, so none of it is written
    tick("w", 1)  # 1 s in: too soon to judge its pace
    assert plugin._persistence.round_active and not writer.late
    tick("w", 1)  # 2 s in (an eighth of the interval), nothing done: it will not end in 12 s
    assert writer.late and writer.round_progress[1] == 0
    gate.set()
    plugin.storage.flush()  # its documents are written now...
    tick("w", 1)
    assert plugin._persistence.round_active and writer.late  # ...but it stays late until it ends
    tick("w", 1)
    assert not plugin._persistence.round_active and not writer.late


def test_a_round_is_late_only_on_course_to_overrun_its_interval(
    blocked_village: tuple[npc_memory.MemoryPlugin, StoreWriter, threading.Event],
) -> None:
    """Late (the writer takes a fair share of the interpreter) only when the round's pace
    so far would take it past its interval (16 s here), or once it is: taking the share
    sooner makes the game's frames late and leaves the writer less idle time, not more."""
    plugin, writer, _gate = blocked_village
    tick("w", 16)  # the round starts; the disk is blocked, so the writer takes nothing yet
    persistence = plugin._persistence
    size, half = persistence._round_size, persistence._round_size // 2
    writer.round_progress = (persistence._round_number, half)  # (the writer waits at the disk)
    on_course = 16.0 * half / size  # seconds in at which half done is on course for 16 s
    assert not persistence._late(on_course * 0.9)  # on course for 14.4 s: in time
    assert persistence._late(on_course * 1.1)  # on course for 17.6 s
    writer.round_progress = (persistence._round_number, size)  # all taken...
    assert not persistence._late(15.0)
    assert persistence._late(16.5)  # ...but past its interval


def test_a_save_ends_a_late_round_and_its_lateness(
    blocked_village: tuple[npc_memory.MemoryPlugin, StoreWriter, threading.Event],
) -> None:
    plugin, writer, gate = blocked_village
    tick("w", 18)  # a round, late at 2 s in
    assert writer.late
    gate.set()
    plugin.save()  # ends the round
    assert not writer.late  # the writer stops taking a fair share of the interpreter
    tick("w", 3)
    assert not writer.late


class RecordingStore:
    """A real store with a gate and a failure switch in front of its journal (test
    plumbing): ``writes`` gets the document keys of each append, ``kinds`` their
    record types, ``metas`` the metadata written."""

    def __init__(self, inner: TinyDBStore, writes: list[list[str]], gate: threading.Event | None = None, fail: int = 0) -> None:
        self.inner, self.writes, self.gate, self.fail = inner, writes, gate, fail
        self.metas: list[StoreMeta] = []
        self.kinds: list[str] = []

    def load(self) -> StoreContents:
        return self.inner.load()

    def reserve_lsn(self) -> int:
        return self.inner.reserve_lsn()

    def append(self, records: Iterable[Record]) -> int:
        if self.gate is not None:
            self.gate.wait(timeout=30)
        if self.fail:
            self.fail -= 1
            raise OSError("disk full")
        batch = list(records)
        documents = [r for r in batch if isinstance(r, (Put, NpcPatch))]
        if documents:
            self.writes.append([r.key for r in documents])
            self.kinds += ["put" if isinstance(r, Put) else "patch" for r in documents]
        self.metas += [r.meta for r in batch if isinstance(r, MetaRecord)]
        return self.inner.append(batch)

    def maintain(self, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        return self.inner.maintain(deadline, pause)

    def versions(self) -> Mapping[str, int]:
        return self.inner.versions()

    def write(self, documents: Sequence[EncodedDocument], meta: StoreMeta | None = None) -> None:
        self.inner.write(documents, meta)

    def delete(self, keys: Iterable[str]) -> None:
        self.inner.delete(keys)

    def read_meta(self) -> StoreMeta | None:
        return self.inner.read_meta()

    def write_meta(self, meta: StoreMeta) -> None:
        self.inner.write_meta(meta)

    def append_audit(self, entry: AuditEntry) -> None:
        self.inner.append_audit(entry)

    def audit(self) -> list[AuditEntry]:
        return self.inner.audit()

    def close(self) -> None:
        self.inner.close()


def test_recording_store_is_a_journal_store(tmp_path: Path) -> None:
    store = RecordingStore(TinyDBStore(tmp_path / "x.db"), [])
    assert isinstance(store, JournalStore)
    store.close()


@pytest.mark.parametrize("on_writer", [True, False])
def test_removed_and_stored_documents_are_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_writer: bool) -> None:
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: on_writer)
    plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=1.0, per_tick=10), store=tmp_path / "w.db")
    plugin.add_npc(key="hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", room="forge")
    plugin.remember("hilda", "alice", "Alice bought nails")
    plugin.remove("hilda")  # kept as a stored document, written with the next round
    plugin.remove("alice")
    tick("w", 2)
    plugin.storage.flush()
    store_path = tmp_path / "w.db"
    npc_memory.uninstall("w")
    store = TinyDBStore(store_path)
    documents = store.load().documents
    store.close()
    hilda = documents["hilda"]
    assert isinstance(hilda, npc_memory.store.NpcDocument)
    assert (hilda.archetype, hilda.room, [m.content for m in hilda.bank.players["alice"].episodic]) == (
        "blacksmith", "forge", ["Alice bought nails"])
    assert documents["alice"].room == "forge"


class GatedStore(RecordingStore):
    """A :class:`RecordingStore` whose ``block``-th append that carries documents
    (counting from 1; 0: the first that carries metadata) waits for ``gate`` while
    ``armed``; ``reached`` is set once it waits."""

    def __init__(self, inner: TinyDBStore, block: int, gate: threading.Event) -> None:
        super().__init__(inner, [])
        self.block, self.hold, self.reached, self.appends, self.armed = block, gate, threading.Event(), 0, False

    def append(self, records: Iterable[Record]) -> int:
        batch = list(records)
        if self.armed:
            self.appends += any(isinstance(r, (Put, NpcPatch)) for r in batch)
            meta = any(isinstance(r, MetaRecord) for r in batch)
            if (self.block == 0 and meta) or (self.block and self.appends == self.block):
                self.armed = False
                self.reached.set()
                assert self.hold.wait(30), "the test never opened the gate"
        return super().append(batch)


Gated = tuple[npc_memory.MemoryPlugin, GatedStore, threading.Event]


@pytest.fixture
def gated_village(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], Gated]]:
    """Makes six NPCs, saved, in world "w": a round every 16 s on the writer, two
    documents per group, its store's ``block``-th append held (see
    :class:`GatedStore`); the gate is opened and the world uninstalled at the end."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)
    monkeypatch.setattr(writer_module, "ROUND_GROUP", 2)
    gate = threading.Event()

    def make(block: int) -> Gated:
        store = GatedStore(TinyDBStore(tmp_path / "w.db"), block, gate)
        plugin = npc_memory.install(world="w", pack=snapshot_pack(interval=16.0), store=store)
        for i in range(6):
            plugin.add_npc(key=f"npc{i}", room=f"room{i}")
        plugin.add_player(key="alice", room="room0")
        plugin.save()
        store.writes.clear()
        store.armed = True
        return plugin, store, gate

    try:
        yield make
    finally:
        gate.set()  # (never leave the writer waiting: uninstalling saves through it)
        npc_memory.uninstall("w")


def change_one_a_tick(plugin: npc_memory.MemoryPlugin) -> float:
    """npc0…npc5 each remember a note, one a tick (npc<i> first changes at start + i);
    returns start (game seconds)."""
    start = plugin.clock.now
    for i in range(6):
        plugin.remember(f"npc{i}", None, f"note {i}")
        tick("w", 1)
    return start


def test_a_round_half_on_disk_counts_only_the_rest_as_unsaved(gated_village: Callable[[int], Gated]) -> None:
    """A round's documents are written oldest change first, two to a group here: with
    the first group on disk and the second held at the disk, the oldest unsaved change
    is the first change of the third NPC, not the round's oldest."""
    plugin, store, gate = gated_village(2)
    start = change_one_a_tick(plugin)  # npc<i> first changes at start + i
    assert plugin.storage.unsaved_seconds() == plugin.clock.now - start
    tick("w", 16 - 6)  # the round starts
    assert store.reached.wait(10), "the round's second group never reached the disk"
    now = plugin.clock.now
    assert store.writes == [["npc0", "npc1"]]
    assert plugin.storage.unsaved_seconds() == now - (start + 2)  # npc0 and npc1 are on disk
    gate.set()
    plugin.storage.flush()
    tick("w", 2)  # the round's end is handed over and written
    plugin.storage.flush()
    assert plugin.storage.unsaved_seconds() <= 2.0


def test_a_queued_extraction_is_saved_with_its_npcs_document(gated_village: Callable[[int], Gated]) -> None:
    """A conversation's end is in its NPC's document with its lines, waiting there for
    extraction (or with the memories they gave): once every document of the round is on
    disk it counts as saved, while the metadata that also lists its job is held at the
    disk (``tests/test_pending_conversations.py`` reloads such a store)."""
    plugin, store, gate = gated_village(0)
    start = plugin.clock.now
    plugin.say("npc0", "alice", "Alice", "I lost my ring at the mill.")
    plugin.end_conversation("npc0", "alice")  # queued at start
    tick("w", 1)
    for i in range(1, 6):
        plugin.remember(f"npc{i}", None, f"note {i}")
    tick("w", 16 - 1)  # the round starts
    plugin.storage.flush()  # its documents are on disk (the writer does not wait for ticks)
    tick("w", 2)  # its end is seen, then handed over
    assert store.reached.wait(10), "the round's metadata never reached the disk"
    now = plugin.clock.now
    assert {key for w in store.writes for key in w} >= {f"npc{i}" for i in range(6)}  # every document is on disk
    assert plugin.storage.unsaved_seconds() < now - start  # the job does not wait for the metadata
    gate.set()
    plugin.storage.flush()
    tick("w", 1)
    plugin.storage.flush()
    assert plugin.storage.unsaved_seconds() < now - start


def test_a_written_round_waiting_for_its_metadata_keeps_its_documents_saved(gated_village: Callable[[int], Gated]) -> None:
    """Every document of a round is on disk and its metadata is held at the disk when
    the next round begins: the oldest unsaved change is the first one after the round
    began, not the round's oldest again."""
    plugin, store, _gate = gated_village(0)
    start = change_one_a_tick(plugin)
    tick("w", 16 - 6)  # the round starts
    plugin.storage.flush()  # its documents are on disk
    tick("w", 2)  # its end is handed over and held
    assert store.reached.wait(10), "the round's metadata never reached the disk"
    later = plugin.clock.now
    plugin.remember("npc0", None, "a later note")  # first change after the round began
    tick("w", 16 - 2)  # the next round starts, behind the held metadata
    now = plugin.clock.now
    assert plugin.storage.unsaved_seconds() == now - later
    assert now - later < now - start - 16


def test_keys_dirty_again_after_a_failed_write_make_the_next_round_count_whole(gated_village: Callable[[int], Gated]) -> None:
    """A round's writes fail, so its keys are dirty again, and each is changed again
    before the next round: their first change is older than their place in that round
    says, so with its first group on disk the round still counts from its oldest change."""
    plugin, store, _gate = gated_village(2)
    store.armed = False
    start = change_one_a_tick(plugin)
    store.fail = 10_000  # the disk is full
    tick("w", 16 - 6)  # the round starts and its writes fail
    plugin.storage.flush()
    store.fail = 0
    tick("w", 1)  # the failures are taken in: the keys are dirty again
    assert plugin._persistence.failures > 0
    for i in range(6):
        plugin.remember(f"npc{i}", None, f"again {i}")  # each changed again, later
    store.writes.clear()
    store.appends, store.armed = 0, True
    tick("w", 16)  # the next round starts; its second group is held at the disk
    assert store.reached.wait(10), "the round's second group never reached the disk"
    assert len(store.writes) == 1  # its first group is on disk
    assert plugin.storage.unsaved_seconds() >= plugin.clock.now - start - 1
