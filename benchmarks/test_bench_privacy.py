"""Privacy operations on a saved world: forgetting one player everywhere (every NPC,
the journal folded, older generations scrubbed; on PostgreSQL the rows, the audit table
and a vacuum), ending a game, and the decay tick with per-scope retention on (retention
adds no per-tick work beyond the decay budget)."""

from __future__ import annotations

import contextlib
import itertools
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import esper
import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from tests.privacy_world import Backend

from .conftest import uninstall_all

NPCS = 200
PLAYERS = 20


def populate(plugin: npc_memory.MemoryPlugin) -> None:
    """200 NPCs in 10 rooms, each with 10 memories about each of 20 players (40k memories)
    and a relationship with each; every player observed doing something in every room."""
    for p in range(PLAYERS):
        plugin.add_player(key=f"player{p:02d}", name=f"Person{p:02d}", consent=p % 2 == 0)
    for n in range(NPCS):
        plugin.add_npc(key=f"npc{n:03d}", archetype="bard", room=f"room{n % 10}")
        for p in range(PLAYERS):
            for i in range(10):
                plugin.remember(f"npc{n:03d}", f"player{p:02d}", f"Person{p:02d} did thing {i}", tags=["trade"])
            plugin.adjust_relationship(f"npc{n:03d}", f"player{p:02d}", trust=0.1)
    for p in range(PLAYERS):
        for r in range(10):
            plugin.observe(room=f"room{r}", subject=f"player{p:02d}", content=f"Person{p:02d} sang", tags=["gift"])


@pytest.fixture(scope="module", params=["tinydb", "postgres"])
def saved_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """The world saved in a store directory, then in a fresh PostgreSQL database."""
    db = tmp_path_factory.mktemp("privacy") / "world.db"
    with contextlib.ExitStack() as stack:
        url = None
        if request.param == "postgres":
            from tests.postgres import fresh_database, pg_url

            url = stack.enter_context(fresh_database(pg_url()))
        backend = Backend(db, url)
        plugin = npc_memory.install(world="bench-privacy", store=backend.store(), seed=1)
        populate(plugin)
        npc_memory.uninstall("bench-privacy")
        yield backend
        uninstall_all()


def test_forget_player_in_a_saved_world(benchmark, saved_world: Backend, tmp_path: Path, cleanup: None) -> None:  # type: ignore[no-untyped-def]
    copies = itertools.count()

    def setup() -> tuple[tuple[npc_memory.MemoryPlugin, str], dict[str, object]]:
        uninstall_all()
        copy = saved_world.copy(tmp_path / f"copy{next(copies)}.db")
        plugin = npc_memory.install(world="bench-forget", store=copy.store(), seed=1)
        for n in range(NPCS):
            plugin.add_npc(key=f"npc{n:03d}")
        return (plugin, "player07"), {}

    def forget(plugin: npc_memory.MemoryPlugin, key: str) -> None:
        plugin.privacy.forget_player(key)

    benchmark.pedantic(forget, setup=setup, rounds=3)
    if "bench-forget" in esper.list_worlds():
        uninstall_all()


def test_end_game_in_a_live_world(benchmark, cleanup: None) -> None:  # type: ignore[no-untyped-def]
    def setup() -> tuple[tuple[npc_memory.MemoryPlugin], dict[str, object]]:
        uninstall_all()
        plugin = npc_memory.install(world="bench-end", seed=1)
        populate(plugin)
        return (plugin,), {}

    benchmark.pedantic(lambda plugin: plugin.privacy.end_game(), setup=setup, rounds=3)


@pytest.mark.parametrize("retention", [False, True], ids=["no-retention", "retention"])
def test_decay_visit_of_one_pair(benchmark, retention: bool, cleanup: None) -> None:  # type: ignore[no-untyped-def]
    """DecaySystem's work on one NPC–player pair (200 memories) with and without a
    retention rule to check (nothing old enough to go: the cost of the check itself)."""
    data = load_pack("village").model_dump()
    if retention:
        data["privacy"]["retention_days"] = {"session": 30.0, "anon": 30.0, "player": 365.0}
    plugin = npc_memory.install(world="bench-retention", pack=validate_pack(data), seed=1)
    plugin.add_npc(key="npc", archetype="bard")
    plugin.add_player(key="alice", name="Alice")
    for i in range(200):
        plugin.remember("npc", "alice", f"Alice did thing {i}", tags=["trade"], importance=0.9, locked=True)
    benchmark(plugin._maintenance.decay_pair, "npc", "alice")


def test_a_tick_of_forgetting_a_player_another_game_server_forgot(benchmark, saved_world: Backend, tmp_path: Path, cleanup: None) -> None:  # type: ignore[no-untyped-def]
    """On a shared PostgreSQL world: the first tick of this server's part of a forgetting
    another server began (the live player, extraction work, standing, then NPCs of its
    200 live ones within the snapshot budget); ``extra_info`` has the ticks the whole
    part took (passes over every NPC until one finds nothing) and their median and
    longest."""
    if not saved_world.postgres:
        pytest.skip("forgetting begun by another game server: a PostgreSQL world")
    from npc_memory.store import PendingForget

    copies = itertools.count()
    plugins: list[npc_memory.MemoryPlugin] = []

    def setup() -> tuple[tuple[npc_memory.MemoryPlugin], dict[str, object]]:
        uninstall_all()
        copy = saved_world.copy(tmp_path / f"copy{next(copies)}.db")
        plugin = npc_memory.install(world="bench-forget", store=copy.store(), seed=1)
        for n in range(NPCS):
            plugin.add_npc(key=f"npc{n:03d}")
        recorder = copy.store()
        recorder.set_pending_forgets([PendingForget(key="player07", name="Person07")])
        recorder.close()
        plugin.save()  # its poll finds the record
        assert plugin._privacy._seen
        plugins.append(plugin)
        return (plugin,), {}

    benchmark.pedantic(lambda plugin: plugin._privacy.tick(), setup=setup, rounds=3)
    plugin, later = plugins[-1], []
    while plugin._privacy._work is not None:
        started = time.perf_counter()
        plugin._privacy.tick()
        later.append((time.perf_counter() - started) * 1000)
    median, longest = statistics.median(later), max(later)
    benchmark.extra_info.update(ticks=len(later) + 1, later_tick_median_ms=median, later_tick_max_ms=longest)
    print(f"\nthe part took {len(later) + 1} ticks; after the first: median {median:.3f} ms, max {longest:.3f} ms")
    uninstall_all()


def test_the_poll_of_a_shared_world_with_nothing_pending(benchmark, saved_world: Backend, cleanup: None) -> None:  # type: ignore[no-untyped-def]
    """What each snapshot round adds on the writer thread of a server on a shared
    PostgreSQL world: one read of the world's privacy row."""
    if not saved_world.postgres:
        pytest.skip("the poll of a shared world: a PostgreSQL world")
    plugin = npc_memory.install(world="bench-poll", store=saved_world.store(), seed=1)
    store = plugin._persistence.store
    benchmark(plugin._privacy.poll, store)
    uninstall_all()
