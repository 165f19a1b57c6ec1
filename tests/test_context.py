"""The read path: recall, prompt context within its budget, prompt messages."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.context import ContextRequest, estimate_tokens, terms
from npc_memory.context.builder import TokenBudget

from .conftest import Village, reset_esper, tick


def test_terms_stem_and_fold_irregular_forms() -> None:
    assert terms("Alice haggled over the prices, haggling as always!") == ["alic", "haggl", "pric", "haggl", "alway"]
    assert terms("price haggle horses stories") == terms("prices haggles horse story")
    assert terms("Bram stole two swords; the wolves fled") == ["bram", "steal", "two", "sword", "wolf", "fled"]
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2


def test_recall_ranks_by_relevance_and_salience_and_strengthens(village: Village) -> None:
    p = village.plugin
    sword = p.remember("hilda", "alice", "Alice bought a fine sword for forty gold", tags=["trade"], importance=0.3)
    wolves = p.remember("hilda", "alice", "Alice saved my daughter from the wolves", tags=["heroic"], importance=0.9)
    p.remember("hilda", None, "Wolves howled near the mill all winter", tags=["wolves"], importance=0.5)
    p.remember("hilda", "bram", "Bram stole a sword", tags=["theft"])  # another player: never recalled for Alice
    assert [m.content for m in p.recall("hilda", "alice", "the sword I bought", k=1)] == [sword.content]
    [first, second] = p.recall("hilda", "alice", "wolves", k=2)
    assert first.content == "Wolves howled near the mill all winter"  # tagged wolves too: more relevant
    assert second.content == wolves.content  # a world-scoped memory and one of Alice's
    dull = p.remember("hilda", "alice", "Alice spotted a bear", importance=0.2)
    vivid = p.remember("hilda", "alice", "Alice spotted a stag", importance=0.8)
    assert [m.id for m in p.recall("hilda", "alice", "spotted", k=2)] == [vivid.id, dull.id]  # tie: salience decides
    # Empty query: by salience alone. Recall counts as access.
    assert p.recall("hilda", "alice", "", k=1)[0].id == wolves.id
    again = next(m for m in p.memories("hilda", "alice") if m.id == wolves.id)
    assert again.access_count == 2 and again.last_accessed == p.clock.now  # recalled twice
    assert all("Bram" not in m.content for m in p.recall("hilda", "alice", "sword", k=10))
    assert p.recall("brandt", "alice", "anything") == []
    with pytest.raises(npc_memory.InvalidArgumentError, match="k must be"):
        p.recall("hilda", "alice", "x", k=0)


def test_context_sections_placeholders_and_hearsay(village: Village) -> None:
    p = village.plugin
    stranger = p.context("hilda", "alice", "Hello?")
    assert stranger.placeholders["reputation"] == "stranger (no prior interaction)"
    assert stranger.sections["relationship"] == "You have never dealt with Alice."
    p.say("hilda", "alice", "Alice", "Let me help you with the bellows.")
    p.end_conversation("hilda", "alice")
    tick("test")
    p.learn_fact("hilda", "The bandit chief hides in the old tower", confidence=0.4, importance=0.9)
    p.learn_fact("hilda", "Alice is a knight", subject="alice", topic="rank", confidence=0.3)
    p.learn_fact("hilda", "Alice is a squire", subject="alice", topic="rank", confidence=0.9)
    ctx = p.context("hilda", "alice", "Do you remember me?", max_tokens=400)
    assert ctx.placeholders["reputation"] == "acquaintance (regard them positively)"
    assert set(ctx.sections) == {"relationship", "working_memory", "memories", "knowledge"}
    assert "met once" in ctx.sections["relationship"]
    assert '«Talked with Alice (1 line): "Let me help you with the bellows."»' in ctx.sections["working_memory"]
    assert '«Alice promised me (Alice: "Let me help you with the bellows.")»' in ctx.sections["memories"]
    knowledge = ctx.sections["knowledge"]
    assert "- «Alice is a squire»" in knowledge and "knight" not in knowledge  # only the belief held
    assert "- I heard that «the bandit chief hides in the old tower», but I'm not sure." in knowledge
    assert ctx.text == "\n\n".join(ctx.sections.values()) and ctx.tokens == estimate_tokens(ctx.text)


class Weather:
    name = "weather"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        return f"It is raining in the {request.npc.location.room}." if budget >= 10 else None


def test_custom_providers_share_what_is_left(village: Village) -> None:
    p = village.plugin
    ctx = p.context("hilda", "alice", "hi", providers=[Weather()], max_tokens=100)
    assert ctx.sections == {"weather": "It is raining in the forge."}
    budget = TokenBudget(1000, p.pack.context)
    split = budget.split([Weather(), *npc_memory.context.DEFAULT_PROVIDERS])
    assert split["memories"] == int((1000 - 16 - 5) * 0.45) and split["weather"] == 0  # shares take it all
    with pytest.raises(npc_memory.InvalidArgumentError, match="unique"):
        p.context("hilda", "alice", "hi", providers=[Weather(), Weather()])
    with pytest.raises(npc_memory.InvalidArgumentError, match="max_tokens"):
        p.context("hilda", "alice", "hi", max_tokens=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 600),
    st.lists(st.text(min_size=1, max_size=300).filter(str.strip), min_size=0, max_size=30),
    st.text(max_size=200),
)
def test_the_context_never_exceeds_its_budget(max_tokens: int, contents: list[str], message: str) -> None:
    reset_esper()
    plugin = npc_memory.install(world="c")
    plugin.add_npc(key="hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice")
    for i, content in enumerate(contents):
        plugin.remember("hilda", "alice", content, importance=(i % 10) / 10)
        plugin.learn_fact("hilda", content, topic=f"t{i}", importance=0.6, confidence=(i % 10) / 10)
    ctx = plugin.context("hilda", "alice", message, max_tokens=max_tokens)
    assert estimate_tokens(ctx.text) <= max_tokens and ctx.tokens <= max_tokens


def test_prompt_messages(village: Village) -> None:
    p = village.plugin
    p.remember("hilda", "alice", "Alice bought a sword", tags=["trade"])
    p.say("hilda", "alice", "Hilda", "Back again?")
    p.say("hilda", "alice", "Alice", "I need the sword sharpened.")
    prompt = p.llm.prompt_messages("hilda", "alice", "How much will it cost?")
    assert prompt.system.startswith("You are Hilda, the village blacksmith. Gruff, proud of her craft")
    assert "You will not discuss: the guild's prices." in prompt.system
    assert "Alice bought a sword" in prompt.system and prompt.context.text in prompt.system
    assert prompt.messages == [
        {"role": "user", "content": "(The conversation continues.)"},
        {"role": "assistant", "content": "Back again?"},
        {"role": "user", "content": "«I need the sword sharpened.»"},  # the player's words: quoted data
        {"role": "user", "content": "«How much will it cost?»"},
    ]
    with pytest.raises(npc_memory.NpcMemoryError, match="no LLM is configured"):
        p.llm.reply("hilda", "alice", "Hello")
