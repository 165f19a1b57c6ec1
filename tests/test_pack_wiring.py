"""A pack's content reaches the installed plugin: a new extraction tag with its
relationship rule, context wording levels and gossip trust constants."""

from __future__ import annotations

from pathlib import Path

import npc_memory

from .conftest import settle

SMUGGLING_PACK = """
[pack]
name = "smugglers"

[factions.locals]

[relationships.tag_rules]
smuggling = { trust = -0.2 }

[extraction.tags.smuggling]
description = "moving goods past the watch without paying the toll"
importance = 0.7
valence = "negative"
label = "smuggled goods"

[[extraction.tags.smuggling.cues]]
who = "player"
words = ["smuggl\\\\w*", "past the (?:gate|watch)"]

[memory.consolidation.summaries]
smuggling = "{player} runs contraband through the village"

[context.wording]
untrustworthy_below = 0.45
"""


def test_a_pack_tag_is_extracted_and_moves_the_relationship(tmp_path: Path) -> None:
    pack = tmp_path / "smugglers.toml"
    pack.write_text(SMUGGLING_PACK, encoding="utf-8")
    plugin = npc_memory.install(world="w", pack=pack)
    plugin.add_npc(key="ida", name="Ida", room="gate")
    plugin.add_player(key="cora", name="Cora", room="gate")
    plugin.say("ida", "cora", "Cora", "I smuggled three barrels past the watch last night.")
    plugin.say("ida", "cora", "Ida", "Keep your voice down.")
    assert plugin.end_conversation("ida", "cora") is not None
    settle("w")
    memories = plugin.memories("ida", "cora")
    assert any("smuggling" in m.tags for m in memories), memories
    assert plugin.query.trust("ida", "cora") < 0.5  # the pack's tag rule applied
    context = plugin.context("ida", "cora", "hello")
    assert "untrustworthy" in context.sections["relationship"]  # the pack's wording level (0.45)
