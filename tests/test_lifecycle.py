"""Esper's own entity lifecycle, and NPCs and players that are stored but not loaded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import esper
import pytest

import npc_memory

from .conftest import tick


@dataclass
class Before:
    plugin: npc_memory.MemoryPlugin
    hilda: int
    alice: int
    memories: list[str]
    trust: float


def setup_world(store: Path | None) -> Before:
    """Hilda the blacksmith remembers Alice's help; their trust moved from its start."""
    p = npc_memory.install(world="test", pack="village", store=store, seed=1)
    hilda = p.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    alice = p.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
    p.record_interaction("hilda", "alice")
    p.remember("hilda", "alice", "Alice mended the forge bellows", tags=["helpful"], importance=0.8,
               affect_relationship=True)
    p.remember("hilda", "alice", "Alice brought iron ore from the mine", tags=["gift"], importance=0.6,
               affect_relationship=True)
    p.adjust_relationship("hilda", "alice", trust=0.15)
    return Before(plugin=p, hilda=hilda, alice=alice,
                  memories=sorted(m.content for m in p.memories("hilda", "alice")),
                  trust=p.query.trust("hilda", "alice"))


def new_entity(world: str = "test") -> int:
    esper.switch_world(world)
    try:
        return esper.create_entity()
    finally:
        esper.switch_world("default")


def delete(entity: int, *, immediate: bool, world: str = "test") -> None:
    esper.switch_world(world)
    try:
        esper.delete_entity(entity, immediate=immediate)
    finally:
        esper.switch_world("default")


def store_of(tmp_path: Path, with_store: bool) -> Path | None:
    return tmp_path / "store" if with_store else None


STORES = [pytest.param(True, id="store"), pytest.param(False, id="memory-only")]


# ---------------------------------------------------------------- esper's lifecycle


@pytest.mark.parametrize("with_store", STORES)
@pytest.mark.parametrize("immediate", [pytest.param(True, id="immediate"), pytest.param(False, id="deferred")])
def test_an_npc_entity_deleted_in_esper_is_noticed_within_a_tick(
    tmp_path: Path, with_store: bool, immediate: bool
) -> None:
    """An NPC's entity deleted with esper.delete_entity (immediate, or deferred
    and then a tick) is kept as remove() would keep it, its key freed, and it comes back."""
    before = setup_world(store_of(tmp_path, with_store))
    p = before.plugin
    delete(before.hilda, immediate=immediate)
    tick("test")
    assert "hilda" not in p.npcs(), "the plugin did not notice that Hilda's entity was deleted"
    assert "hilda" in p.storage.stored_npcs()
    hilda = p.add_npc(new_entity(), key="hilda")
    assert p.entity("hilda") == hilda
    assert sorted(m.content for m in p.memories("hilda", "alice")) == before.memories
    assert p.query.trust("hilda", "alice") == pytest.approx(before.trust)


@pytest.mark.parametrize("with_store", STORES)
def test_a_player_entity_deleted_in_esper_is_noticed_within_a_tick(tmp_path: Path, with_store: bool) -> None:
    """A player's entity deleted with a deferred esper.delete_entity is noticed
    by the next tick: its key is freed and kept, and re-adding it works."""
    before = setup_world(store_of(tmp_path, with_store))
    p = before.plugin
    delete(before.alice, immediate=False)
    tick("test")
    assert "alice" not in p.players(), "the plugin did not notice that Alice's entity was deleted"
    assert "alice" in p.storage.stored_players()
    alice = p.add_player(new_entity(), key="alice")
    assert p.entity("alice") == alice and p.player("alice").faction.faction == "adventurers"
    assert sorted(m.content for m in p.memories("hilda", "alice")) == before.memories
    assert p.query.trust("hilda", "alice") == pytest.approx(before.trust)


@pytest.mark.parametrize("with_store", STORES)
def test_a_key_is_reusable_right_after_an_immediate_delete(tmp_path: Path, with_store: bool) -> None:
    """Right after esper.delete_entity(e, immediate=True), with no tick, adding
    the key again on a new entity succeeds and brings the NPC's memories back."""
    before = setup_world(store_of(tmp_path, with_store))
    p = before.plugin
    delete(before.hilda, immediate=True)
    entity = new_entity()
    try:
        hilda = p.add_npc(entity, key="hilda")
    except npc_memory.DuplicateKeyError as exc:
        pytest.fail(f"the key of a deleted entity was not freed: {exc}")
    assert p.entity("hilda") == hilda == entity
    assert p.npcs().count("hilda") == 1
    assert sorted(m.content for m in p.memories("hilda", "alice")) == before.memories
    assert p.query.trust("hilda", "alice") == pytest.approx(before.trust)


