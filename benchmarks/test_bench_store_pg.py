"""The PostgreSQL store beside the TinyDB one (``test_bench_store.py``) on the same
data: ``save()`` of 10 dirty NPCs after a busy load at 1k and 10k NPCs, a full save and
a cold load of 1M memories. Each benchmark gets a fresh database on the server named
by ``NPC_MEMORY_TEST_PG`` (skipped without one; ``scripts/pg-test-server`` starts one).

Under ``--benchmark-disable`` (CI's smoke run) the worlds are scaled down.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.test_bench_store import BusyWorld, million, scale  # noqa: F401  (million: a fixture)
from npc_memory.store import NpcDocument, encode_document

pytest.importorskip("psycopg", reason="the PostgreSQL store needs the 'postgres' extra")
from npc_memory.store.postgres import PostgresStore
from tests.postgres import fresh_database, pg_url


@pytest.fixture
def database() -> Iterator[str]:
    """The URL of a new, empty database (dropped afterwards)."""
    with fresh_database(pg_url()) as url:
        yield url


@pytest.mark.parametrize("world_size", [1_000, 10_000])
def test_pg_save_with_10_dirty_npcs_after_a_busy_load(
    benchmark: Any, database: str, cleanup: None, world_size: int
) -> None:
    """``plugin.save()`` after 10 NPCs changed, in a world busy for 300 ticks: ten whole
    documents and the metadata in one transaction (versions checked)."""
    n = scale(benchmark, world_size, 50)
    world = BusyWorld(database, n, max(10, n // 10))  # type: ignore[arg-type]
    world.run(scale(benchmark, 300, 20), paced=False)
    world.plugin.save()
    counter = itertools.count()

    def dirty_ten() -> None:
        for _ in range(10):
            world.plugin.remember(
                world.npcs[(next(counter) * 7919) % n], "pc0000", "Alice haggled", tags=["trade"]
            )

    benchmark.pedantic(world.plugin.save, setup=dirty_ten, rounds=scale(benchmark, 30, 2), iterations=1)


def test_pg_full_save_1m_memories(benchmark: Any, database: str, million: list[NpcDocument]) -> None:  # noqa: F811
    """Every document written whole in one transaction (encoding included): a fresh
    world each round."""
    stores: list[PostgresStore] = []

    def setup() -> tuple[tuple[PostgresStore], dict[str, Any]]:
        stores.append(PostgresStore(database, world=f"w{len(stores)}"))
        return (stores[-1],), {}

    def save(store: PostgresStore) -> None:
        store.write([encode_document(d) for d in million])

    benchmark.pedantic(save, setup=setup, rounds=scale(benchmark, 3, 1), iterations=1)
    for store in stores:
        store.close()


def test_pg_cold_load_1m_memories(benchmark: Any, database: str, million: list[NpcDocument]) -> None:  # noqa: F811
    """A fresh store object streaming and decoding every document of the world."""
    store = PostgresStore(database, world="m")
    store.write([encode_document(d) for d in million])
    store.close()

    def load() -> int:
        fresh = PostgresStore(database, world="m")
        try:
            return len(fresh.load().documents)
        finally:
            fresh.close()

    assert benchmark.pedantic(load, rounds=scale(benchmark, 3, 1), iterations=1) == len(million)
