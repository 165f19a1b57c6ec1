"""A player taking back, in a later conversation, what they said or claimed before: the
memory is kept, marked ``retracted``, reads as what they once said, counts for no one,
and what it gave the NPC to believe (a fact, a claim's pull on the relationship) goes
with it. Lines that refer back without owning up, or own up to nothing said before,
take nothing back."""

from __future__ import annotations

from pathlib import Path

import pytest

import npc_memory
from npc_memory.components import EpisodicMemory, Memory, Turn
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import PackError
from npc_memory.events import TakenBack
from npc_memory.rules.retractions import RetractionReader

from .test_attributes import DAY, hilda_and_quinn, talk  # noqa: F401 (the fixture ``plugin``)


def memory(plugin: npc_memory.MemoryPlugin, words: str) -> Memory:
    [found] = [m for m in plugin.memories("hilda", "quinn") if words in m.content]
    return found


def context_line(plugin: npc_memory.MemoryPlugin, words: str, message: str) -> str:
    context = plugin.context("hilda", "quinn", message=message).sections["memories"]
    [line] = [line for line in context.splitlines() if words in line]
    return line


def test_words_taken_back_days_later_are_kept_as_what_the_player_once_said(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Hilda", "Evening. What brings you in?"), ("Quinn", "No kin at all. Just me."))
    before = memory(plugin, "No kin at all")
    assert before.retracted is None and before.counts_for("quinn")
    announced: list[TakenBack] = []
    plugin.on(TakenBack, announced.append)
    talk(
        plugin,
        ("Hilda", "You said you had no kin at all, when we spoke at the gate."),
        ("Quinn", "I did say that. It wasn't true. I've a daughter, Aud, living with her grandmother."),
    )
    taken = memory(plugin, "No kin at all")
    assert (taken.retracted, taken.id, taken.content) == ("corrected", before.id, before.content)
    assert taken.retracted_at is not None and 3 * DAY < taken.retracted_at < plugin.clock.now - 2 * DAY
    assert [(e.npc, e.player, e.memory, e.reason) for e in announced] == [("hilda", "quinn", taken.id, "corrected")]
    assert not taken.counts_for("quinn") and not taken.counts_for("quinn", frozenset({"claimed"}))
    line = context_line(plugin, "No kin at all", "Have you family?")
    assert "what Quinn once said: they have owned up since that it was not so" in line
    assert "once said" not in context_line(plugin, "a daughter", "Have you family?")
    talks = plugin.context("hilda", "quinn", message="Have you family?").sections["working_memory"]
    [summary] = [line for line in talks.splitlines() if "No kin at all" in line]
    assert summary.endswith("(what Quinn once said: they have owned up since that it was not so)")


def test_a_boast_taken_back_no_longer_counts_even_as_a_claim_nor_moves_the_relationship(
    plugin: npc_memory.MemoryPlugin,
) -> None:
    start = plugin.relationship("hilda", "quinn")
    talk(plugin, ("Hilda", "Evening."), ("Quinn", "I killed a wolf in your sheepfold last night, with my bare hands."))
    boast = next(m for m in plugin.memories("hilda", "quinn") if m.source == "claimed")
    tags = [t for t in boast.tags if t != "personal"]
    assert tags and plugin.query.count_memories_by_tag("hilda", "quinn", tags[0], include=["claimed"]) == 1
    claimed = plugin.relationship("hilda", "quinn")
    assert claimed.respect != start.respect  # a claim moves the relationship a little
    talk(
        plugin,
        ("Quinn", "About that wolf I said I killed in your sheepfold."),
        ("Hilda", "Aye? I've hung the pelt by the door."),
        ("Quinn", "I didn't kill it. The shepherd's dogs had it dead before I got there."),
    )
    boast = next(m for m in plugin.memories("hilda", "quinn") if m.source == "claimed" and "last night" in m.content)
    assert boast.retracted == "corrected"
    assert plugin.query.count_memories_by_tag("hilda", "quinn", tags[0], include=["claimed"]) == 0
    after = plugin.relationship("hilda", "quinn")  # (what a claim moved is taken back, near enough)
    assert abs(after.respect - start.respect) < 0.1 * abs(claimed.respect - start.respect)
    assert "they have owned up since" in context_line(plugin, "last night", "Did you kill that wolf?")


def test_a_boast_taken_back_later_in_the_same_talk_is_taken_back(plugin: npc_memory.MemoryPlugin) -> None:
    talk(
        plugin,
        ("Hilda", "Evening."),
        ("Quinn", "I killed a wolf in your sheepfold last night, with my bare hands."),
        ("Hilda", "Did you now?"),
        ("Quinn", "Well, I said I killed it. Truth is, the shepherd's dogs had it dead before I got there."),
    )
    boast = next(m for m in plugin.memories("hilda", "quinn") if m.source == "claimed")
    assert boast.retracted == "corrected"
    assert plugin.query.count_memories_by_tag("hilda", "quinn", "combat", include=["claimed"]) == 0
    owning_up = memory(plugin, "Truth is")
    assert owning_up.retracted is None  # a line takes back only what was said before it


def test_a_plan_that_changed_reads_as_changed(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I'll be gone by Thursday, so don't save me a bed."))
    talk(plugin, ("Quinn", "I told you I'd be gone by Thursday. Change of plan: I'm staying the winter."))
    assert memory(plugin, "gone by Thursday, so").retracted == "changed"
    assert "it has changed since, they told you" in context_line(plugin, "gone by Thursday, so", "Staying long?")


def test_the_fact_a_statement_taken_back_gave_stops_being_believed(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Quinn", "I hate mutton, always have."))
    [fact] = [f for f in plugin.facts("hilda") if f.attribute == "dislikes"]
    talk(plugin, ("Quinn", "Forget what I said about hating mutton. Yours is good."))
    [kept] = [f for f in plugin.facts("hilda", include_disbelieved=True) if f.id == fact.id]
    assert (kept.believed, kept.disbelief, kept.displaced_by) == (False, "corrected", None)
    assert fact.id not in {f.id for f in plugin.facts("hilda")}
    assert "corrected (dislikes) when they owned up to it): Hilda heard it" in plugin.query.why("hilda", fact.id)
    assert memory(plugin, "I hate mutton").retracted == "corrected"


@pytest.mark.parametrize(
    "lines",
    [
        [("Quinn", "As I told you, I'm from Dunmere.")],  # refers back, owns up to nothing
        [("Quinn", "To be honest, Dunmere was a fine place to grow up.")],  # owns up, refers back to nothing
        [("Quinn", "I said coast? I meant my mother's a coast woman.")],  # refers back to nothing said before
        [("Quinn", "I told you I'm from Dunmere. I don't like repeating myself.")],  # a "don't" about something else
        [("Quinn", "I said I'd pay you. Here it is now.")],  # a bare "now" changes nothing
    ],
)
def test_lines_that_do_not_both_refer_back_and_own_up_take_nothing_back(
    plugin: npc_memory.MemoryPlugin, lines: list[tuple[str, str]]
) -> None:
    talk(plugin, ("Hilda", "Where are you from, stranger?"), ("Quinn", "I'm Quinn, from Dunmere."))
    talk(plugin, *lines)
    assert all(m.retracted is None for m in plugin.memories("hilda", "quinn"))
    assert all(f.believed for f in plugin.facts("hilda", include_disbelieved=True) if f.attribute == "origin")


def test_the_same_words_said_again_are_no_longer_taken_back(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin, ("Hilda", "Evening. What brings you in?"), ("Quinn", "No kin at all. Just me."))
    talk(plugin, ("Hilda", "You said you had no kin."), ("Quinn", "I did say that. It wasn't true."))
    assert memory(plugin, "No kin at all").retracted == "corrected"
    talk(plugin, ("Hilda", "Evening. What brings you in?"), ("Quinn", "No kin at all. Just me."))
    again = memory(plugin, "No kin at all")
    assert (again.retracted, again.retracted_at) == (None, None) and again.counts_for("quinn")


def test_what_was_taken_back_is_saved_and_loaded(tmp_path: Path) -> None:
    store = tmp_path / "store"
    plugin = npc_memory.install(world="attrs", pack="village", store=store, seed=3, deterministic=True)
    try:
        plugin.add_npc(key="hilda", name="Hilda", room="forge")
        plugin.add_player(key="quinn", name="Quinn", room="forge", consent=True)
        talk(plugin, ("Quinn", "I'm a coast man, born and bred."))
        talk(plugin, ("Quinn", "I said coast? I meant my mother's a coast woman. I'm Greyholt-born."))
        taken = memory(plugin, "coast man")
        assert taken.retracted == "corrected"
    finally:
        npc_memory.uninstall("attrs")
    again = npc_memory.install(world="attrs", pack="village", store=store, seed=3, deterministic=True)
    try:
        again.add_npc(key="hilda")
        loaded = memory(again, "coast man")
        assert (loaded.retracted, loaded.retracted_at) == (taken.retracted, taken.retracted_at)
    finally:
        npc_memory.uninstall("attrs")


def said(key: str, content: str, created: float) -> EpisodicMemory:
    return EpisodicMemory(id=key, content=content, created=created, actor="quinn", source="said")


def test_the_reader_takes_back_the_memory_the_lines_point_at() -> None:
    reader = RetractionReader(load_pack("village").knowledge)
    held = [
        said("m1", 'Quinn told me: "I have two brothers."', 1.0),
        said("m2", 'Quinn told me: "I want a sword made."', 2.0),
        said("m3", 'Quinn told me: "I grew up by the sea."', 3.0),
    ]
    turns = [Turn("Quinn", "Said I wanted a sword. I don't. A ploughshare, I'm done with swords.")]
    earlier = [(m, -1) for m in held]
    [taken] = reader.read(turns, ("Quinn", "quinn"), ("Quinn", "quinn", "Hilda", "hilda"), lambda: earlier)
    assert (taken.memory.id, taken.reason, taken.line) == ("m2", "corrected", 0)
    asked: list[int] = []

    def counted() -> list[tuple[EpisodicMemory, int]]:
        asked.append(1)
        return earlier

    quiet = [Turn("Hilda", "You said you had two brothers."), Turn("Quinn", "Aye, and a sister.")]
    assert reader.read(quiet, ("Quinn",), ("Quinn", "Hilda"), counted) == [] and asked == []  # never asked
    recalled = [Turn("Hilda", "You said you had two brothers."), Turn("Quinn", "I did say that. It wasn't true: it's three.")]
    [taken] = reader.read(recalled, ("Quinn",), ("Quinn", "Hilda"), counted)
    assert taken.memory.id == "m1" and taken.line == 1 and asked == [1]
    later = [(m, 5) for m in held]  # said after the line (later in the talk): not taken back
    assert reader.read(recalled, ("Quinn",), ("Quinn", "Hilda"), lambda: later) == []


def test_a_pack_with_a_broken_back_reference_pattern_is_refused() -> None:
    data = load_pack("village").model_dump()
    data["knowledge"]["back_references"] = ["i said (unclosed"]
    with pytest.raises(PackError, match=r"knowledge\.back_references"):
        validate_pack(data)
