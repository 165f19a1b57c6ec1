"""Snapshots copy only the parts of a document marked changed: every way the facade
and the systems change an NPC must mark the part it changed, or the change is lost.

Each mutation runs on a world whose documents the store already holds (so the writer
patches them against what it wrote), then is written by a snapshot round or by
``save()``; the world loaded back must equal the live one, component by component.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.services import persistence
from npc_memory.services.persistence import PersistenceService
from npc_memory.store import Part
from npc_memory.store.records import NpcCapture, capture_handle, diff, document_of_capture, gil_enabled
from npc_memory.systems.snapshot import SnapshotSystem

from .conftest import reset_esper, tick
from .test_persistence import components

pytestmark = pytest.mark.skipif(not gil_enabled(), reason="the writer thread captures only with a GIL")


@pytest.fixture(autouse=True)
def writer_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread captures, as it does on Python 3.12+ or beside a running
    FrameCollector."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)

NPCS = {"hilda": "forge", "bram": "forge", "tova": "market"}
PLAYERS = {"alice": "forge", "bob": "forge"}
DAY = 86_400.0


def pack() -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=10.0)
    return validate_pack(data)


def add_everyone(plugin: npc_memory.MemoryPlugin) -> None:
    for key in NPCS:
        plugin.add_npc(key=key)
    for key in PLAYERS:
        plugin.add_player(key=key)


def settled_world(path: Path) -> npc_memory.MemoryPlugin:
    """A world where every part of every document holds something, all of it saved."""
    plugin = npc_memory.install(world="parts", pack=pack(), store=path, seed=3)
    for key, room in NPCS.items():
        plugin.add_npc(key=key, room=room, archetype="blacksmith" if key == "hilda" else "innkeeper")
    for key, room in PLAYERS.items():
        plugin.add_player(key=key, room=room, consent=key == "alice")
    plugin.remember("hilda", "alice", "Alice bought nails", tags=["trade"])
    plugin.remember("bram", None, "The harvest failed", tags=["world"])
    plugin.say("hilda", "alice", "alice", "Thank you for the help with the cart, here is a gift.")
    plugin.end_conversation("hilda", "alice")
    plugin.say("bram", "bob", "bob", "Good morning.")  # left open
    plugin.observe(room="forge", subject="bob", content="Bob broke a window", tags=["brawl"])
    plugin.adjust_relationship("tova", "alice", trust=0.2)
    tick("parts", 3)
    plugin.save()
    return plugin


def talk(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.say("tova", "bob", "bob", "I found your lost ring, take it back as a gift.")
    plugin.end_conversation("tova", "bob")


def extract(plugin: npc_memory.MemoryPlugin) -> None:
    talk(plugin)
    tick("parts", 2)  # the extraction result is applied: memories, facts, relationship


def gossip(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.learn_fact("tova", "The mill burned down", tags=["news"], importance=0.9)
    plugin.move("tova", "forge")
    tick("parts", 400)
    assert any(f.content == "The mill burned down" for f in plugin.facts("hilda") + plugin.facts("bram"))


def days_pass(plugin: npc_memory.MemoryPlugin) -> None:
    """Decay, consolidation, drift and expiry: the systems' own changes."""
    for _ in range(4):
        plugin.remember("hilda", "alice", "Alice came for nails again", tags=["trade"])
    plugin.learn_fact("tova", "The bridge is closed", tags=["news"], expires_in=DAY)
    for _ in range(6):
        plugin.clock.advance(DAY)
        tick("parts", 30)


