"""Persistence: snapshot rounds under a busy server's load, save() when little is dirty,
the tick and a busy frame while a round runs, what a capture costs against an encode, checkpoints, full
save and cold load (each beside TinyDB's stock JSONStorage where it compares).

The busy load is the stress mix of `scale.py`: per tick 4 conversations, 2 observed events, 10
``remember`` calls, 2 relationship changes and 21 moves, ``time_scale=60``,
``esper.process(1/60)`` (one game second per tick, a round due every 60 ticks), the
village pack with its default budgets, ~33 NPCs to a room. Ticks are paced at 60 per
second as a server runs them (a tick that overruns its frame is followed at once).
Figures land in each benchmark's ``extra_info`` (``--benchmark-json``).

Under ``--benchmark-disable`` (CI's smoke run) the worlds are scaled down.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import statistics
import time
from pathlib import Path
from typing import Any

import esper
import msgspec
import pytest
from tinydb import TinyDB

import npc_memory
from npc_memory.components import (
    EpisodicMemory,
    Fact,
    FactionMember,
    Hop,
    Identity,
    KnowledgeBase,
    Location,
    MemoryBank,
    NpcHandle,
    NpcTraits,
    PairMemories,
    Relationship,
    Relationships,
    WorkingMemory,
)
from npc_memory.services.persistence import PersistenceService
from npc_memory.store import SCHEMA_VERSION, NpcDocument, TinyDBStore, encode_document
from npc_memory.store.records import capture_atomically, capture_handle, diff, encode_capture, record_encoder
from npc_memory.store.tinydb_store import file_name
from npc_memory.systems.snapshot import SnapshotSystem


def scale(benchmark: Any, full: int, smoke: int) -> int:
    return smoke if benchmark.disabled else full


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# ---------------------------------------------------------------------- the busy server


class BusyWorld:
    """A world under the stress load, with a store; ``tick()`` plays one busy tick."""

    def __init__(self, path: Path, npcs: int, players: int, seed: int = 1) -> None:
        self.plugin = npc_memory.install(world="bench", store=path, seed=seed, time_scale=60.0)
        self.rng = random.Random(seed)
        self.rooms = [f"room{r}" for r in range(max(1, npcs // 33))]
        archetypes = ["blacksmith", "innkeeper", "guard_captain", None]
        factions = ["adventurers", "thieves", None]
        self.npcs = [f"npc{i:05d}" for i in range(npcs)]
        self.players = [f"pc{p:04d}" for p in range(players)]
        for key in self.npcs:
            self.plugin.add_npc(key=key, archetype=self.rng.choice(archetypes), room=self.rng.choice(self.rooms))
        for key in self.players:
            self.plugin.add_player(key=key, faction=self.rng.choice(factions), room=self.rng.choice(self.rooms),
                                   consent=True)
        self.plugin.save()
        self.persistence: PersistenceService = self.plugin._persistence
        self.snapshot = next(p for p in self.plugin.processors if isinstance(p, SnapshotSystem))
        self.ticks = 0

    def load(self) -> None:
        """One tick's worth of the busy server's calls."""
        plugin, rng, t = self.plugin, self.rng, self.ticks
        for _ in range(4):
            npc, player = rng.choice(self.npcs), rng.choice(self.players)
            plugin.say(npc, player, player, "Bandits attacked the mill, can you help me carry the sacks?")
            plugin.say(npc, player, npc, "Thank you, here is a gift for your trouble.")
            plugin.end_conversation(npc, player)
        for _ in range(2):
            plugin.observe(room=rng.choice(self.rooms), subject=rng.choice(self.players),
                           content=f"seen stealing bread at {t}", tags=["theft"], importance=0.7)
        for _ in range(10):
            plugin.remember(rng.choice(self.npcs), rng.choice(self.players), f"traded arrows at {t}",
                            tags=["trade"], importance=0.4)
        for _ in range(2):
            plugin.adjust_relationship(rng.choice(self.npcs), rng.choice(self.players),
                                       trust=rng.uniform(-0.05, 0.05))
        for _ in range(21):
            who = rng.choice(self.npcs) if rng.random() < 0.7 else rng.choice(self.players)
            plugin.move(who, rng.choice(self.rooms))

    def run(self, ticks: int, paced: bool = True) -> dict[str, Any]:
        """Play ``ticks`` busy ticks; returns how snapshot rounds kept up."""
        persistence = self.persistence
        started: dict[int, int] = {}
        done: dict[int, int] = {}
        dirty: list[int] = []
        tick_ms: list[float] = []
        snapshot_ms: list[float] = []
        stale: list[float] = []
        system = self.snapshot
        inner = system.process

        def timed(*args: Any, **kwargs: Any) -> None:
            begin = time.perf_counter()
            inner(*args, **kwargs)
            snapshot_ms.append((time.perf_counter() - begin) * 1e3)

        system.process = timed  # type: ignore[method-assign]
        esper.switch_world("bench")
        frame = time.perf_counter()
        try:
            for _ in range(ticks):
                self.load()
                self.ticks += 1
                before, waiting = persistence.snapshots, len(self.plugin._state.dirty)
                begin = time.perf_counter()
                esper.process(1 / 60)
                tick_ms.append((time.perf_counter() - begin) * 1e3)
                if persistence.snapshots != before:
                    started[persistence.snapshots] = self.ticks
                    dirty.append(waiting)
                durable = persistence.writer.durable_round if persistence.writer else 0
                for number in [r for r in started if r <= durable and r not in done]:
                    done[number] = self.ticks
                stale.append(persistence.oldest_unsaved(self.plugin.clock.now))
                frame += 1 / 60
                if paced and (left := frame - time.perf_counter()) > 0:
                    time.sleep(left)
                frame = max(frame, time.perf_counter() - 1 / 60)  # an overrun frame does not pile up
        finally:
            system.process = inner  # type: ignore[method-assign]
            esper.switch_world("default")
        durations = [done[r] - started[r] for r in sorted(done)]
        return {
            "rounds_started": len(started),
            "rounds_completed": len(durations),
            "round_ticks_median": statistics.median(durations) if durations else None,
            "round_ticks_max": max(durations) if durations else None,
            "round_ticks_last": durations[-5:],
            "dirty_at_round_start_median": statistics.median(dirty) if dirty else None,
            "oldest_unsaved_max_s": round(max(stale), 1),
            "oldest_unsaved_end_s": round(stale[-1], 1),
            "tick_ms_p50": round(quantile(tick_ms, 0.5), 2),
            "snapshot_tick_ms_p50": round(quantile(snapshot_ms, 0.5), 3),
            "snapshot_tick_ms_p99": round(quantile(snapshot_ms, 0.99), 3),
            "journal_mb": round((persistence.writer.bytes_written if persistence.writer else 0) / 1e6, 1),
        }


@pytest.mark.parametrize(("npcs", "players", "ticks"), [(1_000, 100, 1_000), (10_000, 1_000, 2_000)])
def test_snapshot_rounds_under_a_busy_load(benchmark: Any, tmp_path: Path, cleanup: None,
                                            npcs: int, players: int, ticks: int) -> None:
    """The stress load: does every round complete, and within how many ticks (game
    seconds)? Most NPCs are dirty every interval. Timed: the whole run."""
    n, p, t = scale(benchmark, npcs, 50), scale(benchmark, players, 10), scale(benchmark, ticks, 130)
    world = BusyWorld(tmp_path / "busy.db", n, p)
    figures: dict[str, Any] = {}
    benchmark.pedantic(lambda: figures.update(world.run(t)), rounds=1, iterations=1)
    dirty = len(world.plugin._state.dirty) + len(world.persistence._round)
    begin = time.perf_counter()
    world.plugin.save()  # whatever the last round and the ticks since left
    figures.update(final_save_s=round(time.perf_counter() - begin, 3), final_save_dirty=dirty)
    benchmark.extra_info.update(figures)
    assert figures["rounds_completed"] >= 1


@pytest.mark.parametrize("world_size", [1_000, 10_000])
def test_save_with_10_dirty_npcs_after_a_busy_load(benchmark: Any, tmp_path: Path, cleanup: None,
                                                   world_size: int) -> None:
    """``plugin.save()`` after 10 NPCs changed, in a world that has been busy for 300
    ticks (documents with facts, relationships and conversations): one journal append
    of ten patches and the metadata, one fsync."""
    n = scale(benchmark, world_size, 50)
    world = BusyWorld(tmp_path / "busy.db", n, max(10, n // 10))
    world.run(scale(benchmark, 300, 20), paced=False)
    world.plugin.save()
    counter = itertools.count()

    def dirty_ten() -> None:
        for _ in range(10):
            world.plugin.remember(world.npcs[(next(counter) * 7919) % n], "pc0000", "Alice haggled", tags=["trade"])

    benchmark.pedantic(world.plugin.save, setup=dirty_ten, rounds=scale(benchmark, 30, 2), iterations=1)


def round_world(benchmark: Any, tmp_path: Path) -> BusyWorld:
    """A world after 200 busy ticks (1,000 NPCs; fewer in the smoke run), saved, its
    world current."""
    n = scale(benchmark, 1_000, 50)
    world = BusyWorld(tmp_path / "busy.db", n, 100 if n > 100 else 10)
    world.run(scale(benchmark, 200, 20), paced=False)
    world.plugin.save()
    esper.switch_world("bench")
    return world


def start_round_if_done(world: BusyWorld) -> None:
    """Unless a snapshot round runs: dirty every NPC and make a round due at the next tick."""
    if not world.persistence.round_active:
        for key in world.npcs:
            world.plugin.remember(key, None, "the bell rang", importance=0.2)
        world.plugin.clock.advance(60.0)


def test_tick_while_a_round_runs(benchmark: Any, tmp_path: Path, cleanup: None) -> None:
    """The SnapshotSystem's tick while the writer thread captures and writes a round of
    1,000 dirty NPCs (with the default capture on the writer: hand over the keys, or
    see how far the round has come)."""
    world = round_world(benchmark, tmp_path)
    system = world.snapshot
    rounds = scale(benchmark, 300, 3)

    def dirty_all() -> None:
        start_round_if_done(world)
        time.sleep(1 / 60)  # the writer works between frames, as in a paced game

    try:
        benchmark.pedantic(system.process, setup=dirty_all, rounds=rounds, iterations=1)
    finally:
        esper.switch_world("default")


def test_busy_frame_while_a_round_runs(benchmark: Any, tmp_path: Path, cleanup: None) -> None:
    """A frame of the game's own Python work (about 4 ms of it, no sleep: a busy game
    thread) while the writer thread works through rounds of 1,000 dirty NPCs that are
    not late (game time stands still between rounds), frames paced at 60 per second and
    the garbage collector run between them (:class:`npc_memory.FrameCollector`).
    ``extra_info``: the longest and the 99th-percentile wait of the game thread within a
    frame (a gap between two steps of its work: the writer's stint after the
    interpreter's switch interval handed it the GIL, or a collection), the same for the
    wait to wake up from the frame's sleep (what it overslept: the writer's stint after
    the game thread asked for the GIL back), and the rounds the writer completed."""
    steps = calibrated_steps(0.004)  # before the world: the writer is not running yet
    world = round_world(benchmark, tmp_path)
    system = world.snapshot
    waits: list[float] = []
    overslept: list[float] = []
    durable = world.persistence.writer.durable_round if world.persistence.writer else 0
    idle = 1 / 60 - 0.004
    collector = npc_memory.FrameCollector().start()  # as README advises a game

    def between_frames() -> None:
        start_round_if_done(world)
        system.process()  # hands a due round's keys to the writer, or sees how far it has come
        began = time.perf_counter()
        collector.between_frames(idle)
        rest = idle - (time.perf_counter() - began)
        if rest > 0:  # the rest of the frame's idle time: the writer works
            began = time.perf_counter()
            time.sleep(rest)
            overslept.append(time.perf_counter() - began - rest)

    def frame() -> None:
        last = time.perf_counter()
        longest = 0.0
        for _ in range(steps):
            sum(range(200))
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
        waits.append(longest)

    try:
        benchmark.pedantic(frame, setup=between_frames, rounds=scale(benchmark, 600, 5), iterations=1)
    finally:
        collector.stop()
        esper.switch_world("default")
    writer = world.persistence.writer
    benchmark.extra_info.update({
        "longest_wait_ms": round(max(waits) * 1e3, 3),
        "p99_wait_ms": round(quantile(waits, 0.99) * 1e3, 3),
        "longest_overslept_ms": round(max(overslept, default=0.0) * 1e3, 3),
        "p99_overslept_ms": round(quantile(overslept, 0.99) * 1e3, 3) if overslept else None,
        "rounds_durable": (writer.durable_round if writer else 0) - durable,
    })


def calibrated_steps(seconds: float) -> int:
    """Steps of :func:`test_busy_frame_while_a_round_runs`'s work that take about
    ``seconds`` on this machine: by the fastest of 5 runs of 50 ms."""
    fastest = math.inf
    for _ in range(5):
        count = 0
        started = now = time.perf_counter()
        while now - started < 0.05:
            sum(range(200))
            now = time.perf_counter()
            count += 1
        fastest = min(fastest, (now - started) / count)
    return max(1, round(seconds / fastest))


# ---------------------------------------------------------------------- capture against encode


def busy_npc(i: int, facts: int = 72, players: int = 53, memories: int = 14) -> NpcHandle:
    """An NPC shaped like one after 1,000 busy ticks at 1k NPCs: 72 facts (with their
    provenance), relationships with 53 players, 14 memories over 13 pairs."""
    bank = MemoryBank(next_id=memories + 1)
    for m in range(memories):
        pair = bank.pair_for_write(f"pc{m % 13:04d}")
        pair.episodic.append(EpisodicMemory(id=f"m{m + 1}", content=f"traded arrows for {m} gold at the stall",
                                            tags=("trade",), importance=0.4, created=m * 60.0, scope="player"))
    chain = (Hop(teller=None, listener=f"npc{i:05d}", room="room1", at=1.0, source="observation"),)
    facts_list = [Fact(id=f"f{f}", origin=f"o{i}-{f}", content=f"pc{f % 100:04d} was seen stealing bread at {f}",
                       category="player_trait", subject=f"pc{f % 100:04d}", topic="theft", tags=("theft",),
                       confidence=0.8, importance=0.7, chain=chain, created=float(f)) for f in range(facts)]
    rels = {f"pc{p:04d}": Relationship(trust=0.4, interaction_count=p % 3, version=p) for p in range(players)}
    return NpcHandle(entity=i + 1, identity=Identity(key=f"npc{i:05d}", name=f"NPC {i}"),
                     faction=FactionMember(faction="smiths"), location=Location("room1"),
                     traits=NpcTraits(archetype="blacksmith"), bank=bank,
                     relationships=Relationships(by_player=rels), working=WorkingMemory(),
                     knowledge=KnowledgeBase(facts=facts_list, next_id=facts + 1))


@pytest.fixture(scope="module")
def busy_npcs() -> list[NpcHandle]:
    return [busy_npc(i) for i in range(2_000)]


@pytest.mark.parametrize("how", ["capture_on_the_tick", "capture_atomically", "encode_whole_json",
                                 "diff_and_encode_patch"])
def test_capture_against_encode_per_document(benchmark: Any, busy_npcs: list[NpcHandle], how: str) -> None:
    """Per document of a busy 1k world (72 facts, 53 relationships, 14 memories):
    what the tick or the writer pays to capture it, to encode it whole, or to patch
    it after it learned one fact. Timed: 2,000 documents in a cold order."""
    handles = busy_npcs[: scale(benchmark, 2_000, 20)]
    order = list(range(len(handles)))
    random.Random(3).shuffle(order)
    bases = [capture_handle(h, 0.0) for h in handles]
    if how == "diff_and_encode_patch":
        for h in handles:
            h.knowledge.facts.append(Fact(id="new", origin="o-new", content="a new rumour", subject="pc0001"))
    news = [capture_handle(h, 1.0) for h in handles]

    def run() -> None:
        for i in order:
            if how == "capture_on_the_tick":
                capture_handle(handles[i], 1.0)
            elif how == "capture_atomically":
                capture_atomically(handles[i], 1.0)
            elif how == "encode_whole_json":
                encode_capture(news[i])
            else:
                record_encoder.encode(diff(bases[i], news[i], lsn=2, base_lsn=1))  # type: ignore[arg-type]

    benchmark.pedantic(run, rounds=scale(benchmark, 10, 1), iterations=1)
    benchmark.extra_info["us_per_document"] = round(benchmark.stats.stats.median / len(handles) * 1e6, 2) \
        if not benchmark.disabled else None
    if how == "diff_and_encode_patch":
        for h in handles:
            h.knowledge.facts.pop()


# ---------------------------------------------------------------------- stock TinyDB, full save, cold load


def npc_document(i: int, players: int, memories: int) -> NpcDocument:
    bank = MemoryBank(next_id=players * memories + 1)
    for p in range(players):
        bank.players[f"player{p:02d}"] = PairMemories(episodic=[
            EpisodicMemory(id=f"m{p * memories + m + 1}", content=f"player{p:02d} traded {m} arrows for {m * 3} gold at the market stall",
                           tags=("trade", "market"), importance=0.3 + (m % 7) / 10, created=m * 600.0, last_accessed=m * 600.0,
                           room="market", scope="player")
            for m in range(memories)
        ])
    rels = Relationships(by_player={f"player{p:02d}": Relationship(trust=0.6, interaction_count=memories) for p in range(players)})
    return NpcDocument(v=SCHEMA_VERSION, key=f"npc{i:05d}", name=f"NPC {i}", faction="smiths", archetype="blacksmith",
                       room="forge", bank=bank, relationships=rels)


@pytest.mark.parametrize("world_size", [1_000, 10_000])
def test_stock_jsonstorage_update_10_npcs(benchmark: Any, tmp_path: Path, world_size: int) -> None:
    """Stock TinyDB for comparison: one JSON file, one update call for 10 NPCs."""
    n = scale(benchmark, world_size, world_size // 100)
    docs = [msgspec.to_builtins(npc_document(i, players=1, memories=20)) for i in range(n)]
    with TinyDB(tmp_path / "stock.json") as db:
        table = db.table("npcs")
        table.insert_multiple(docs)
        ids = list(range(1, 11))
        benchmark.pedantic(lambda: table.update({"saved_at": 1.0}, doc_ids=ids), rounds=scale(benchmark, 3, 1), iterations=1)


@pytest.fixture(scope="module")
def million(request: pytest.FixtureRequest) -> list[NpcDocument]:
    """1,000 NPCs × 20 players × 50 memories = 1,000,000 memories (20 NPCs in smoke runs)."""
    disabled = request.config.getoption("benchmark_disable")
    return [npc_document(i, players=20, memories=50) for i in range(20 if disabled else 1_000)]


def test_full_save_1m_memories(benchmark: Any, tmp_path: Path, million: list[NpcDocument]) -> None:
    """Every document written whole: one journal append and fsync (encoding included)."""
    store = TinyDBStore(tmp_path / "m.db", checkpoint_on_close=False)
    benchmark.pedantic(lambda: store.write([encode_document(d) for d in million]), rounds=scale(benchmark, 3, 1), iterations=1)
    store.close()


def test_checkpoint_1m_memories(benchmark: Any, tmp_path: Path, million: list[NpcDocument]) -> None:
    """Folding a journal of 1,000 whole documents into their TinyDB files (each
    written atomically with an fsync): background work of the writer thread."""

    def setup() -> tuple[tuple[TinyDBStore], dict[str, Any]]:
        store = TinyDBStore(tmp_path / f"c{time.perf_counter_ns()}.db", checkpoint_on_close=False)
        store.write([encode_document(d) for d in million])
        return (store,), {}

    def fold(store: TinyDBStore) -> None:
        store.checkpoint()
        store.close()

    benchmark.pedantic(fold, setup=setup, rounds=scale(benchmark, 3, 1), iterations=1)


@pytest.mark.parametrize("paused", [False, True], ids=["collector-as-found", "collection-paused"])
@pytest.mark.parametrize("journal", [False, True])
def test_cold_load_1m_memories(
    benchmark: Any, tmp_path: Path, million: list[NpcDocument], journal: bool, paused: bool
) -> None:
    """A fresh store object decoding every document: from checkpointed TinyDB files, or
    replaying a journal that holds all of them (the worst case after a crash). With
    CPython's automatic collector as the plugin leaves it, or with the game wrapping the
    load in ``npc_memory.collection_paused()``."""
    store = TinyDBStore(tmp_path / "m.db", checkpoint_on_close=False)
    store.write([encode_document(d) for d in million])
    if not journal:
        store.checkpoint()
    store.close()

    def load() -> int:
        fresh = TinyDBStore(tmp_path / "m.db", checkpoint_on_close=False)
        try:
            with npc_memory.collection_paused() if paused else contextlib.nullcontext():
                return len(fresh.load().documents)
        finally:
            fresh.close()

    assert benchmark.pedantic(load, rounds=scale(benchmark, 3, 1), iterations=1) == len(million)


def test_stock_jsonstorage_full_save_1m_memories(benchmark: Any, tmp_path: Path, million: list[NpcDocument]) -> None:
    records = [msgspec.to_builtins(d) for d in million]
    path = tmp_path / "stock.json"

    def save() -> None:
        path.unlink(missing_ok=True)
        with TinyDB(path) as db:
            db.table("npcs").insert_multiple(records)

    benchmark.pedantic(save, rounds=scale(benchmark, 2, 1), iterations=1)


def test_stock_jsonstorage_cold_load_1m_memories(benchmark: Any, tmp_path: Path, million: list[NpcDocument]) -> None:
    path = tmp_path / "stock.json"
    with TinyDB(path) as db:
        db.table("npcs").insert_multiple([msgspec.to_builtins(d) for d in million])

    def load() -> int:
        with TinyDB(path) as db:
            return len(db.table("npcs").all())

    assert benchmark.pedantic(load, rounds=scale(benchmark, 2, 1), iterations=1) == len(million)


def test_file_name_is_stable() -> None:
    assert file_name("npc00001") == file_name("npc00001") != file_name("npc00002")
