"""A property of the facade's edge: whatever mix of good and bad calls a game makes,
each either works or raises an :class:`NpcMemoryError`, and the world it leaves always
saves and loads back the same."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import esper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.components import TriggerContext

from .conftest import reset_esper

JUNK: list[Any] = [
    None, True, False, "no", "", " ", 0, 1, -1, 123, 2**70, 0.5, -0.5, 1e308, -1e308, math.nan, math.inf,
    object(), [], [None], [123], {}, b"x", "x" * 3000, ("t",) * 40, ["game-only"], [" "], ["t" * 65],
    TriggerContext(time_of_day=5),  # type: ignore[arg-type]
    TriggerContext(present_entity_tags=(None,)),  # type: ignore[arg-type]
]

# Any value at all: junk, or something of about the right shape.
anything = st.one_of(
    st.sampled_from(JUNK),
    st.text(max_size=40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.lists(st.text(max_size=70), max_size=40),
)
refs = st.one_of(st.sampled_from(["hilda", "alice", "bob", "nobody", 1, 2, 999]), anything)
texts = st.one_of(st.sampled_from(["Alice fixed the bellows", "the sword", "bandits"]), anything)
units = st.one_of(st.floats(min_value=0.0, max_value=1.0), anything)
tags = st.one_of(st.lists(st.sampled_from(["helpful", "trade", "theft", "heroic"]), max_size=3), anything)
flags = st.one_of(st.booleans(), anything)

Op = Callable[[npc_memory.MemoryPlugin, st.DataObject], Any]


def _call(method_name: str, /, **arguments: st.SearchStrategy[Any]) -> Op:
    """Call ``plugin.<name>`` (or ``plugin.query.<name>``) with ``arguments`` drawn
    (each good or bad)."""

    def op(plugin: npc_memory.MemoryPlugin, data: st.DataObject) -> Any:
        name = method_name
        target: Any = plugin.query if name.startswith("query.") else plugin
        method = getattr(target, name.removeprefix("query."))
        drawn = {key: data.draw(strategy, label=f"{name}.{key}") for key, strategy in arguments.items()}
        positional = [drawn.pop(key) for key in ("npc", "player", "ref") if key in drawn]
        return method(*positional, **drawn)

    return op


OPS: list[Op] = [
    _call("remember", npc=refs, player=refs, content=texts, kind=st.sampled_from(["episodic", "semantic",
          "procedural", "dream"]), tags=tags, importance=units, confidence=units, intensity=units, locked=flags,
          scope=st.sampled_from([None, "session", "player", "anon", "x"]), room=texts, source_conversation=texts,
          pattern=texts, trigger=st.sampled_from([None, TriggerContext(), *JUNK[-2:]]), source_episodes=tags,
          affect_relationship=flags),
    _call("learn_fact", npc=refs, content=texts, subject=refs, tags=tags, importance=units, confidence=units,
          topic=texts, locked=flags, expires_in=anything),
    _call("observe", room=st.sampled_from(["forge", "market"]), content=texts, subject=refs, tags=tags,
          importance=units, expires_in=anything),
    _call("say", npc=refs, player=refs, speaker=texts, text=texts),
    _call("end_conversation", npc=refs, player=refs),
    _call("adjust_relationship", npc=refs, player=refs, trust=anything, fear=anything, expected_version=anything),
    _call("record_interaction", npc=refs, player=refs),
    _call("recall", npc=refs, player=refs, query=texts, k=anything, strengthen=flags),
    _call("context", npc=refs, player=refs, message=texts, max_tokens=anything),
    _call("move", ref=refs, room=texts),
    _call("add_player", key=texts, name=texts, faction=anything, room=texts, consent=flags, anonymous=flags),
    _call("remove", ref=st.sampled_from(["bob", "nobody", None, 5]), forget=flags),
    _call("query.knows", npc=refs, tag=texts),
    _call("query.has_memory_matching", npc=refs, player=refs, tags=tags, min_importance=anything),
    lambda plugin, data: plugin.clock.advance(data.draw(anything, label="advance")),
    lambda plugin, data: plugin.clock.set(data.draw(anything, label="set")),
    lambda plugin, data: _process(plugin, data.draw(anything, label="dt")),
]


def _process(plugin: npc_memory.MemoryPlugin, dt: Any) -> None:
    esper.switch_world(plugin.world)
    try:
        esper.process(dt)
    finally:
        esper.switch_world("default")


def _open(store: Path) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world="prop", store=store, seed=5)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
    return plugin


def _world(plugin: npc_memory.MemoryPlugin) -> tuple[Any, ...]:
    return (
        plugin.clock.now,
        plugin.memories("hilda", "alice"),
        plugin.memories("hilda", None),
        plugin.facts("hilda", include_disbelieved=True),
        plugin.relationship("hilda", "alice"),
        plugin.query.working_memory("hilda", "alice"),
        plugin.player("alice").profile,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mix_of_calls_leaves_a_world_that_saves_and_loads(data: st.DataObject) -> None:
    reset_esper()
    with tempfile.TemporaryDirectory() as directory:
        try:
            _check_round_trip(Path(directory) / "store", data)
        finally:
            reset_esper()  # while the store is still there


def _check_round_trip(store: Path, data: st.DataObject) -> None:
    plugin = _open(store)
    plugin.add_player(key="bob", name="Bob", room="market")
    for index in data.draw(st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=12), label="ops"):
        try:
            OPS[index](plugin, data)
        except npc_memory.NpcMemoryError:
            pass  # a clear, documented refusal; any other exception fails the test
        finally:
            esper.switch_world("default")
    before = _world(plugin)
    npc_memory.uninstall("prop")
    reset_esper()
    again = npc_memory.install(world="prop", store=store, seed=5)
    again.add_npc(key="hilda")
    again.add_player(key="alice")
    assert _world(again) == before
