"""Bad input at the facade: every argument is checked for kind, range and size before
anything changes, the error names the argument, and a world that refused a bad call
still saves and loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import esper
import pytest

import npc_memory
from npc_memory.components import TriggerContext
from npc_memory.content import load_pack, validate_pack

from .conftest import reset_esper, tick

Call = Callable[[npc_memory.MemoryPlugin], Any]


def open_village(store: Path, pack: npc_memory.Pack | str = "village") -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world="edge", pack=pack, store=store, seed=3)
    if "hilda" not in plugin.storage.stored_npcs():
        plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
        plugin.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
        plugin.remember("hilda", "alice", "Alice mended the bellows", tags=["helpful"])
        plugin.learn_fact("hilda", "The mill burned down", tags=["fire"])
    else:
        plugin.add_npc(key="hilda")
        plugin.add_player(key="alice")
    return plugin


def state_of(plugin: npc_memory.MemoryPlugin) -> tuple[Any, ...]:
    """Everything a bad call could have touched."""
    return (
        plugin.npcs(),
        plugin.players(),
        plugin.memories("hilda", "alice"),
        plugin.memories("hilda", None),
        plugin.facts("hilda", include_disbelieved=True),
        plugin.relationship("hilda", "alice"),
        plugin.query.working_memory("hilda", "alice"),
        plugin.clock.now,
        plugin.player("alice").profile,
    )


def reopened(store: Path) -> npc_memory.MemoryPlugin:
    """Save, uninstall and install again from the store."""
    npc_memory.uninstall("edge")
    reset_esper()
    return open_village(store)


# Each finding: a call that was accepted (or failed deep inside) and must now be refused
# by name. The first group broke the store: the next install failed.
REFUSED: list[tuple[str, Call, str]] = [
    ("clock advanced past its range", lambda p: p.clock.advance(1e308), "game_seconds"),
    ("clock set past its range", lambda p: p.clock.set(1e300), "now"),
    ("trigger with a number for a time of day",
     lambda p: p.remember("hilda", "alice", "Alice haggles", kind="procedural",
                          trigger=TriggerContext(time_of_day=5)),  # type: ignore[arg-type]
     "trigger.time_of_day must be a string"),
    ("trigger tags that are not text",
     lambda p: p.remember("hilda", "alice", "Alice haggles", kind="procedural",
                          trigger=TriggerContext(present_entity_tags=(1, 2))),  # type: ignore[arg-type]
     "tag must be a string"),
    ("trigger tags given as one string",
     lambda p: p.remember("hilda", "alice", "Alice haggles", kind="procedural",
                          trigger=TriggerContext(present_entity_tags="guard")),  # type: ignore[arg-type]
     "not the string"),
    ("learn_fact locked as text", lambda p: p.learn_fact("hilda", "x", locked="no"), "locked"),  # type: ignore[arg-type]
    ("source_conversation a number", lambda p: p.remember("hilda", "alice", "x", source_conversation=123),  # type: ignore[arg-type]
     "source_conversation must be a string"),
    # Text taken as a flag.
    ("consent as text", lambda p: p.add_player(key="bob", consent="no"), "consent"),  # type: ignore[arg-type]
    ("remember locked as text", lambda p: p.remember("hilda", "alice", "x", locked="no"), "locked"),  # type: ignore[arg-type]
    ("remove forget as text", lambda p: p.remove("alice", forget="no"), "forget must be True or False"),  # type: ignore[arg-type]
    ("remove forget as a number", lambda p: p.remove("alice", forget=1), "forget must be True or False"),  # type: ignore[arg-type]
    # Failed deep inside with TypeError/AttributeError/KeyError.
    ("salience of None", lambda p: p.query.salience(None), "expected a memory record"),  # type: ignore[arg-type]
    ("knows about None", lambda p: p.query.knows(None, "fire"), "entity id or a key"),  # type: ignore[arg-type]
    ("tags None", lambda p: p.remember("hilda", "alice", "x", tags=None), "tags must be a list"),  # type: ignore[arg-type]
    ("providers that are not providers", lambda p: p.context("hilda", "alice", providers=[object()]),  # type: ignore[list-item]
     "each provider needs"),
    ("source_episodes of numbers",
     lambda p: p.remember("hilda", "alice", "x", kind="semantic", source_episodes=[123]),  # type: ignore[list-item]
     r"source_episodes\[0\] must be a string"),
    ("source_episodes not a list",
     lambda p: p.remember("hilda", "alice", "x", kind="semantic", source_episodes=123),  # type: ignore[arg-type]
     "source_episodes must be a list"),
    ("source_episodes None",
     lambda p: p.remember("hilda", "alice", "x", kind="semantic", source_episodes=None),  # type: ignore[arg-type]
     "source_episodes must be a list"),
    ("subscribe to a non-event", lambda p: p.on("Hostile", print), "subclass of npc_memory.events.Event"),  # type: ignore[arg-type]
    ("subscribe a non-callable", lambda p: p.on(npc_memory.events.Hostile, "print"), "handler must be callable"),  # type: ignore[arg-type]
    # No limits.
    ("a million tags", lambda p: p.remember("hilda", "alice", "x", tags=(f"t{i}" for i in range(1_000_000))),
     "more than 32 given; the limit is 32"),
    ("the same tag many times", lambda p: p.remember("hilda", "alice", "x", tags=["a"] * 33), "limit is 32"),
    ("a tag too long", lambda p: p.observe(room="forge", content="x", tags=["t" * 65]), "limit is 64"),
    ("too many fact tags", lambda p: p.learn_fact("hilda", "x", tags=[f"t{i}" for i in range(40)]), "limit is 32"),
    ("too many query tags", lambda p: p.query.has_memory_matching("hilda", "alice", [f"t{i}" for i in range(40)]),
     "limit is 32"),
    ("content too long", lambda p: p.remember("hilda", "alice", "x" * 2001), "limit is 2000"),
    ("a 10 MB recall query", lambda p: p.recall("hilda", "alice", "x" * 10_000_000), "query is 10000000 characters"),
    ("a 10 MB context message", lambda p: p.context("hilda", "alice", "x" * 10_000_000), "message is 10000000"),
    ("a 10 MB prompt message", lambda p: p.llm.prompt_messages("hilda", "alice", "x" * 10_000_000), "limit is 2000"),
    ("a context budget of 2**70 tokens", lambda p: p.context("hilda", "alice", max_tokens=2**70), "max_tokens"),
    ("expiry past the clock's range", lambda p: p.learn_fact("hilda", "x", expires_in=1e300), "expires_in"),
    ("a conversation line too long", lambda p: p.say("hilda", "alice", "Alice", "x" * 2001), "limit is 2000"),
]


@pytest.mark.parametrize(("what", "call", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_bad_calls_are_refused_by_name_and_the_world_still_loads(
    tmp_path: Path, what: str, call: Call, message: str
) -> None:
    plugin = open_village(tmp_path / "store")
    before = state_of(plugin)
    with pytest.raises(npc_memory.InvalidArgumentError, match=message):
        call(plugin)
    assert state_of(plugin) == before
    tick("edge", 2)
    after = state_of(plugin)
    assert state_of(reopened(tmp_path / "store"))[2:5] == after[2:5]


@pytest.mark.parametrize("dt", [1e307, 1e308, float("inf"), float("nan"), -1.0, "0.5", True, None, [1.0]])
def test_a_tick_with_a_bad_dt_is_refused_before_anything_runs(tmp_path: Path, dt: Any) -> None:
    plugin = npc_memory.install(world="edge", store=tmp_path / "store", fixed_step=None)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    before = plugin.clock.now
    esper.switch_world("edge")
    try:
        with pytest.raises(npc_memory.InvalidArgumentError, match="dt"):
            esper.process(dt)
        esper.process(0.5)  # the next good tick runs as usual
    finally:
        esper.switch_world("default")
    assert plugin.clock.now == before + 0.5
    npc_memory.uninstall("edge")
    again = npc_memory.install(world="edge", store=tmp_path / "store")
    assert again.clock.now == before + 0.5


def test_a_keyword_dt_is_checked_the_same_way(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="edge", dt="delta")
    esper.switch_world("edge")
    try:
        with pytest.raises(npc_memory.InvalidArgumentError, match="dt must be a number, got 'fast'"):
            esper.process(delta="fast")
    finally:
        esper.switch_world("default")
    assert plugin.clock.now == 0.0


def test_many_large_steps_stop_at_the_end_of_the_range(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="edge", store=tmp_path / "store", time_scale=1e6)
    plugin.clock.advance(npc_memory.clock.MAX_GAME_TIME - 10)
    with pytest.raises(npc_memory.InvalidArgumentError, match="end of the clock's range"):
        plugin.clock.advance_real(1.0)  # 10**6 game seconds
    plugin.clock.advance(10)  # exactly to the end is fine
    assert plugin.clock.now == npc_memory.clock.MAX_GAME_TIME
    npc_memory.uninstall("edge")
    assert npc_memory.install(world="edge", store=tmp_path / "store").clock.now == npc_memory.clock.MAX_GAME_TIME


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"time_scale": 1e307}, "time_scale"),
        ({"time_scale": "2"}, "time_scale must be a number"),
        ({"start_time": 1e300}, "start_time"),
        ({"start_time": True}, "start_time must be a number"),
    ],
)
def test_install_refuses_a_clock_out_of_range(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match=message):
        npc_memory.install(world="edge", **arguments)
    assert "edge" not in npc_memory.installation._INSTALLED


def test_numbers_of_other_real_types_are_accepted_as_times() -> None:
    import fractions

    plugin = npc_memory.install(world="edge")
    plugin.clock.advance(fractions.Fraction(3, 2))
    assert plugin.clock.now == 1.5 and isinstance(plugin.clock.now, float)


def test_a_pack_can_raise_and_lower_the_limits(tmp_path: Path) -> None:
    data = load_pack("village").model_dump()
    data["limits"] = {"tags_per_memory": 2, "tag_chars": 8, "content_chars": 40, "query_chars": 10}
    pack = validate_pack(data)
    plugin = open_village(tmp_path / "store", pack)
    assert plugin.pack.limits.tags_per_memory == 2
    plugin.remember("hilda", "alice", "x" * 40, tags=["a", "b"])
    for call, message in [
        (lambda: plugin.remember("hilda", "alice", "x" * 41), "limit is 40"),
        (lambda: plugin.remember("hilda", "alice", "x", tags=["a", "b", "c"]), "limit is 2"),
        (lambda: plugin.remember("hilda", "alice", "x", tags=["abcdefghi"]), "limit is 8"),
        (lambda: plugin.recall("hilda", "alice", "x" * 11), "limit is 10"),
        (lambda: plugin.query.knows("hilda", "abcdefghi"), "limit is 8"),
    ]:
        with pytest.raises(npc_memory.InvalidArgumentError, match=message):
            call()
    assert plugin.recall("hilda", "alice", "x" * 10)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: npc_memory.get_plugin([]), "world must be a non-empty string"),  # type: ignore[arg-type]
        (lambda: npc_memory.uninstall({}), "world must be a non-empty string"),  # type: ignore[arg-type]
        (lambda: npc_memory.install(world=""), "world must be a non-empty string"),
    ],
)
def test_world_names_are_checked_everywhere(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match=message):
        call()


def test_why_names_a_fact_id_of_the_wrong_kind() -> None:
    plugin = npc_memory.install(world="edge")
    plugin.add_npc(key="hilda")
    with pytest.raises(npc_memory.InvalidArgumentError, match="fact_id must be a string"):
        plugin.query.why("hilda", 123)  # type: ignore[arg-type]


def test_a_dt_source_of_the_game_is_checked_too() -> None:
    plugin = npc_memory.install(world="edge", dt=lambda args, kwargs: kwargs.get("frame_time"))
    esper.switch_world("edge")
    try:
        esper.process(frame_time=0.25)
        with pytest.raises(npc_memory.InvalidArgumentError, match="dt must be a number"):
            esper.process(frame_time="a quarter")
    finally:
        esper.switch_world("default")
    assert plugin.clock.now == 0.25


def test_a_provider_that_renders_something_else_than_text_is_named() -> None:
    class Numbers:
        name = "numbers"

        def render(self, request: Any, budget: int) -> Any:
            return 42

    plugin = npc_memory.install(world="edge")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    with pytest.raises(npc_memory.InvalidArgumentError, match="provider 'numbers' rendered int"):
        plugin.context("hilda", "alice", providers=[Numbers()])