MUTATIONS: dict[str, Callable[[npc_memory.MemoryPlugin], object]] = {
    "remember about a player": lambda p: p.remember("hilda", "alice", "Alice paid", tags=["trade"]),
    "remember, moving the relationship": lambda p: p.remember(
        "hilda", "bob", "Bob saved the smith", tags=["heroic"], importance=0.9, affect_relationship=True
    ),
    "remember about the world": lambda p: p.remember("tova", None, "A storm came", tags=["weather"]),
    "remember the same again": lambda p: p.remember("hilda", "alice", "Alice bought nails", tags=["trade"]),
    "recall strengthens": lambda p: p.recall("hilda", "alice", "nails"),
    "context strengthens": lambda p: p.context("hilda", "alice", "nails?"),
    "say a line": lambda p: p.say("tova", "alice", "alice", "Hello there."),
    "end a conversation": lambda p: (p.say("bram", "bob", "bob", "Farewell."), p.end_conversation("bram", "bob")),
    "a conversation is extracted": extract,
    "observe": lambda p: p.observe(room="forge", subject="alice", content="Alice stole bread", tags=["theft"]),
    "learn a fact": lambda p: p.learn_fact("bram", "The mill burned down", tags=["news"]),
    "learn the same fact again": lambda p: p.observe(
        room="forge", subject="bob", content="Bob broke a window", tags=["brawl"]
    ),
    "adjust a relationship": lambda p: p.adjust_relationship("hilda", "bob", trust=-0.3, respect=0.1),
    "record an interaction": lambda p: p.record_interaction("bram", "alice"),
    "move": lambda p: p.move("tova", "forge"),
    "gossip": gossip,
    "days pass": days_pass,
    "forget a player": lambda p: p.privacy.forget_player("bob"),
    "withdraw consent": lambda p: p.privacy.set_consent("alice", False),
    "end the game": lambda p: p.privacy.end_game(),
    "remove an NPC": lambda p: p.remove("bram"),
}


def written(plugin: npc_memory.MemoryPlugin) -> int:
    """Wait for the writer; the snapshot rounds completed so far."""
    service = next(p for p in plugin.processors if isinstance(p, SnapshotSystem)).persistence
    service.drain()
    tick("parts", 1)
    return service.rounds_completed


@pytest.mark.parametrize("written_by", ["round", "save"])
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_every_change_comes_back_after_a_reload(tmp_path: Path, mutation: str, written_by: str) -> None:
    reset_esper()
    path = tmp_path / "w.db"
    plugin = settled_world(path)
    before = repr(components(plugin))  # (the components themselves change in place)
    MUTATIONS[mutation](plugin)
    if written_by == "round":
        tick("parts", 12)  # a snapshot round starts (every 10 game s) and the writer captures it
        assert written(plugin) >= 1
    live = components(plugin)
    assert repr(live) != before or mutation in {"recall strengthens", "context strengthens"}
    npc_memory.uninstall("parts")  # saves whatever is still dirty: a round's misses stay missed

    restored = npc_memory.install(world="parts", pack=pack(), store=path, seed=3)
    add_everyone(restored)
    if "bram" not in live:
        restored.remove("bram")
    if "bob" not in live:
        restored.remove("bob", forget=True)
    assert components(restored) == live
    npc_memory.uninstall("parts")


QUICK = [name for name in MUTATIONS if name not in {"gossip", "days pass", "forget a player", "remove an NPC"}]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(QUICK), st.booleans()), min_size=1, max_size=10))
def test_changes_spread_over_rounds_come_back(steps: list[tuple[str, bool]]) -> None:
    """Any sequence of changes, some followed by a snapshot round: each round patches
    the one before, and the world loaded back is the live one."""
    reset_esper()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.db"
        plugin = settled_world(path)
        for name, round_after in steps:
            MUTATIONS[name](plugin)
            if round_after:
                tick("parts", 11)
                written(plugin)
        live = components(plugin)
        npc_memory.uninstall("parts")
        restored = npc_memory.install(world="parts", pack=pack(), store=path, seed=3)
        add_everyone(restored)
        assert components(restored) == live
        npc_memory.uninstall("parts")


def settled_with_capture(tmp_path: Path) -> tuple[npc_memory.MemoryPlugin, PersistenceService, NpcCapture]:
    """A settled world, its persistence service and a capture of hilda as the writer's last."""
    reset_esper()
    plugin = settled_world(tmp_path / "w.db")
    service = next(p for p in plugin.processors if isinstance(p, SnapshotSystem)).persistence
    base = capture_handle(plugin.npc("hilda"), 0.0)
    assert isinstance(base, NpcCapture)
    return plugin, service, base


