"""The conversations the rule extractor's golden output covers (see
tests/fixtures/rule_extractor_golden.json and tests/test_pack_content.py).

Every fixture conversation as written, then every line of every fixture conversation said
alone by the player and alone by the NPC, so each cue, speaker rule and negation is seen
from both sides, and a few hand-written edge cases (long quotes, heat, habits of every
group, negations). The golden file was recorded from the extractor before its cues moved
into the content pack; the default rules must reproduce it byte for byte.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, Turn

FIXTURES_DIR = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES_DIR / "rule_extractor_golden.json"


def conversations() -> list[dict[str, Any]]:
    return list(tomllib.loads((FIXTURES_DIR / "conversations.toml").read_text("utf-8"))["conversation"])


def _job(conversation: dict[str, Any], turns: tuple[Turn, ...]) -> ExtractionJob:
    return ExtractionJob(
        conversation=conversation["id"], npc=conversation["npc"].lower(), npc_name=conversation["npc"],
        npc_role=conversation["role"], player=conversation["player"].lower(),
        player_name=conversation["player"], turns=turns,
    )


EDGE_CASES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("long-quote", (("Alice", "I bought " + "a very long story about rope and twine, " * 6 + "for ten silver."),)),
    ("heat", (("Alice", "Traitor! You lied to me! I'll never forget this, I'll burn your house!"),
              ("Hilda", "Please, please! I never betrayed you!"))),
    ("habit-deed", (("Hilda", "You always help me carry the coal, every morning."),
                    ("Alice", "Let me help, as usual."))),
    ("habit-threat", (("Alice", "Pay up every week or else."),)),
    ("habit-secret", (("Alice", "Every night I tell you a secret, between us."),)),
    ("habit-personal", (("Alice", "I grew up in Rivermoor and I always go back."),)),
    ("all-groups", (("Alice", "I stole the gift, you idiot, and it's a secret. I grew up poor."),
                    ("Hilda", "You saved us from the bandits, but you lied to me. How much for the sword?"))),
    ("negated", (("Alice", "I didn't steal it. I won't ever hurt you. I'm not a traitor."),
                 ("Alice", "I can't pay, I don't buy anything."))),
    ("negated-then-not", (("Alice", "I didn't steal the bread, but I stole the apples."),)),
    ("player-by-key", (("alice", "Take this, it's for you."),)),
    ("numbers", (("Hilda", "That's 12 gold, or twenty silver."),)),
    ("empty", ()),
)


def cases() -> Iterator[tuple[str, ExtractionJob]]:
    """(case id, job) for every golden case, in a stable order."""
    for conversation in conversations():
        turns = tuple(Turn(speaker, text) for speaker, text in conversation["turns"])
        yield conversation["id"], _job(conversation, turns)
    for conversation in conversations():
        for index, (_, text) in enumerate(conversation["turns"]):
            for role in ("player", "npc"):
                speaker = conversation["player"] if role == "player" else conversation["npc"]
                yield f"{conversation['id']}/{index}/{role}", _job(conversation, (Turn(speaker, text),))
    base = {"id": "edge", "npc": "Hilda", "role": "the village blacksmith", "player": "Alice"}
    for name, lines in EDGE_CASES:
        yield f"edge/{name}", _job(base, tuple(Turn(speaker, text) for speaker, text in lines))


def encode(memories: tuple[ExtractedMemory, ...]) -> str:
    return msgspec.json.encode(memories).decode("utf-8")
