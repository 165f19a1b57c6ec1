"""The readers use ``actor`` and ``source``: the query API counts the player's own deeds
and words by default (claims and hearsay when asked), relationships move less for a
claim or hearsay and never for someone else's deed, and the context words each source
as what it is."""

from __future__ import annotations

from collections.abc import Iterator

import esper
import pytest

import npc_memory
from npc_memory.errors import InvalidArgumentError

WORLD = "actor-readers"


@pytest.fixture
def plugin() -> Iterator[npc_memory.MemoryPlugin]:
    plugin = npc_memory.install(world=WORLD, pack="village", seed=3, deterministic=True)
    esper.switch_world(WORLD)
    plugin.add_npc(key="hilda", name="Hilda", room="forge")
    plugin.add_npc(key="oswin", name="Oswin", room="forge")
    plugin.add_player(key="alice", name="Alice", room="forge", consent=True)
    plugin.add_player(key="milo", name="Milo", room="forge", consent=True)
    yield plugin
    npc_memory.uninstall(WORLD)


def test_queries_count_the_players_own_deeds_unless_told_otherwise(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", "alice", "Alice stole a pie", tags=["theft"])  # authored
    plugin.remember("hilda", "alice", "I stole bread as a lad", tags=["theft"], actor="self", source="said")
    plugin.remember("hilda", "alice", "Milo stole my purse", tags=["theft"], actor="milo", source="heard",
                    teller="alice")
    plugin.remember("hilda", "alice", "Alice says she robbed the magistrate", tags=["theft"], source="claimed")
    plugin.remember("hilda", "alice", "Alice cheats at dice, they say", tags=["theft"], source="heard",
                    teller="oswin")
    query = plugin.query
    assert query.count_memories_by_tag("hilda", "alice", "theft") == 1
    assert query.count_memories_by_tag("hilda", "alice", "theft", include=["claimed"]) == 2
    assert query.count_memories_by_tag("hilda", "alice", "theft", include=["claimed", "heard"]) == 3
    assert query.count_memories_by_tag("hilda", "milo", "theft") == 0  # only heard of, from Alice
    assert query.count_memories_by_tag("hilda", "milo", "theft", include=["heard"]) == 1  # filed under Alice
    assert query.has_memory_matching("hilda", "alice", ["theft"], min_importance=0.5)
    assert not query.has_memory_matching("hilda", "milo", ["theft"])
    assert query.has_memory_matching("hilda", "milo", ["theft"], include=["heard"])
    assert query.count_memories_by_tag("hilda", None, "theft") == 0  # the world: every memory there
    with pytest.raises(InvalidArgumentError, match="include takes 'claimed' and 'heard', got 'said'"):
        query.count_memories_by_tag("hilda", "alice", "theft", include=["said"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="include must be a list of sources"):
        query.count_memories_by_tag("hilda", "alice", "theft", include="claimed")  # type: ignore[arg-type]


def trust_moved(plugin: npc_memory.MemoryPlugin, player: str, **kwargs: object) -> float:
    before = plugin.query.trust("hilda", player)
    plugin.remember("hilda", player, "A deed", tags=["heroic"], importance=1.0, affect_relationship=True,
                    **kwargs)  # type: ignore[arg-type]
    return plugin.query.trust("hilda", player) - before


def test_a_claim_or_hearsay_moves_less_than_a_deed_and_anyone_elses_deed_not_at_all(
    plugin: npc_memory.MemoryPlugin,
) -> None:
    seen = trust_moved(plugin, "alice", source="witnessed")
    claimed = trust_moved(plugin, "alice", source="claimed")
    heard = trust_moved(plugin, "alice", source="heard", teller="oswin")
    own = trust_moved(plugin, "alice", actor="self", source="said")
    third = trust_moved(plugin, "alice", actor="milo", source="witnessed")
    assert seen > 0 and 0 < claimed < seen and 0 < heard < seen
    weights = plugin.pack.relationships.claim_weight, plugin.pack.knowledge.hearsay_factor
    assert claimed == pytest.approx(seen * weights[0], rel=0.05)
    assert heard == pytest.approx(seen * weights[1], rel=0.05)
    assert own == 0 and third == 0


def test_context_words_each_source_as_what_it_is(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", "alice", "Alice mended my bellows", tags=["helpful"], source="witnessed")
    plugin.remember("hilda", "alice", 'Alice said: "I grew up in Dunmere."', source="said")
    plugin.remember("hilda", "alice", "Alice says she slew the wolf of Harrow Hill", source="claimed")
    plugin.remember("hilda", "alice", "Alice cheats at dice", source="heard", teller="oswin")
    plugin.remember("hilda", "alice", 'I told Alice: "I stole bread as a lad."', actor="self", source="said")
    section = plugin.context("hilda", "alice", "bellows Dunmere wolf dice bread", max_tokens=1500).sections[
        "memories"
    ]
    expected = {
        "What you saw of Alice:": "Alice mended my bellows",
        "What Alice told you:": "I grew up in Dunmere",
        "What Alice claims (you did not see it):": "slew the wolf",
        "What you heard, and from whom:": "Alice cheats at dice",
        "What you told Alice:": "I stole bread",
    }
    lines = section.splitlines()
    for header, content in expected.items():
        assert header in lines, (header, section)
        below = lines[lines.index(header) + 1]
        assert content in below, (header, section)
    assert "from Oswin" in lines[lines.index("What you heard, and from whom:") + 1]


def test_what_a_witness_saw_is_never_told_as_hearsay(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.observe(room="forge", subject="milo", content="Milo stole a purse from Bo", tags=["theft"])
    context = plugin.context("hilda", "milo", "the purse", max_tokens=1500)
    assert "What you saw of Milo:\n- «Milo stole a purse from Bo»" in context.sections["memories"]
    assert "Milo stole a purse" not in context.sections.get("knowledge", "")
    assert "heard" not in context.text.split("What you saw of Milo:")[1].split("\n")[1]
