"""Adding NPCs and players: components attached once, stable keys, clear errors."""

from __future__ import annotations

import esper
import pytest

import npc_memory
from npc_memory.components import (
    FactionMember,
    Identity,
    Location,
    MemoryBank,
    NpcTraits,
    PlayerProfile,
    Relationships,
)

from .conftest import Village


def test_add_npc_attaches_components_to_an_existing_entity(plugin: npc_memory.MemoryPlugin) -> None:
    esper.switch_world("test")
    entity = esper.create_entity()
    assert plugin.add_npc(entity, key="hilda", name="Hilda", archetype="blacksmith", room="forge") == entity
    assert esper.component_for_entity(entity, Identity) == Identity(key="hilda", name="Hilda")
    assert esper.component_for_entity(entity, FactionMember).faction == "smiths"  # from archetype
    assert esper.component_for_entity(entity, Location).room == "forge"
    traits = esper.component_for_entity(entity, NpcTraits)
    assert (traits.archetype, traits.sociability, traits.faction_loyalty) == ("blacksmith", 0.4, 0.7)
    assert esper.has_components(entity, MemoryBank, Relationships)
    assert not esper.has_component(entity, PlayerProfile)
    # The plugin holds the very objects attached to the entity: mutated in place.
    assert plugin.npc(entity).bank is esper.component_for_entity(entity, MemoryBank)


def test_add_player_and_the_convenience_entity(plugin: npc_memory.MemoryPlugin) -> None:
    alice = plugin.add_player(key="alice", name="Alice", faction="adventurers", consent=True)
    esper.switch_world("test")
    assert esper.component_for_entity(alice, PlayerProfile) == PlayerProfile(consent=True)
    assert esper.component_for_entity(alice, FactionMember).faction == "adventurers"
    assert not esper.has_component(alice, MemoryBank)


def test_explicit_faction_overrides_archetype(plugin: npc_memory.MemoryPlugin) -> None:
    spy = plugin.add_npc(key="spy", archetype="innkeeper", faction="thieves")
    assert plugin.npc(spy).faction.faction == "thieves"
    assert plugin.npc(spy).traits.gossip_drive == 0.9


def test_npc_without_archetype_has_neutral_traits(plugin: npc_memory.MemoryPlugin) -> None:
    entity = plugin.add_npc(key="extra")
    assert plugin.npc(entity).traits == npc_memory.components.NpcTraits()
    assert plugin.npc(entity).faction.faction is None


def test_keys_and_entities_resolve_both_ways(village: Village) -> None:
    p = village.plugin
    assert p.entity("hilda") == village.hilda and p.key(village.alice) == "alice"
    assert p.npcs() == ["hilda", "brandt"] and p.players() == ["alice", "bram"]
    p.move("alice", "market")
    p.move(village.hilda, None)
    assert p.player("alice").location.room == "market" and p.npc("hilda").location.room is None


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: p.add_npc(999, key="x"), npc_memory.UnknownEntityError, "entity 999 does not exist"),
        (lambda p: p.add_npc(key="hilda"), npc_memory.DuplicateKeyError, "'hilda' is already used"),
        (lambda p: p.add_player(key="alice"), npc_memory.DuplicateKeyError, "'alice' is already used"),
        (lambda p: p.add_npc(p.entity("alice"), key="z"), npc_memory.DuplicateKeyError, "already 'alice'"),
        (lambda p: p.add_npc(key="x", faction="elves"), npc_memory.UnknownContentError, "unknown faction 'elves'"),
        (lambda p: p.add_npc(key="x", archetype="wizard"), npc_memory.UnknownContentError, "blacksmith"),
        (lambda p: p.add_player(key="x", faction="orcs"), npc_memory.UnknownContentError, "'orcs'"),
        (lambda p: p.add_npc(key="  "), npc_memory.InvalidArgumentError, "key must not be empty"),
        (lambda p: p.add_npc(key=7), npc_memory.InvalidArgumentError, "key must be a string"),
        (lambda p: p.add_npc("3", key="x"), npc_memory.InvalidArgumentError, "entity must be an int"),
        (lambda p: p.add_player(key="x", consent=True, anonymous=True), npc_memory.PrivacyError, "anonymous"),
        (lambda p: p.remember("nobody", None, "x"), npc_memory.UnknownEntityError, "key 'nobody'"),
        (lambda p: p.remember(4242, None, "x"), npc_memory.UnknownEntityError, "entity 4242"),
        (lambda p: p.remember("alice", None, "x"), npc_memory.UnknownEntityError, "is a player, not an NPC"),
        (lambda p: p.query.trust("hilda", "brandt"), npc_memory.UnknownEntityError, "is an NPC, not a player"),
        (lambda p: p.move(True, "x"), npc_memory.InvalidArgumentError, "entity id or a key"),
    ],
)
def test_bad_spawn_and_lookup_arguments_are_clear_errors(
    village: Village, call: object, error: type[Exception], message: str
) -> None:
    before = (village.plugin.npcs(), village.plugin.players())
    with pytest.raises(error, match=message):
        call(village.plugin)  # type: ignore[operator]
    assert (village.plugin.npcs(), village.plugin.players()) == before


def test_remove_detaches_components_and_frees_the_key(village: Village) -> None:
    p = village.plugin
    p.remove("hilda")
    esper.switch_world("test")
    assert esper.entity_exists(village.hilda)
    assert not esper.has_component(village.hilda, MemoryBank)
    assert "hilda" not in p.npcs() and "hilda" in p.storage.stored_npcs()
    assert not p.npc("hilda").live  # kept, readable by key
    with pytest.raises(npc_memory.UnknownEntityError):
        p.remember("hilda", None, "too late")  # but not changed outside the live world
    assert p.add_npc(village.hilda, key="hilda") == village.hilda
