"""The rule-based extractor on hard cases of real speech (tests/fixtures/real_dialogue.toml):
who did what, negations, questions, hypotheticals, hearsay, sarcasm, personal facts,
multi-topic talks and small talk.

Print the figures with ``python -m tests.test_real_dialogue``.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, Turn
from npc_memory.extraction.rules import RuleBasedExtractor

from .conftest import settle

FIXTURES: list[dict[str, Any]] = tomllib.loads(
    (Path(__file__).parent / "fixtures" / "real_dialogue.toml").read_text("utf-8")
)["conversation"]
EVENT_TAGS = frozenset(
    ("heroic", "combat", "helpful", "quest", "theft", "trade", "gift", "threat", "insult", "betrayal", "secret")
)


def job(conversation: dict[str, Any]) -> ExtractionJob:
    return ExtractionJob(
        conversation=conversation["id"], npc=conversation["npc"].lower(), npc_name=conversation["npc"],
        player=conversation["player"].lower(), player_name=conversation["player"],
        turns=tuple(Turn(speaker, text) for speaker, text in conversation["turns"]),
    )


def pairs(memories: tuple[ExtractedMemory, ...]) -> set[tuple[str, str]]:
    """(actor, tag) for every event tag of ``memories``."""
    return {(m.actor, tag) for m in memories for tag in m.tags if tag in EVENT_TAGS}


def false_memories(conversation: dict[str, Any], memories: tuple[ExtractedMemory, ...]) -> set[tuple[str, str]]:
    """Player memories with an event tag the conversation does not support."""
    allowed = {tuple(p) for p in conversation["expect"]} | {tuple(p) for p in conversation.get("allow", [])}
    return {p for p in pairs(memories) if p[0] == "player" and p not in allowed}


def has_fact(memories: tuple[ExtractedMemory, ...], phrase: str) -> bool:
    return any(
        m.actor == "player" and m.kind == "semantic" and phrase.lower() in m.content.lower() for m in memories
    )


def scores(extractor: RuleBasedExtractor | None = None) -> dict[str, float]:
    """Precision and recall of (actor, event tag) pairs, recall of personal facts, and the
    share of trap conversations that leave a false memory about the player."""
    extractor = extractor or RuleBasedExtractor()
    counts: Counter[str] = Counter()
    for conversation in FIXTURES:
        memories = extractor.extract(job(conversation))
        found = pairs(memories)
        expected = {tuple(p) for p in conversation["expect"]}
        neutral = {tuple(p) for p in conversation.get("allow", [])}
        counts["tp"] += len(found & expected)
        counts["fp"] += len(found - expected - neutral)
        counts["fn"] += len(expected - found)
        counts["facts"] += len(conversation.get("facts", []))
        counts["facts_found"] += sum(has_fact(memories, f) for f in conversation.get("facts", []))
        if conversation.get("trap"):
            counts["traps"] += 1
            counts["traps_false"] += bool(false_memories(conversation, memories))
    return {
        "precision": counts["tp"] / max(1, counts["tp"] + counts["fp"]),
        "recall": counts["tp"] / max(1, counts["tp"] + counts["fn"]),
        "fact_recall": counts["facts_found"] / max(1, counts["facts"]),
        "false_memory_rate": counts["traps_false"] / max(1, counts["traps"]),
        "conversations": float(len(FIXTURES)),
        "traps": float(counts["traps"]),
    }


def test_the_hard_cases_are_many_and_varied() -> None:
    assert len(FIXTURES) >= 60
    topics = Counter(c["topic"] for c in FIXTURES)
    assert set(topics) >= {"attribution", "negation", "question", "hypothetical", "reported", "sarcasm",
                           "personal", "multi", "smalltalk"}
    assert min(topics.values()) >= 5
    assert len({c["id"] for c in FIXTURES}) == len(FIXTURES)


def test_floors_on_the_hard_cases() -> None:
    result = scores()
    assert result["recall"] >= 0.8, result
    assert result["precision"] >= 0.8, result
    assert result["fact_recall"] >= 0.7, result
    assert result["false_memory_rate"] <= 0.10, result


@pytest.mark.parametrize("conversation", FIXTURES, ids=[c["id"] for c in FIXTURES])
def test_the_npcs_own_first_person_lines_are_never_the_players(conversation: dict[str, Any]) -> None:
    memories = RuleBasedExtractor().extract(job(conversation))
    for memory in memories:
        if memory.actor != "player":
            continue
        quoted = [text for speaker, text in conversation["turns"] if speaker == conversation["npc"] and text in memory.content]
        for text in quoted:
            assert not text.lower().startswith(("i ", "i'", "i've", "i'll")), (memory, text)


@pytest.mark.parametrize("conversation", [c for c in FIXTURES if c["topic"] == "smalltalk"], ids=lambda c: c["id"])
def test_small_talk_leaves_nothing(conversation: dict[str, Any]) -> None:
    assert RuleBasedExtractor().extract(job(conversation)) == ()


def test_one_conversation_never_yields_the_same_memory_twice() -> None:
    line = ("Alice", "I grew up in Rivermoor, by the salt marshes, and I love the sea.")
    memories = RuleBasedExtractor().extract(job({
        "id": "twice", "npc": "Pell", "player": "Alice", "turns": [line, line, ["Pell", "So you said."]],
    }))
    assert len(memories) == len({m.content for m in memories}) == 1


def test_the_npcs_own_confession_is_its_memory_not_the_players() -> None:
    [memory] = [m for m in RuleBasedExtractor().extract(job(FIXTURES[0])) if "theft" in m.tags]
    assert memory.actor == "npc" and memory.content.startswith("I told Alice")
    assert not memory.claim


def test_a_boast_is_a_claim_and_a_witnessed_deed_is_not() -> None:
    extractor = RuleBasedExtractor()
    boast = extractor.extract(job({"id": "b", "npc": "Pell", "player": "Bram",
                                   "turns": [["Bram", "I saved the village from the wolves."]]}))
    seen = extractor.extract(job({"id": "s", "npc": "Pell", "player": "Bram",
                                  "turns": [["Pell", "You saved the village from the wolves."]]}))
    assert [(m.actor, m.claim) for m in boast if "heroic" in m.tags] == [("player", True)]
    assert [(m.actor, m.claim) for m in seen if "heroic" in m.tags] == [("player", False)]
    assert "told me they" in boast[0].content and "told me they" not in seen[0].content


def test_confidences_and_personal_facts_are_remembered_but_never_passed_on() -> None:
    import esper

    import npc_memory

    plugin = npc_memory.install(world="private", pack="village")
    try:
        plugin.add_npc(key="hilda", name="Hilda", room="forge")
        plugin.add_player(key="alice", name="Alice", room="forge")
        plugin.say("hilda", "alice", "Alice", "Keep this between us: I'm leaving the guild. I grew up in Rivermoor.")
        plugin.say("hilda", "alice", "Hilda", "You stole a loaf from my stall this morning, I saw you do it.")
        plugin.end_conversation("hilda", "alice")
        settle("private")
        tags = {t for m in plugin.memories("hilda", "alice") for t in m.tags}
        assert {"secret", "personal", "theft"} <= tags
        facts = [f for f in plugin.facts("hilda") if f.subject == "alice"]
        travel = [f.tags for f in facts if not f.private]
        assert travel == [("theft",)]  # only the witnessed theft can travel
        assert [(f.attribute, f.private) for f in facts if f.private] == [("origin", True)]  # kept, never told
    finally:
        npc_memory.uninstall("private")
        esper.switch_world("default")


def test_the_demo_holds_no_duplicates_and_no_rumour_its_quote_belies() -> None:
    import re

    import esper

    import npc_memory
    from npc_memory.demo import run_village

    result = run_village(days=7, seed=7, keep_installed=True)
    plugin = result.plugin
    try:
        extractor = RuleBasedExtractor()
        checked = 0
        for npc in plugin.npcs():
            for player in plugin.players():
                said = [m.content for m in plugin.memories(npc, player) if m.source_conversation]
                assert len(said) == len(set(said)), (npc, player, said)  # talk never leaves a copy
            for fact in plugin.facts(npc):
                quoted = re.search(r'\((\w+): "(.*)"\)$', fact.content)
                if fact.source != "gossip" or quoted is None or fact.subject is None:
                    continue
                name = plugin.player(fact.subject).identity.name
                said = extractor.extract(ExtractionJob(
                    conversation="q", npc=npc, npc_name="Someone", player=fact.subject, player_name=name,
                    turns=(Turn(quoted.group(1), quoted.group(2)),)))
                assert set(fact.tags) <= {t for m in said if m.actor == "player" for t in m.tags}, fact.content
                checked += 1
        assert checked  # rumours drawn from conversations did travel
        best = result.report.split("remembers best of each player:\n", 1)[1].split("\n\n", 1)[0]
        for line in best.splitlines():
            recollections = line.split(None, 1)[1].split("; ")
            assert len(recollections) == len(set(recollections)), line
    finally:
        npc_memory.uninstall(plugin.world)
        esper.delete_world(plugin.world)


if __name__ == "__main__":
    for name, value in scores().items():
        print(f"{name:18} {value:.3f}")
