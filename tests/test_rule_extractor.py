"""The rule-based extractor on the fixture set of realistic game conversations:
precision and recall floors, kinds, small talk yields nothing, determinism."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from npc_memory.extraction.model import ExtractionJob, Turn
from npc_memory.extraction.rules import RULE_TAGS, RuleBasedExtractor, summarize

FIXTURES = tomllib.loads((Path(__file__).parent / "fixtures" / "conversations.toml").read_text())["conversation"]
REQUIRED_TAGS = {"trade", "helpful", "heroic", "combat", "threat", "betrayal", "gift", "insult", "quest", "secret"}


def job(conversation: dict[str, Any]) -> ExtractionJob:
    return ExtractionJob(
        conversation=conversation["id"], npc=conversation["npc"].lower(), npc_name=conversation["npc"],
        npc_role=conversation["role"], player=conversation["player"].lower(), player_name=conversation["player"],
        turns=tuple(Turn(speaker, text) for speaker, text in conversation["turns"]),
    )


def scores() -> dict[str, float]:
    extractor = RuleBasedExtractor()
    tp = fp = fn = kinds = quiet = quiet_total = 0
    for conversation in FIXTURES:
        memories = [m for m in extractor.extract(job(conversation)) if m.tags]  # gist has no tags
        predicted = {t for m in memories for t in m.tags}
        expected = set(conversation["expected_tags"])
        tp, fp, fn = tp + len(predicted & expected), fp + len(predicted - expected), fn + len(expected - predicted)
        kinds += {m.kind for m in memories if m.actor == "player"} == set(conversation["expected_kinds"])
        if not expected:
            quiet_total += 1
            quiet += not [m for m in memories if m.actor == "player"]
    return {"precision": tp / (tp + fp), "recall": tp / (tp + fn), "kinds": kinds / len(FIXTURES),
            "small_talk_silent": quiet / quiet_total}


def test_the_fixture_set_is_large_and_covers_every_required_tag() -> None:
    assert len(FIXTURES) >= 40
    covered = {t for c in FIXTURES for t in c["expected_tags"]}
    assert REQUIRED_TAGS <= covered <= RULE_TAGS
    assert sum(1 for c in FIXTURES if not c["expected_tags"]) >= 6
    assert {k for c in FIXTURES for k in c["expected_kinds"]} == {"episodic", "semantic", "procedural"}


def test_precision_and_recall_floors() -> None:
    result = scores()
    # This set was labelled by keyword (any "wolves" is a fight, a quest asked is a quest
    # taken); the clause-reading rules measure 0.88 precision, 0.85 recall on it. The
    # conversations that expect nothing leave no tagged memory of the player. The hard
    # cases of real speech are graded in tests/test_real_dialogue.py.
    assert result["precision"] >= 0.85, result
    assert result["recall"] >= 0.80, result
    assert result["kinds"] >= 0.75, result
    assert result["small_talk_silent"] == 1.0, result


@pytest.mark.parametrize("conversation", FIXTURES, ids=[c["id"] for c in FIXTURES])
def test_each_extraction_is_bounded_valid_and_deterministic(conversation: dict[str, Any]) -> None:
    extractor = RuleBasedExtractor()
    first = extractor.extract(job(conversation))
    assert first == RuleBasedExtractor().extract(job(conversation))
    assert len(first) <= max(3, len(conversation["turns"]))
    for memory in first:
        assert 0.0 <= memory.importance <= 1.0 and 0.0 <= memory.intensity <= 1.0
        assert set(memory.tags) <= RULE_TAGS and len(memory.content) <= 500
        assert conversation["player"] in memory.content


def test_negation_and_speaker_matter() -> None:
    extractor = RuleBasedExtractor()

    def tags(*turns: tuple[str, str]) -> set[str]:
        return {t for m in extractor.extract(ExtractionJob(
            conversation="c", npc="n", npc_name="Nix", player="p", player_name="Bram",
            turns=tuple(Turn(*t) for t in turns))) for t in m.tags}

    assert tags(("Bram", "I would never steal from you.")) == set()
    assert tags(("Bram", "I stole your purse.")) == {"theft"}
    assert tags(("Nix", "You useless idiot.")) == set()  # the NPC insulting: not the player's deed
    assert tags(("Bram", "You useless idiot.")) == {"insult"}
    assert tags(("Bram", "Hello!"), ("Nix", "Hello, friend.")) == set()


def test_the_bandit_conversation() -> None:
    memories = RuleBasedExtractor().extract(ExtractionJob(
        conversation="c", npc="hilda", npc_name="Hilda", player="alice", player_name="Alice",
        turns=(Turn("Alice", "Bandits are attacking the village! Help me!"),
               Turn("Hilda", "I'll get my hammer. Together we'll drive them off."))))
    # Hilda's own resolve is her memory, never a deed of Alice's.
    [memory] = [m for m in memories if m.tags]
    assert memory.actor == "npc" and memory.content.startswith('I told Alice: "I\'ll get my hammer.')
    assert memory.tags == ("heroic", "combat") and memory.kind == "episodic"
    assert all(m.actor == "npc" or not m.tags for m in memories)


def test_summary() -> None:
    summary = summarize(job(FIXTURES[0]))
    assert summary == 'Talked with Alice (3 lines): "I\'ll get my sword. Together we\'ll drive them off."'
