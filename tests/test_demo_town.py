"""The town scenario: a deterministic town at scale where everything the plugin does
happens — schedules, witnessed deeds and their rumours, forgetting, consolidation,
habits, conversations — and a story that tells it."""

from __future__ import annotations

import json
from functools import cache

import pytest

import npc_memory
from npc_memory.demo import Story, run_town
from npc_memory.demo.story import Chronicle
from npc_memory.demo.town import ROSTER, STYLES
from npc_memory.errors import InvalidArgumentError


@cache
def fortnight() -> Story:
    story = run_town(days=14, npcs=200, players=8, seed=7).story
    assert story is not None
    return story


def test_same_seed_same_town_different_seed_different_town() -> None:
    first = run_town(days=2, npcs=100, players=4, seed=5).story
    again = run_town(days=2, npcs=100, players=4, seed=5).story
    other = run_town(days=2, npcs=100, players=4, seed=6).story
    assert first is not None and again is not None and other is not None
    same, again_data = first.to_json(), again.to_json()
    assert same.pop("tick_ms").keys() == again_data.pop("tick_ms").keys()  # wall-clock times differ
    assert json.dumps(same) == json.dumps(again_data)
    assert first.text() != other.text()


def test_every_play_style_is_present_and_judged_by_its_deeds() -> None:
    story = fortnight()
    assert sorted(set(story.styles.values())) == sorted(STYLES)
    by_style = story.summary["reputation_by_style"]
    assert by_style["thief"] < 0 < min(by_style["helper"], by_style["trader"], by_style["newcomer"])


def test_npcs_keep_their_schedules() -> None:
    # On a working morning the fields hold farmers only: whoever sees a deed there works there.
    story = fortnight()
    farmers = {f"n{i:04d}" for i in range(200) if ROSTER[i % len(ROSTER)] == "farmer"}
    in_the_fields = [
        d for d in story.deeds
        if d.room.endswith(" fields") and 8 * 3600 <= d.time % 86400 < 18 * 3600 and d.day % 7 != 0
    ]
    assert in_the_fields
    assert all(set(d.witnesses) <= farmers for d in in_the_fields)
    # In the evening the same farmers are at the inn or at home, never in the fields.
    evening = [d for d in story.deeds if d.room.endswith(" inn") and d.time % 86400 >= 19 * 3600]
    assert any(set(d.witnesses) & farmers for d in evening)


def test_deeds_travel_as_rumours_hop_by_hop() -> None:
    story = fortnight()
    deed = story.farthest()
    assert deed is not None and deed.reach >= 10 and deed.farthest >= 3
    heard_from: dict[str, float] = {}
    for hop in sorted(deed.hops, key=lambda h: h.time):
        # a teller knew it first-hand or had heard it earlier; confidence never rises
        assert hop.teller in deed.witnesses or hop.teller in heard_from
        if hop.teller in heard_from:
            assert hop.confidence <= heard_from[hop.teller]
        heard_from.setdefault(hop.listener, hop.confidence)
    assert story.summary["farthest_rumour"].startswith(f'"{deed.content}"')


def test_forgetting_consolidation_and_habits_happen() -> None:
    story = fortnight()
    kinds = {c.kind for c in story.changes}
    assert {"forgotten", "consolidated", "habit"} <= kinds
    forgotten = [c for c in story.changes if c.kind == "forgotten"]
    assert all("asked" in c.content for c in forgotten)  # the small things fade first
    consolidated = [c for c in story.changes if c.kind == "consolidated"]
    assert all(c.episodes >= 2 for c in consolidated)  # what a conversation gave is not summed up
    habit = next(c for c in story.changes if c.kind == "habit")
    assert "usually" in habit.content  # at the time of day most of its episodes happened
    assert any(f"in the {part}" in habit.content for part in ("morning", "afternoon", "evening", "night"))
    assert story.census[-1].semantic >= 1 and story.census[-1].procedural >= 1
    assert sum(c.forgotten for c in story.census) == len(forgotten)
    assert story.summary["conversations"]["extracted"] > 0


def test_relationship_moments_say_what_moved_them() -> None:
    story = fortnight()
    hostile = [m for m in story.moments if m.what.endswith("-> Hostile")]
    assert hostile and all(m.because for m in hostile)
    assert any(story.styles[m.player] == "thief" for m in hostile)
    assert all(m.because for m in story.moments if m.what.endswith("as acquaintance (was stranger)"))


def test_the_story_tells_each_day_and_then_sums_up() -> None:
    story = fortnight()
    text = story.text()
    assert text.startswith("npc-memory demo: town, 200 NPCs in 2 districts, 8 players, 14 game days, seed 7")
    assert all(f"\nDay {day}\n" in text for day in range(1, 15))
    assert "forgot:" in text and "learned a habit:" in text and "the rumour reached" in text
    assert "Summary after 14 game days:" in text
    quiet = story.text(quiet=True)
    assert "\nDay 1\n" not in quiet and "Summary after 14 game days:" in quiet
    data = json.loads(json.dumps(story.to_json()))
    assert [d["day"] for d in data["days_told"]] == list(range(1, 15))
    assert data["summary"]["deeds_witnessed"] == len(story.deeds)
    assert len(data["trajectories"]) <= 20


def test_a_town_needs_people() -> None:
    with pytest.raises(InvalidArgumentError, match="npcs"):
        run_town(days=1, npcs=5)
    with pytest.raises(InvalidArgumentError, match="players"):
        run_town(days=1, npcs=100, players=0)


def test_a_change_for_the_worse_is_put_down_to_what_points_that_way() -> None:
    """A moment's reasons are the NPC's memories of the player that point the way the
    relationship moved: not the fair trade it liked when it now sees a rival."""
    plugin = npc_memory.install(world="moments", pack="village", seed=1, deterministic=True)
    chronicle = Chronicle(plugin, "moments", 1, {"bram": "thief"})
    plugin.add_npc(key="wren", name="Wren", archetype="merchant", room="market")
    plugin.add_player(key="bram", name="Bram", faction="adventurers", room="market")
    plugin.remember("wren", "bram", "Bram sold me goods at a fair price", tags=["trade"], importance=0.9,
                    valence="positive")
    plugin.remember("wren", "bram", "Bram pocketed a ring from my stall", tags=["theft"], importance=0.6,
                    valence="negative")
    plugin.adjust_relationship("wren", "bram", trust=+0.3, friendliness=+0.3)
    plugin.adjust_relationship("wren", "bram", trust=-0.9, friendliness=-0.9, respect=-0.9, loyalty=-0.9)
    moments = chronicle.story.moments
    better = [m for m in moments if m.what.endswith("-> TrustedAlly")]
    worse = [m for m in moments if m.what.endswith(("-> Hostile", "-> Despised")) or "as enemy" in m.what]
    assert len(better) == 1 and len(worse) == 3, [m.what for m in moments]
    assert better[0].because == ["Bram sold me goods at a fair price"]
    assert all(m.because == ["Bram pocketed a ring from my stall"] for m in worse)