def test_a_capture_takes_the_parts_changed_since_its_round_began(tmp_path: Path) -> None:
    """A round hands the writer the parts marked before it began; a part changed
    since (a conversation applied while the writer captures, say) is copied too, so a
    capture is the document at one instant and never shows a conversation as
    extracted without the memories it gave."""
    plugin, service, base = settled_with_capture(tmp_path)
    hilda = plugin.npc("hilda")
    plugin.remember("hilda", "alice", "Alice came back", tags=["trade"])  # marked after the round began
    captured = service._capture_atomically("hilda", Part.WORKING, None, base)
    assert isinstance(captured, NpcCapture)
    assert captured.bank is not base.bank and captured.knowledge is base.knowledge
    assert document_of_capture(captured) == document_of_capture(capture_handle(hilda, plugin.clock.now))
    npc_memory.uninstall("parts")


def test_a_capture_names_the_relationships_set_since_the_last(tmp_path: Path) -> None:
    """The writer learns which relationships were set since the capture it wrote last
    (the round's marks, then those since), so the patch carries those records without
    comparing the others; after a removal it does not know, and compares them all."""
    plugin, service, base = settled_with_capture(tmp_path)
    hilda = plugin.npc("hilda")
    plugin.add_player(key="cara", room="forge")
    plugin.adjust_relationship("hilda", "cara", trust=0.1)  # set after the round began
    captured = service._capture_atomically("hilda", Part.RELATIONSHIPS, {"alice": None}, base)
    assert isinstance(captured, NpcCapture)
    assert captured.relationship_players == ("alice", "cara")
    patch = diff(base, captured, lsn=2, base_lsn=1)
    assert patch is not None
    assert patch.relationships == {"cara": hilda.relationships.by_player["cara"]}  # alice's record is the same
    assert list(hilda.relationships.by_player)[-1] == "cara"  # appended, as the patch appends it

    service.state.mark("hilda", Part.RELATIONSHIPS)  # what a removal marks: no longer known which
    captured = service._capture_atomically("hilda", Part.RELATIONSHIPS, {"alice": None}, base)
    assert isinstance(captured, NpcCapture) and captured.relationship_players is None
    npc_memory.uninstall("parts")


def relationship_orders(plugin: npc_memory.MemoryPlugin) -> dict[str, list[tuple[str, object]]]:
    return {key: list(plugin.npc(key).relationships.by_player.items()) for key in plugin.npcs()}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(NPCS)),
            st.sampled_from(["alice", "bob", "cara", "dain", "eryk"]),
            st.sampled_from(["adjust", "meet", "forget"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=14,
    )
)
def test_relationships_set_removed_and_set_again_come_back_in_order(steps: list[tuple[str, str, str, bool]]) -> None:
    """Relationships set (in place or new), removed with their player and set again,
    with snapshot rounds in between: the world loaded back holds every NPC's
    relationships in the live order."""
    reset_esper()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.db"
        plugin = settled_world(path)
        extra = ("cara", "dain", "eryk")
        for key in extra:
            plugin.add_player(key=key, room="forge")
        for npc, player, action, round_after in steps:
            if player not in plugin.players():
                plugin.add_player(key=player, room="forge")
            if action == "adjust":
                plugin.adjust_relationship(npc, player, trust=0.05)
            elif action == "meet":
                plugin.record_interaction(npc, player)
            else:
                plugin.privacy.forget_player(player)
            if round_after:
                tick("parts", 11)
                written(plugin)
        live = relationship_orders(plugin)
        players = plugin.players()
        npc_memory.uninstall("parts")
        restored = npc_memory.install(world="parts", pack=pack(), store=path, seed=3)
        add_everyone(restored)
        for key in extra:
            if key in players:
                restored.add_player(key=key, room="forge")
        assert relationship_orders(restored) == live
        npc_memory.uninstall("parts")
