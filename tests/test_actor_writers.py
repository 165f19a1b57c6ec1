"""The writers fill ``actor`` and ``source``: ``observe``, gossip, conversations read by
the rules, ``say``'s speakers and ``remember``'s teller."""

from __future__ import annotations

from collections.abc import Iterator

import esper
import pytest

import npc_memory
from npc_memory.components import SELF
from npc_memory.errors import UnknownEntityError

from .conftest import tick

WORLD = "actor-writers"


@pytest.fixture
def plugin() -> Iterator[npc_memory.MemoryPlugin]:
    plugin = npc_memory.install(world=WORLD, pack="village", seed=3, time_scale=600.0, deterministic=True)
    esper.switch_world(WORLD)
    plugin.add_npc(key="hilda", name="Hilda", room="market")
    plugin.add_npc(key="oswin", name="Oswin", room="market")
    plugin.add_npc(key="pell", name="Pell", room="tavern")
    plugin.add_player(key="milo", name="Milo", room="market", consent=True)
    plugin.add_player(key="alice", name="Alice", room="market", consent=True)
    yield plugin
    npc_memory.uninstall(WORLD)


def extract(plugin: npc_memory.MemoryPlugin, npc: str, player: str, *lines: tuple[str, str]) -> None:
    for speaker, text in lines:
        plugin.say(npc, player, speaker, text)
    plugin.end_conversation(npc, player)
    for _ in range(10):
        tick(WORLD)
        if not plugin.npc(npc).working.pending:
            return
    raise AssertionError("the conversation was never extracted")


def test_every_witness_remembers_what_it_saw_and_moves_once(plugin: npc_memory.MemoryPlugin) -> None:
    trust = plugin.query.trust("hilda", "milo")
    witnesses = plugin.observe(room="market", subject="milo", content="Milo stole a purse from Bo",
                               tags=["theft"], importance=0.7)
    assert witnesses == ["hilda", "oswin"]
    for witness in witnesses:
        [memory] = plugin.memories(witness, "milo")
        assert (memory.content, memory.tags, memory.actor, memory.source) == (
            "Milo stole a purse from Bo", ("theft",), "milo", "witnessed"
        )
        [fact] = plugin.query.beliefs_about(witness, "milo")
        assert fact.source_memory == memory.id
        assert plugin.query.count_memories_by_tag(witness, "milo", "theft") == 1
    moved = trust - plugin.query.trust("hilda", "milo")
    # The fact alone moves trust as it did before the memory existed: the memory adds nothing.
    plugin.observe(room="tavern", subject="milo", content="Milo stole a ring from Ada", tags=["theft"],
                   importance=0.7)
    assert moved > 0 and plugin.memories("pell", "milo")[0].actor == "milo"
    assert abs((trust - moved) - plugin.query.trust("hilda", "milo")) < 1e-9  # hilda was not in the tavern


def test_a_deed_of_an_npc_or_of_no_one_is_remembered_about_the_world(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.observe(room="market", subject="pell", content="Pell kicked a stray dog", tags=["cruelty"])
    plugin.observe(room="market", content="The well ran dry")
    held = {m.content: m for m in plugin.memories("hilda")}
    assert (held["Pell kicked a stray dog"].actor, held["Pell kicked a stray dog"].source) == ("pell", "witnessed")
    assert (held["The well ran dry"].actor, held["The well ran dry"].source) == (None, "witnessed")
    plugin.move("pell", "market")
    plugin.observe(room="market", subject="pell", content="Pell tripped over a crate")
    mine = [m for m in plugin.memories("pell") if m.content == "Pell tripped over a crate"]
    assert [m.actor for m in mine] == [SELF]  # the witness saw itself do it


def test_a_rumour_heard_is_a_heard_memory_naming_its_teller(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.observe(room="market", subject="milo", content="Milo stole a purse from Bo", tags=["theft"],
                   importance=0.9)
    plugin.move("oswin", "tavern")
    for _ in range(60):
        tick(WORLD)
        if plugin.memories("pell", "milo"):
            break
    [memory] = plugin.memories("pell", "milo")
    assert (memory.actor, memory.source, memory.teller) == ("milo", "heard", "oswin")
    assert plugin.query.count_memories_by_tag("pell", "milo", "theft") == 0  # hearsay: not by default


def test_a_speaker_nobody_knows_is_refused_and_nothing_is_recorded(plugin: npc_memory.MemoryPlugin) -> None:
    with pytest.raises(UnknownEntityError, match="speaker 'Bob' is neither 'Hilda'"):
        plugin.say("hilda", "alice", "Bob", "I stole your hammer, Hilda.")
    assert plugin.npc("hilda").working.open.get("alice") is None
    for speaker in ("Hilda", "hilda", "ALICE", "alice", "Oswin", "pell", "Milo"):
        plugin.say("hilda", "alice", speaker, "Good day.")
    assert len(plugin.npc("hilda").working.open["alice"]) == 7


def test_the_rules_credit_each_deed_to_who_did_it(plugin: npc_memory.MemoryPlugin) -> None:
    extract(plugin, "hilda", "alice",
            ("Hilda", "When I was a lad I stole bread off the bakers' carts."),
            ("Alice", "Milo stole my purse at the fair."),
            ("Alice", "I slew the wolf of Harrow Hill."))
    held = {(m.actor, m.source, m.teller) for m in plugin.memories("hilda", "alice")}
    assert (SELF, "said", None) in held  # the NPC's own story
    assert ("milo", "heard", "alice") in held  # a named third party's deed, told by the player
    assert ("alice", "claimed", "alice") in held  # the player's own account of an unseen deed
    assert plugin.query.count_memories_by_tag("hilda", "alice", "theft") == 0


def test_remember_names_a_teller(plugin: npc_memory.MemoryPlugin) -> None:
    memory = plugin.remember("hilda", "alice", "Alice cheated at dice", actor="alice", source="heard",
                             teller="oswin")
    assert (memory.actor, memory.source, memory.teller) == ("alice", "heard", "oswin")
    with pytest.raises(UnknownEntityError, match="teller must be 'self', None, or a known NPC or player"):
        plugin.remember("hilda", "alice", "Alice cheated at cards", source="heard", teller="nobody")
