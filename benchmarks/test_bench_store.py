"""Persistence: snapshot cost against world size, full save and cold load, each beside
TinyDB's stock JSONStorage (one JSON file, rewritten whole on every write) on the same data.

Under ``--benchmark-disable`` (CI's smoke run) the worlds are scaled down.
"""

from __future__ import annotations

import gc
import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tinydb import TinyDB

import npc_memory
from npc_memory.components import EpisodicMemory, MemoryBank, PairMemories, Relationship, Relationships
from npc_memory.store import SCHEMA_VERSION, NpcDocument, TinyDBStore, encode_document
from npc_memory.store.tinydb_store import file_name


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


def scale(benchmark: Any, full: int, smoke: int) -> int:
    return smoke if benchmark.disabled else full



@pytest.mark.parametrize("world_size", [1_000, 10_000])
def test_snapshot_10_dirty_npcs(benchmark: Any, tmp_path: Path, world_size: int, cleanup: None) -> None:
    """plugin.save() after 10 NPCs changed, in a world of 1,000 or 10,000 NPCs with 20
    memories each: the cost should not grow with the world."""
    n = scale(benchmark, world_size, world_size // 100)
    plugin = npc_memory.install(world="bench", store=tmp_path / "w.db")
    plugin.add_player(key="alice", faction="adventurers")
    for i in range(n):
        plugin.add_npc(key=f"npc{i:05d}", archetype="blacksmith")
        for m in range(20):
            plugin.remember(f"npc{i:05d}", "alice", f"Alice bought item {m}", tags=["trade"], importance=0.4)
    plugin.save()
    counter = itertools.count()

    def dirty_ten() -> None:
        for _ in range(10):
            plugin.remember(f"npc{(next(counter) * 7919) % n:05d}", "alice", "Alice haggled", tags=["trade"])

    benchmark.pedantic(plugin.save, setup=dirty_ten, rounds=scale(benchmark, 30, 1), iterations=1)
    assert len(list((tmp_path / "w.db" / "docs").glob("*.json"))) == n + 1


@pytest.mark.parametrize("world_size", [1_000, 10_000])
def test_stock_jsonstorage_update_10_npcs(benchmark: Any, tmp_path: Path, world_size: int) -> None:
    """The same change with stock TinyDB: one JSON file, one update call for the 10 NPCs."""
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
    store = TinyDBStore(tmp_path / "m.db")
    benchmark.pedantic(lambda: store.write([encode_document(d) for d in million]), rounds=scale(benchmark, 3, 1), iterations=1)
    store.close()
    assert len(list((tmp_path / "m.db" / "docs").glob("*.json"))) == len(million)


def test_cold_load_1m_memories(benchmark: Any, tmp_path: Path, million: list[NpcDocument]) -> None:
    store = TinyDBStore(tmp_path / "m.db")
    store.write([encode_document(d) for d in million])
    store.close()

    def load() -> int:
        fresh = TinyDBStore(tmp_path / "m.db")
        try:
            return len(fresh.load().documents)
        finally:
            fresh.close()

    assert benchmark.pedantic(load, rounds=scale(benchmark, 3, 1), iterations=1) == len(million)
    gc.unfreeze()


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


def test_snapshot_system_tick_during_a_round(benchmark: Any, tmp_path: Path, cleanup: None) -> None:
    """One esper tick while a snapshot round is in progress: the SnapshotSystem encodes its
    budget of 10 NPC documents (20 memories each) and hands them to the writer thread."""
    import esper

    plugin = npc_memory.install(world="bench", store=tmp_path / "t.db", time_scale=60.0)
    n = scale(benchmark, 1_000, 20)
    plugin.add_player(key="alice")
    for i in range(n):
        plugin.add_npc(key=f"npc{i:05d}")
        for m in range(20):
            plugin.remember(f"npc{i:05d}", "alice", f"Alice bought item {m}", tags=["trade"])
    plugin.save()
    counter = itertools.count()

    def ten_dirty() -> None:
        plugin.flush()  # measure the tick, not a backlog
        for _ in range(10):
            plugin.remember(f"npc{next(counter) % n:05d}", "alice", "Alice haggled", tags=["trade"])

    esper.switch_world("bench")
    try:
        benchmark.pedantic(esper.process, args=(1.0,), setup=ten_dirty, rounds=scale(benchmark, 200, 2), iterations=1)
    finally:
        esper.switch_world("default")
