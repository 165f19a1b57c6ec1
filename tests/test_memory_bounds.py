"""Per-NPC bounds: past ``memories_per_npc`` the least salient unlocked episodes go, and
past ``players_per_npc`` the players dealt with longest ago are let go, faction
standing following — so memory use levels off under any load."""

from __future__ import annotations

import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.services.relationships import STANDING_TOLERANCE

from .conftest import tick

DAY = 86_400.0


def bounded(**memory: int) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["memory"].update(memory)
    return validate_pack(data)


def test_an_npc_keeps_at_most_memories_per_npc() -> None:
    plugin = npc_memory.install(world="m", pack=bounded(memories_per_npc=20), time_scale=DAY / 10)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice saved my daughter", importance=0.1, locked=True)
    bank = plugin.npc("hilda").bank
    for i in range(30):
        plugin.remember("hilda", "alice" if i % 2 else None, f"thing {i}", importance=0.1 + i / 40)
        assert bank.count() <= 20  # held to the cap as it remembers (every memory at this cap)
    assert bank.count() == 19  # the 21st went down to 90 % (18), then 19, 20, 21 → 18, 19
    tick("m", 12)  # a game day passes: the daily visit finds it within the cap
    assert bank.count() == 19
    contents = {m.content for pair in (bank.world, *bank.players.values()) for m in pair.all()}
    assert "Alice saved my daughter" in contents and "thing 29" in contents and "thing 0" not in contents


def test_an_npc_lets_go_of_the_players_it_dealt_with_longest_ago() -> None:
    plugin = npc_memory.install(world="m", pack=bounded(players_per_npc=10), time_scale=DAY / 10)
    plugin.add_npc(key="brandt", archetype="guard_captain")
    for i in range(12):
        plugin.add_player(key=f"p{i}", faction="thieves")
        plugin.clock.advance(60.0)
        plugin.adjust_relationship("brandt", f"p{i}", trust=-0.3)
        plugin.record_interaction("brandt", f"p{i}")
    tick("m", 12)
    kept = set(plugin.npc("brandt").relationships.by_player)
    assert kept == {f"p{i}" for i in range(3, 12)}  # 12 > 10: the 3 oldest go, 9 stay
    start = plugin.relationship("brandt", "p0").disposition  # p0 counts as a stranger again
    assert plugin.query.standing("guards", "p0") == pytest.approx(start)
    # Standing counts the written disposition, which drift keeps within its tolerance.
    assert plugin.query.standing("guards", "p11") == pytest.approx(
        plugin.query.disposition("brandt", "p11"), abs=STANDING_TOLERANCE
    )


@pytest.mark.parametrize("cap", [40, 400])
def test_memories_stay_bounded_however_many_come_without_a_decay_visit(cap: int) -> None:
    """No tick between the memories: the bound holds without DecaySystem, within 1/20."""
    plugin = npc_memory.install(world="m", pack=bounded(memories_per_npc=cap), time_scale=1.0)
    plugin.add_npc(key="hilda")
    players = [plugin.add_player(key=f"p{i}") for i in range(8)]
    bank = plugin.npc("hilda").bank
    most = 0
    for i in range(cap * 5):
        plugin.remember("hilda", players[i % 8], f"errand {i}", importance=0.5)
        most = max(most, bank.count())
    assert cap * 0.9 <= most <= cap + cap // 20
    assert any(m.content == f"errand {cap * 5 - 1}" for pair in bank.players.values() for m in pair.all())


def test_players_stay_bounded_within_ticks_not_only_on_the_daily_visit() -> None:
    """Many new players a game hour: each tick holds the NPC to ``players_per_npc``
    (with 1/10 of slack: it goes down to 90 % when over), whatever the decay cycle."""
    plugin = npc_memory.install(
        world="m", pack=bounded(players_per_npc=10), time_scale=60.0, deterministic=True
    )  # count caps only: on a loaded machine the time budget could leave the shedding for a later tick
    plugin.add_npc(key="brandt", archetype="guard_captain")
    handle = plugin.npc("brandt")
    decay = next(p for p in plugin.processors if type(p).__name__ == "DecaySystem")
    tick("m")  # the first cycle starts (and ends) here; the next is a game day away
    cycles = decay.cursor.cycles
    most = 0
    for i in range(60):
        plugin.add_player(key=f"p{i}")
        if i % 2:
            plugin.adjust_relationship("brandt", f"p{i}", trust=0.1)
        else:
            plugin.remember("brandt", f"p{i}", f"p{i} asked the way", importance=0.3)
        most = max(most, len(set(handle.bank.players) | set(handle.relationships.by_player)))
        tick("m")
        assert len(set(handle.bank.players) | set(handle.relationships.by_player)) <= 10
    assert decay.cursor.cycles == cycles  # no daily visit did it
    assert most == 11
    assert "p58" in handle.bank.players and "p59" in handle.relationships.by_player
    assert "p0" not in handle.bank.players and "p1" not in handle.relationships.by_player  # longest ago


def test_players_stay_under_the_hard_bound_however_many_come_between_ticks() -> None:
    """No tick at all (more new players than DecaySystem could visit): an NPC reaching a
    quarter over ``players_per_npc`` is held to the cap as it takes on the next one."""
    plugin = npc_memory.install(world="m", pack=bounded(players_per_npc=20), time_scale=60.0)
    plugin.add_npc(key="oswin")
    handle = plugin.npc("oswin")
    most = 0
    for i in range(200):
        plugin.add_player(key=f"p{i}")
        plugin.clock.advance(1.0)
        if i % 3:
            plugin.adjust_relationship("oswin", f"p{i}", trust=0.05)
        else:
            plugin.remember("oswin", f"p{i}", f"p{i} bought a lamp", importance=0.3)
        most = max(most, len(handle.bank.players.keys() | handle.relationships.by_player.keys()))
    assert most == 25  # 20 + 20 // 4: the next player brings it back to 90 % of 20
    held = handle.bank.players.keys() | handle.relationships.by_player.keys()
    assert "p199" in held and "p0" not in held  # the newest stay, the longest ago went


def test_an_npc_forgets_its_count_of_conversations_with_a_player_it_lets_go() -> None:
    """The count that numbers a pair's conversation ids goes with the player, so it does
    not grow with every player an NPC ever met; numbering starts again past any id the
    NPC still holds, so a returning player's conversation is extracted, not taken for
    one already extracted."""
    plugin = npc_memory.install(world="m", pack=bounded(players_per_npc=4), time_scale=60.0, deterministic=True)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    handle = plugin.npc("hilda")

    def talk(player: str) -> str:
        plugin.say("hilda", player, player.title(), "I rescued your brother from the bandits at the mill.")
        plugin.say("hilda", player, "Hilda", "You saved him? Thank you, I owe you.")
        ended = plugin.end_conversation("hilda", player)
        assert ended is not None
        tick("m", 2)
        return ended.conversation

    for i in range(12):
        plugin.add_player(key=f"p{i}")
        plugin.clock.advance(60.0)
        talk(f"p{i}")
        assert len(handle.working.conversations) <= 5  # 4 + 4 // 4: held to the cap as it meets the next
    assert "p0" not in handle.working.conversations and "hilda/p0/1" in handle.working.extracted
    before = plugin.memories("hilda", "p0")
    again = talk("p0")
    assert again == "hilda/p0/2"  # hilda/p0/1 is still among the extracted ids
    assert len(plugin.memories("hilda", "p0")) > len(before)  # extracted, not dropped as a repeat
