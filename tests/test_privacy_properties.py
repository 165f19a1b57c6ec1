"""Hypothesis properties of the privacy model, over random worlds and random sequences
of calls: after ``forget_player(p)`` nothing anywhere holds p's key or name; after
``end_game()`` no ``session`` or ``anon`` item survives a save and a reload; a clone's
dry run is exactly what the real run copies."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.events import FactLearned
from npc_memory.store.tools import export_store

from .conftest import reset_esper
from .privacy_world import fold, run, traces


@contextlib.contextmanager
def store_dir() -> Iterator[Path]:
    """A store directory for one example; every plugin is uninstalled before it goes."""
    reset_esper()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            yield Path(tmp) / "w.db"
        finally:
            reset_esper()

ROOMS = ("square", "forge", "inn")
TAGS = ("helpful", "trade", "gift", "combat", "theft", "heroic")


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    consent: bool
    anonymous: bool


def people(draw: st.DrawFn) -> list[Person]:
    """Two to four players with distinctive keys and names (no one's is part of another's)."""
    count = draw(st.integers(2, 4))
    out = []
    for i in range(count):
        flavour = draw(st.sampled_from(["consent", "plain", "anon"]))
        out.append(Person(f"qk{i}x{draw(st.integers(100, 999))}", f"Zyv{'abcd'[i]}ora", flavour == "consent", flavour == "anon"))
    return out


@st.composite
def worlds(draw: st.DrawFn) -> tuple[int, list[Person], list[tuple[str, int, int, int, int]]]:
    """NPC count, players, and a sequence of calls (kind, and numbers picking who/what)."""
    npcs = draw(st.integers(1, 4))
    players = people(draw)
    kinds = st.sampled_from(["remember", "world", "talk", "observe", "fact", "adjust", "tick", "save", "move"])
    calls = draw(
        st.lists(
            st.tuples(kinds, st.integers(0, 99), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)),
            min_size=5,
            max_size=30,
        )
    )
    return npcs, players, calls


def play(plugin: npc_memory.MemoryPlugin, npcs: int, players: list[Person], calls: list[tuple[str, int, int, int, int]]) -> None:
    world = plugin.world
    for i in range(npcs):
        plugin.add_npc(key=f"npc{i}", name=f"Npc{i}", archetype="bard", room=ROOMS[i % len(ROOMS)])
    for p in players:
        plugin.add_player(key=p.key, name=p.name, room="square", consent=p.consent, anonymous=p.anonymous)
    for kind, a, b, c, d in calls:
        npc, player, other = f"npc{a % npcs}", players[b % len(players)], players[c % len(players)]
        tag = TAGS[d % len(TAGS)]
        if kind == "remember":
            plugin.remember(npc, player.key, f"{player.name} and {other.name} did {tag}", tags=[tag], importance=0.7)
        elif kind == "world":
            plugin.remember(npc, None, f"I saw {player.name} near the {ROOMS[d % 3]}", importance=0.6)
        elif kind == "talk":
            plugin.say(npc, player.key, player.name, f"I will help you, ask {other.name}! {tag}")
            if d % 2:
                plugin.end_conversation(npc, player.key)
        elif kind == "observe":
            plugin.observe(room=ROOMS[d % 3], subject=player.key, content=f"{player.name} did {tag}", tags=[tag], importance=0.8)
        elif kind == "fact":
            plugin.learn_fact(npc, f"{player.name} knows {other.name}", subject=player.key, tags=[tag], importance=0.9)
        elif kind == "adjust":
            plugin.adjust_relationship(npc, player.key, trust=0.1)
        elif kind == "tick":
            run(world, 1 + d % 20, dt=600.0)
        elif kind == "save":
            plugin.save()
            fold(plugin)
        else:
            plugin.move(npc, ROOMS[d % 3])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.integers(0, 3))
def test_after_forget_player_no_file_export_context_recall_or_gossip_holds_them(
    world: tuple[int, list[Person], list[tuple[str, int, int, int, int]]], pick: int
) -> None:
    npcs, players, calls = world
    gone = players[pick % len(players)]
    with store_dir() as db:
        plugin = npc_memory.install(world="prop", store=db, seed=pick)
        play(plugin, npcs, players, calls)
        plugin.save()
        plugin.privacy.forget_player(gone.key)
        assert traces(db, gone.key, gone.name) == []
        heard: list[FactLearned] = []
        plugin.on(FactLearned, heard.append)
        run("prop", 50, dt=600.0)
        for event in heard:
            fact = next(f for f in plugin.facts(event.npc, include_disbelieved=True) if f.id == event.fact)
            assert gone.name not in fact.content and event.subject != gone.key
        stays = [p for p in players if p is not gone]
        for npc in plugin.npcs():
            for p in stays:
                text = plugin.context(npc, p.key, f"What about {gone.name}?", max_tokens=3000).text
                assert gone.name not in text and gone.key not in text
                assert all(gone.name not in m.content for m in plugin.recall(npc, p.key, gone.name, k=50))
        npc_memory.uninstall("prop")
        assert traces(db, gone.key, gone.name) == []
        export = export_store(db).lower()
        assert gone.key.encode() not in export and gone.name.lower().encode() not in export


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_after_end_game_no_session_or_anon_item_survives_a_save_and_reload(
    world: tuple[int, list[Person], list[tuple[str, int, int, int, int]]],
) -> None:
    npcs, players, calls = world
    with store_dir() as db:
        plugin = npc_memory.install(world="prop", store=db, seed=1, game_id="g1")
        play(plugin, npcs, players, calls)
        plugin.privacy.end_game()
        run("prop", 5, dt=1.0)  # extraction results still in flight for the ended game are dropped
        npc_memory.uninstall("prop")
        plugin = npc_memory.install(world="prop", store=db, seed=1, game_id="g2")
        for key in plugin.storage.stored_npcs():
            npc = plugin.npc(key)
            memories = [m for p in (npc.bank.world, *npc.bank.players.values()) for m in p.all()]
            assert not [m for m in memories if m.scope in ("session", "anon")], key
            assert not [f for f in npc.knowledge.facts if f.scope in ("session", "anon")], key
            anonymous = {p.key for p in players if p.anonymous}
            assert not anonymous & set(npc.relationships.by_player), key
        npc_memory.uninstall("prop")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.lists(st.sampled_from(["profile", "social", "knowledge"]), min_size=1, max_size=3, unique=True))
def test_a_clone_dry_run_equals_what_the_real_run_copies(
    world: tuple[int, list[Person], list[tuple[str, int, int, int, int]]], categories: list[str]
) -> None:
    npcs, players, calls = world
    reset_esper()
    plugin = npc_memory.install(world="prop", seed=2)
    play(plugin, max(npcs, 2), players, calls)
    for i, scope in enumerate(("profile", "social", "profile")):
        plugin.remember("npc0", None, f"Trait number {i}", scope=scope, tags=[TAGS[i]])
    plugin.learn_fact("npc0", "The river runs north", tags=["lore"], importance=0.9)
    before = {m.id for m in plugin.memories("npc1")}, {f.id for f in plugin.facts("npc1")}
    plan = plugin.privacy.clone("npc0", "npc1", categories, dry_run=True)
    done = plugin.privacy.clone("npc0", "npc1", categories, dry_run=False)
    assert done.items == plan.items and done.skipped == plan.skipped
    new_memories = [m for m in plugin.memories("npc1") if m.id not in before[0]]
    new_facts = [f for f in plugin.facts("npc1") if f.id not in before[1]]
    planned = sorted(i.content for c, items in plan.items.items() for i in items)
    assert sorted([m.content for m in new_memories] + [f.content for f in new_facts]) == planned
    assert all(x.cloned_from == "npc0" for x in [*new_memories, *new_facts])
    assert all(m.scope in ("profile", "social") for m in new_memories)
    unconsenting = [p.name for p in players if not p.consent]
    assert not [x for x in [*new_memories, *new_facts] for name in unconsenting if name in x.content]
