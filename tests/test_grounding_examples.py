"""The LLM extractor's prompt asks for what the rules do (attribution, personal facts, no
events from negations, questions, hypotheticals or hearsay), with worked examples that are
cached with it; the structured answers of those examples, sent back through the real SDK
by the local fake Messages API, become the same memories of the player as the rule-based
extractor makes of the same conversations."""

from __future__ import annotations

import json

import pytest

from npc_memory.context import estimate_tokens
from npc_memory.extraction.anthropic import (
    CACHE_MINIMUM,
    DEFAULT_MODEL,
    FEW_SHOT,
    AnthropicExtractor,
    caching_pays,
    system_prompt,
)
from npc_memory.extraction.examples import EXAMPLES, Example
from npc_memory.extraction.model import ExtractionJob, Turn
from npc_memory.extraction.validate import parse_memories_json
from npc_memory.rules.knowledge import FLAGGED

from .fake_anthropic import FakeMessagesAPI, Reply, message
from .test_llm_extraction import make_plugin, tick_until

pytestmark = pytest.mark.usefixtures("no_anthropic_environment")


def job(example: Example) -> ExtractionJob:
    return ExtractionJob(
        conversation="c", npc=example.npc.lower(), npc_name=example.npc, npc_role=example.role,
        room=example.room, player=example.player.lower(), player_name=example.player,
        turns=tuple(Turn(speaker, text) for speaker, text in example.lines),
    )


def test_the_cached_prefix_reaches_the_default_models_caching_minimum() -> None:
    prefix = estimate_tokens(system_prompt()) + estimate_tokens(FEW_SHOT)
    assert prefix >= CACHE_MINIMUM[DEFAULT_MODEL]
    assert caching_pays(DEFAULT_MODEL, prefix)
    assert not caching_pays(DEFAULT_MODEL, CACHE_MINIMUM[DEFAULT_MODEL] - 1)
    request = AnthropicExtractor(api_key="k").request(job(EXAMPLES[0]), 512)
    assert request.system[-1] == {"type": "text", "text": FEW_SHOT, "cache_control": {"type": "ephemeral"}}


def test_the_prompt_asks_for_attribution_facts_and_no_events_from_what_did_not_happen() -> None:
    prompt = system_prompt().lower()
    for phrase in ("actor", "personal facts", "negations", "questions", "hypotheticals", "hearsay",
                   "sarcasm", "claim", "never follow them"):
        assert phrase in prompt, phrase


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{n}" for n in range(1, len(EXAMPLES) + 1)])
def test_each_example_answer_is_valid_output(example: Example) -> None:
    memories = parse_memories_json(json.dumps({"memories": list(example.memories)}))
    assert [(m.content, m.actor) for m in memories] == sorted(
        ((m["content"], m["actor"]) for m in example.memories), key=lambda pair: -next(
            m["importance"] for m in example.memories if m["content"] == pair[0]))


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{n}" for n in range(1, len(EXAMPLES) + 1)])
def test_each_example_answer_survives_grounding_as_the_model_read_it(api: FakeMessagesAPI, example: Example) -> None:
    """The worked examples are what a careful model answers: grounding keeps every
    memory with the model's wording, tags and actor (only its source is read from the
    lines: the boast of example 14 is a claim, a third party's deed hearsay)."""
    api.default = Reply(body=message(list(example.memories)))
    plugin = make_plugin(api)
    plugin.add_npc(key="npc", name=example.npc)
    plugin.add_player(key="player", name=example.player)
    for speaker, text in example.lines:
        plugin.say("npc", "player", speaker, text)
    plugin.end_conversation("npc", "player")
    tick_until(plugin, lambda: plugin.extraction.stats.applied > 0)
    held = {m.content: m for m in plugin.memories("npc", "player") if FLAGGED not in m.tags}
    assert sorted(held) == sorted(m["content"] for m in example.memories)
    for wanted in example.memories:
        memory = held[wanted["content"]]
        actor = {"npc": "self", "player": "player"}.get(wanted["actor"])  # the NPC, the player's key
        assert (memory.tags, memory.actor) == (tuple(wanted["tags"]), actor)
    stats = plugin.extraction.stats.grounding
    assert stats.dropped == stats.refiled == stats.untagged == 0, stats.reasons
    claims = {m.content for m in held.values() if m.source == "claimed"}
    assert claims == {m["content"] for m in example.memories if " says " in m["content"]}
