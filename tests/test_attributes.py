"""What players say about themselves is filed under attributes the pack names: a newer
statement of a single attribute takes the older one's place (kept, marked corrected,
changed or contradicted), several values of the others stand side by side, and what
was withdrawn never reads as what holds now."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import npc_memory
from npc_memory.components import Fact
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import PackError
from npc_memory.events import InconsistencyNoticed
from npc_memory.rules.attributes import AttributeReader

from .conftest import tick

DAY = 86_400.0


@pytest.fixture(name="plugin")
def hilda_and_quinn() -> Iterator[npc_memory.MemoryPlugin]:
    """Hilda and Tova in the forge, and the player Quinn (world ``attrs``)."""
    plugin = npc_memory.install(world="attrs", pack="village", seed=3, deterministic=True)
    plugin.add_npc(key="hilda", name="Hilda", room="forge")
    plugin.add_npc(key="tova", name="Tova", room="forge")
    plugin.add_player(key="quinn", name="Quinn", room="forge", consent=True)
    yield plugin
    npc_memory.uninstall("attrs")


def talk(plugin: npc_memory.MemoryPlugin, *lines: tuple[str, str]) -> None:
    """One conversation of Hilda and Quinn, applied, then three days pass."""
    for speaker, line in lines:
        plugin.say("hilda", "quinn", speaker, line)
    plugin.end_conversation("hilda", "quinn")
    tick("attrs", 5)
    plugin.clock.advance(3 * DAY)


def about(plugin: npc_memory.MemoryPlugin, attribute: str) -> list[Fact]:
    return [f for f in plugin.facts("hilda", include_disbelieved=True) if f.attribute == attribute]


def said(fact: Fact) -> str:
    return fact.content.split(': "', 1)[1].rstrip('"')


def test_a_correction_the_player_owns_up_to_replaces_the_old_statement(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Hilda", "Where are you from, stranger?"), ("Quinn", "I'm Quinn, from Dunmere."))
    talk(plugin, ("Quinn", "I have to own up: I never lived in Dunmere. Truth is, I grew up in Eastmarch."))
    old, new = about(plugin, "origin")
    assert said(old) == "I'm Quinn, from Dunmere." and said(new).endswith("I grew up in Eastmarch.")
    assert (old.believed, old.disbelief, old.displaced_by, new.believed) == (False, "corrected", new.id, True)
    assert old.private and new.private and old.topic == "origin"
    assert "corrected (origin) when they owned up to it" in plugin.query.why("hilda", old.id)
    assert plugin.query.inconsistencies("hilda", "quinn") == []
    context = plugin.context("hilda", "quinn", message="Where did you grow up?").sections["memories"]
    [line] = [line for line in context.splitlines() if "from Dunmere" in line]
    assert "what Quinn once said: they have owned up since that it was not so" in line
    [current] = [line for line in context.splitlines() if "Eastmarch" in line]
    assert "once said" not in current


def test_a_contradiction_not_owned_up_to_is_an_inconsistency_the_npc_noticed(plugin: npc_memory.MemoryPlugin) -> None:
    noticed: list[InconsistencyNoticed] = []
    plugin.on(InconsistencyNoticed, noticed.append)
    talk(plugin, ("Quinn", "I grew up in Eastmarch, by the tanneries."))
    talk(plugin, ("Quinn", "I was born in Saltbridge, you know."))
    old, new = about(plugin, "origin")
    assert (old.believed, old.disbelief, new.believed) == (False, "contradicted", True)
    assert plugin.query.inconsistencies("hilda", "quinn") == [(old, new)]
    assert [(e.npc, e.player, e.attribute, e.earlier, e.later) for e in noticed] == [
        ("hilda", "quinn", "origin", old.id, new.id)
    ]
    context = plugin.context("hilda", "quinn", message="Where were you born?").sections["memories"]
    assert "they later said otherwise, without a word about it" in context


def test_a_change_the_player_tells_of_is_no_inconsistency(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I live at the old mill."))
    talk(plugin, ("Quinn", "I live by the harbour now."))
    old, new = about(plugin, "home")
    assert (old.disbelief, new.believed) == ("changed", True)
    assert plugin.query.inconsistencies("hilda", "quinn") == []


def test_saying_the_same_again_is_one_statement(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I'm from Dunmere, up the valley."))
    talk(plugin, ("Quinn", "I was born in Dunmere, aye."))
    [origin] = about(plugin, "origin")
    assert origin.believed and "up the valley" in origin.content


def test_several_values_stand_side_by_side_until_one_is_corrected(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I love plum cake."), ("Quinn", "I have two brothers in Lowmarsh."))
    talk(plugin, ("Quinn", "I love hill pipes, proper ones."))
    assert all(f.believed for f in about(plugin, "likes")) and len(about(plugin, "likes")) == 2
    talk(plugin, ("Quinn", "I told you I'd two brothers. It's three; I always forget Padrig."))
    old, new = about(plugin, "family")
    assert (old.believed, old.disbelief, new.believed) == (False, "corrected", True)


def test_a_correction_within_one_conversation_counts(plugin: npc_memory.MemoryPlugin) -> None:
    talk(
        plugin,
        ("Quinn", "Name's Greylock. Just Greylock, out of the hill country."),
        ("Hilda", "Greylock. Writing that in the book."),
        ("Quinn", "Wait. If it's going in a book, put my real one. Quinn Finch. Greylock's only for the road."),
    )
    names = about(plugin, "name")
    assert [(f.believed, f.disbelief) for f in names] == [(False, "corrected"), (True, None)]
    summary = plugin.npc("hilda").working.recent["quinn"][-1].summary  # what the NPC keeps of the talk
    assert "Quinn Finch" in summary and "Name's Greylock" not in summary


def test_what_a_player_confides_is_never_gossiped(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I grew up in Eastmarch, by the tanneries."), ("Quinn", "I hate mutton."))
    assert about(plugin, "origin") and about(plugin, "dislikes")
    tick("attrs", 600)
    assert [f for f in plugin.facts("tova") if f.subject == "quinn"] == []


def test_a_model_s_paraphrase_reads_as_the_player_s_own_words() -> None:
    reader = AttributeReader(load_pack("village").knowledge)
    statement = reader.read("Ansel grew up in Eastmarch, by the tanneries", "Ansel")
    assert statement is not None and statement.attribute == "origin"
    assert statement.value == frozenset({"eastmarch", "tannery"})
    named = reader.read("Kael's family name is Marrish", "Kael")
    assert named is not None and named.attribute == "name" and "marrish" in named.value


def test_a_pack_adds_and_changes_attributes_with_precise_errors() -> None:
    data = load_pack("village").model_dump()
    data["knowledge"]["attributes"] = {"horse": {"cues": ["my horse"], "single": False}, "likes": {"cues": []}}
    rules = validate_pack(data).knowledge
    assert rules.attributes["horse"].cues == ["my horse"] and rules.attributes["likes"].cues == []
    assert rules.attributes["origin"].single  # the built-ins stay
    reader = AttributeReader(rules)
    assert reader.read('Quinn told me: "I love plum cake."', "Quinn") is None  # turned off
    data["knowledge"]["attributes"] = {"origin": {"cues": ["(from"]}}
    with pytest.raises(PackError, match=r"knowledge\.attributes\.origin\.cues\.0: invalid regular expression"):
        validate_pack(data)
    data["knowledge"]["attributes"] = {"origin": {"cue": ["from"]}}
    with pytest.raises(PackError, match=r"knowledge\.attributes\.origin\.cue"):
        validate_pack(data)


def test_a_correction_of_one_of_several_values_takes_the_place_of_the_one_it_names(
    plugin: npc_memory.MemoryPlugin,
) -> None:
    talk(plugin, ("Hilda", "Evening. What brings you in?"), ("Quinn", "My mother's a coast woman; she has never seen the sea since."))
    talk(plugin, ("Quinn", "I told you I'd two brothers. It's three. Padrig's been at sea since I was small."))
    mother, brothers = about(plugin, "family")
    assert mother.believed and brothers.believed  # a word in common ("sea"), but not of the statement
    talk(plugin, ("Hilda", "Evening. What brings you in?"), ("Quinn", "I've two sisters, both in Lowmarsh."))
    talk(plugin, ("Quinn", "I told you I'd two sisters. It's three: I always forget Wenna."))
    sisters = [f for f in about(plugin, "family") if "sisters" in f.content]
    assert [(f.believed, f.disbelief) for f in sisters] == [(False, "corrected"), (True, None)]