@pytest.mark.parametrize("with_store", STORES)
def test_clear_database_is_noticed_and_everyone_comes_back(tmp_path: Path, with_store: bool) -> None:
    """After esper.clear_database() in the plugin's world and a tick, no NPC or
    player is live; re-adding their keys (on entity ids esper hands out again) restores
    memories and relationships."""
    before = setup_world(store_of(tmp_path, with_store))
    p = before.plugin
    esper.switch_world("test")
    try:
        esper.clear_database()
    finally:
        esper.switch_world("default")
    tick("test")
    assert p.npcs() == [] and p.players() == [], "the plugin did not notice esper.clear_database()"
    assert "hilda" in p.storage.stored_npcs() and "alice" in p.storage.stored_players()
    hilda = p.add_npc(new_entity(), key="hilda")  # esper restarts ids at 1: Hilda's old id
    alice = p.add_player(new_entity(), key="alice")
    assert (p.entity("hilda"), p.entity("alice")) == (hilda, alice)
    assert sorted(m.content for m in p.memories("hilda", "alice")) == before.memories
    assert p.query.trust("hilda", "alice") == pytest.approx(before.trust)
    assert p.query.has_met("hilda", "alice")


# ---------------------------------------------------------------- stored, not loaded


def hilda_remembers_a_theft(store: Path) -> tuple[npc_memory.MemoryPlugin, str, float]:
    p = npc_memory.install(world="test", pack="village", store=store, seed=1)
    p.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    p.add_player(key="bram", name="Bram", faction="thieves", room="forge")
    p.record_interaction("hilda", "bram")
    start = p.query.trust("hilda", "bram")
    memory = p.remember("hilda", "bram", "Bram stole a horseshoe from the forge", tags=["theft"],
                        importance=0.8, affect_relationship=True)
    trust = p.query.trust("hilda", "bram")
    assert trust < start
    return p, memory.id, trust


def assert_hilda_still_knows_bram(p: npc_memory.MemoryPlugin, memory_id: str, trust: float) -> None:
    assert [m.id for m in p.memories("hilda", "bram")] == [memory_id]
    assert p.memories("hilda", "bram")[0].content == "Bram stole a horseshoe from the forge"
    assert p.query.trust("hilda", "bram") == pytest.approx(trust)
    assert p.query.has_met("hilda", "bram")
    assert p.query.count_memories_by_tag("hilda", "bram", "theft") == 1


def test_a_removed_player_can_still_be_asked_about(tmp_path: Path) -> None:
    """After remove("bram") the player is only in the store; Hilda's memories of
    him and her relationship with him can still be read by his key."""
    p, memory_id, trust = hilda_remembers_a_theft(tmp_path / "store")
    p.remove("bram")
    assert "bram" in p.storage.stored_players() and "bram" not in p.players()
    assert_hilda_still_knows_bram(p, memory_id, trust)


def test_a_player_not_added_after_a_restart_can_be_asked_about(tmp_path: Path) -> None:
    """After save, uninstall and install, with only Hilda added back, Bram (stored,
    not loaded) can be asked about by key."""
    store = tmp_path / "store"
    p, memory_id, trust = hilda_remembers_a_theft(store)
    p.save()
    npc_memory.uninstall("test")
    p = npc_memory.install(world="test", pack="village", store=store, seed=1)
    p.add_npc(key="hilda")
    assert p.storage.stored_players() == ["bram"]
    assert_hilda_still_knows_bram(p, memory_id, trust)


def test_an_npc_only_in_the_store_can_be_read(tmp_path: Path) -> None:
    """After remove("hilda") her memories are still readable by her key."""
    p = npc_memory.install(world="test", pack="village", store=tmp_path / "store", seed=1)
    p.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    p.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
    p.remember("hilda", "alice", "Alice mended the forge bellows", tags=["helpful"], importance=0.8)
    p.remove("hilda")
    assert p.storage.stored_npcs() == ["hilda"] and p.npcs() == []
    assert [m.content for m in p.memories("hilda", "alice")] == ["Alice mended the forge bellows"]


def test_a_stored_only_player_can_be_forgotten_by_key(tmp_path: Path) -> None:
    """remove("bram", forget=True) deletes a player that is only in the store, for
    good (also after a restart); a key neither live nor stored still raises UnknownEntityError."""
    store = tmp_path / "store"
    p, _, _ = hilda_remembers_a_theft(store)
    p.remove("bram")
    assert "bram" in p.storage.stored_players()
    p.remove("bram", forget=True)
    assert "bram" not in p.storage.stored_players()
    p.save()
    npc_memory.uninstall("test")
    p = npc_memory.install(world="test", pack="village", store=store, seed=1)
    assert "bram" not in p.storage.stored_players() and "hilda" in p.storage.stored_npcs()
    p.add_npc(key="hilda")
    for call in (lambda: p.memories("hilda", "bram"), lambda: p.memories("hilda", "nobody"),
                 lambda: p.query.trust("hilda", "nobody"), lambda: p.remove("nobody"),
                 lambda: p.remove("nobody", forget=True)):
        with pytest.raises(npc_memory.UnknownEntityError):
            call()
