"""Selective use of the model: a pack's archetypes and a game's choice say which NPCs'
conversations the LLM extracts (the rest go to the rule reader), and when the day's
budget runs low only the priority NPCs keep it. Through the real SDK and the fake API."""

from __future__ import annotations

import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import InvalidArgumentError, PackError
from npc_memory.events import MemoriesExtracted

from .fake_anthropic import FakeMessagesAPI
from .test_llm_extraction import llm_pack, make_plugin, tick_until

pytestmark = pytest.mark.usefixtures("no_anthropic_environment")


def extracted_by(plugin: npc_memory.MemoryPlugin, npc: str) -> MemoriesExtracted:
    seen: list[MemoriesExtracted] = []
    subscription = plugin.on(MemoriesExtracted, seen.append)
    plugin.say(npc, "alice", "Alice", "I'll fight the bandits with you. Together we'll drive them off.")
    plugin.say(npc, "alice", plugin.npc(npc).identity.name, "Bandits are attacking the village! Help me!")
    plugin.end_conversation(npc, "alice")
    tick_until(plugin, lambda: bool(seen))
    subscription.cancel()
    return seen[0]


def test_only_the_packs_archetypes_get_the_model(api: FakeMessagesAPI) -> None:
    plugin = make_plugin(api, llm_pack(extraction_archetypes=["guard_captain"]))
    plugin.add_npc(key="brandt", name="Brandt", archetype="guard_captain", room="forge")
    smith = extracted_by(plugin, "hilda")
    assert (smith.source, smith.reason) == ("rules", "rules: not chosen for the llm") and api.requests == []
    captain = extracted_by(plugin, "brandt")
    assert captain.source == "llm" and len(api.requests) == 1
    assert plugin.extraction.stats.fallbacks == {"rules: not chosen for the llm": 1}


def test_a_game_chooses_per_npc(api: FakeMessagesAPI) -> None:
    plugin = make_plugin(api, llm_pack(extraction_archetypes=["guard_captain"]))
    plugin.llm.set_extraction("hilda", True)
    assert extracted_by(plugin, "hilda").source == "llm"
    plugin.llm.set_extraction("hilda", False)
    assert extracted_by(plugin, "hilda").source == "rules"
    plugin.llm.set_extraction("hilda", None)  # back to the pack's word: not a guard captain
    assert extracted_by(plugin, "hilda").reason == "rules: not chosen for the llm"
    with pytest.raises(InvalidArgumentError, match="use must be True, False or None"):
        plugin.llm.set_extraction("hilda", "yes")  # type: ignore[arg-type]


def test_when_the_budget_runs_low_only_priority_npcs_keep_the_model(api: FakeMessagesAPI) -> None:
    plugin = make_plugin(api, llm_pack(daily_tokens=1_000_000, priority_archetypes=["guard_captain"]))
    plugin.add_npc(key="brandt", name="Brandt", archetype="guard_captain", room="forge")
    plugin.add_npc(key="edda", name="Edda", archetype="farmer", room="forge")
    assert extracted_by(plugin, "hilda").source == "llm"
    plugin.extraction.limiter.reserve("elsewhere", 850_000)  # 15 % of the day's tokens left
    low = extracted_by(plugin, "hilda")
    assert (low.source, low.reason) == ("rules", "rules: budget low, the llm kept for priority npcs")
    assert extracted_by(plugin, "brandt").source == "llm"  # a priority archetype
    plugin.llm.set_extraction("edda", None, priority=True)  # the game's priority NPC
    assert extracted_by(plugin, "edda").source == "llm"


def test_a_pack_naming_an_unknown_archetype_is_refused() -> None:
    data = load_pack("village").model_dump()
    data["llm"].update(extraction_archetypes=["dragon"])
    with pytest.raises(PackError, match=r"llm.extraction_archetypes.*unknown archetype 'dragon'"):
        validate_pack(data)
