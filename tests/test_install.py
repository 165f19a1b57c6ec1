"""install/uninstall: worlds, priorities, isolation, the clock driven by esper.process."""

from __future__ import annotations

from typing import Any

import esper
import pytest

import npc_memory
from npc_memory.components import Identity, MemoryBank
from npc_memory.systems import ClockSystem


def test_install_defaults_to_the_current_world_and_returns_the_facade() -> None:
    esper.switch_world("overworld")
    plugin = npc_memory.install()
    assert plugin.world == "overworld"
    assert npc_memory.get_plugin() is plugin
    assert isinstance(esper.get_processor(ClockSystem), ClockSystem)


def test_install_into_a_named_world_restores_the_callers_world() -> None:
    esper.switch_world("menu")
    plugin = npc_memory.install(world="village")
    assert esper.current_world == "menu"
    assert esper.get_processor(ClockSystem) is None  # nothing added to the caller's world
    esper.switch_world("village")
    assert esper.get_processor(ClockSystem) is plugin.processors[0]


def test_processor_priority_is_set_explicitly_and_can_be_moved() -> None:
    npc_memory.install(world="a")
    npc_memory.install(world="b", priority=-500)
    esper.switch_world("a")
    assert esper.get_processor(ClockSystem).priority == 100  # type: ignore[union-attr]
    esper.switch_world("b")
    assert esper.get_processor(ClockSystem).priority == -400  # type: ignore[union-attr]


def test_second_install_into_the_same_world_is_refused() -> None:
    first = npc_memory.install(world="village")
    with pytest.raises(npc_memory.AlreadyInstalledError, match="'village'"):
        npc_memory.install(world="village", seed=99)
    assert npc_memory.get_plugin("village") is first


def test_bad_pack_installs_nothing(tmp_path: Any) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[pack]\nname = "bad"\n[factions.x]\nattitudes = { y = "allied" }\n')
    with pytest.raises(npc_memory.PackError):
        npc_memory.install(world="village", pack=bad)
    with pytest.raises(npc_memory.NotInstalledError):
        npc_memory.get_plugin("village")
    assert "village" not in esper.list_worlds()


def test_uninstall_removes_processors_and_subscriptions_and_allows_reinstall() -> None:
    plugin = npc_memory.install(world="village")
    heard: list[npc_memory.events.Event] = []
    plugin.on(npc_memory.events.Event, heard.append)
    npc_memory.uninstall("village")
    esper.switch_world("village")
    assert esper.get_processor(ClockSystem) is None
    assert not plugin.installed
    with pytest.raises(npc_memory.NotInstalledError):
        plugin.add_npc(key="late")
    with pytest.raises(npc_memory.NotInstalledError):
        npc_memory.uninstall("village")
    again = npc_memory.install(world="village")
    assert again is not plugin
    again.add_npc(key="hilda", archetype="blacksmith")  # learns authored facts: events fire
    assert heard == []  # the old plugin's subscriptions ended with it


def test_two_worlds_hold_independent_state() -> None:
    a = npc_memory.install(world="a", seed=1, time_scale=10.0)
    b = npc_memory.install(world="b", seed=1, time_scale=10.0)
    for p in (a, b):
        p.add_npc(key="hilda", archetype="blacksmith")
        p.add_player(key="alice", faction="adventurers")
    a.adjust_relationship("hilda", "alice", trust=0.3)
    a.remember("hilda", "alice", "Alice paid for a sword", tags=["trade"])
    # The same keys live independently in each world.
    assert a.query.trust("hilda", "alice") == pytest.approx(0.9)
    assert b.query.trust("hilda", "alice") == pytest.approx(0.6)
    assert b.memories("hilda", "alice") == []
    # Each world's components are attached in that world only.
    esper.switch_world("a")
    a_keys = sorted(c.key for _, c in esper.get_component(Identity))
    esper.switch_world("b")
    assert sorted(c.key for _, c in esper.get_component(Identity)) == a_keys == ["alice", "hilda"]
    assert esper.component_for_entity(b.entity("hilda"), MemoryBank).count() == 0
    # Processing one world advances only that world's clock.
    esper.switch_world("a")
    esper.process(2.0)
    assert (a.clock.now, b.clock.now) == (20.0, 0.0)
    # Same seed, same random stream; the streams are separate objects.
    assert a.rng is not b.rng and a.rng.random() == b.rng.random()


def test_facade_calls_work_whichever_world_is_current() -> None:
    plugin = npc_memory.install(world="village")
    esper.switch_world("ui")
    entity = plugin.add_npc(key="hilda")
    assert esper.current_world == "ui"
    assert not esper.entity_exists(entity) or esper.try_component(entity, Identity) is None
    esper.switch_world("village")
    assert esper.component_for_entity(entity, Identity).key == "hilda"


def test_clock_reads_first_positional_dt_with_time_scale() -> None:
    plugin = npc_memory.install(world="village", time_scale=60.0, start_time=100.0)
    esper.switch_world("village")
    esper.process(0.5)
    esper.process(1.5)
    esper.process()  # no dt: one fixed step of 1/60 s
    assert plugin.clock.now == pytest.approx(100.0 + 2.0 * 60.0 + 60.0 / 60.0)


def test_clock_reads_a_keyword_or_a_callable() -> None:
    kw = npc_memory.install(world="kw", dt="delta")
    esper.switch_world("kw")
    esper.process("ignored", delta=3.0)
    assert kw.clock.now == 3.0
    custom = npc_memory.install(world="custom", dt=lambda args, kwargs: args[1] * 2)
    esper.switch_world("custom")
    esper.process(None, 4.0)
    assert custom.clock.now == 8.0


def test_bad_dt_is_a_clear_error() -> None:
    plugin = npc_memory.install(world="village")
    esper.switch_world("village")
    with pytest.raises(npc_memory.InvalidArgumentError, match="dt must be a finite number"):
        esper.process(float("nan"))
    with pytest.raises(npc_memory.InvalidArgumentError, match="dt must be a finite number"):
        esper.process(-1.0)
    assert plugin.clock.now == 0.0


def test_install_argument_errors() -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match="seed"):
        npc_memory.install(world="v", seed="7")  # type: ignore[arg-type]
    with pytest.raises(npc_memory.InvalidArgumentError, match="time_scale"):
        npc_memory.install(world="v", time_scale=-1.0)
    with pytest.raises(npc_memory.InvalidArgumentError, match="dt must be"):
        npc_memory.install(world="v", dt=3)  # type: ignore[arg-type]
    with pytest.raises(npc_memory.PackError, match="bundled packs: village"):
        npc_memory.install(world="v", pack="no-such-pack")
    assert "v" not in esper.list_worlds()


def test_events_can_be_forwarded_to_esper_handlers() -> None:
    plugin = npc_memory.install(world="village", forward_events=True)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="bram", faction="thieves")
    received: list[npc_memory.events.Event] = []

    def handler(event: npc_memory.events.Event) -> None:
        received.append(event)

    esper.switch_world("village")
    esper.set_handler("Hostile", handler)
    esper.switch_world("default")
    plugin.adjust_relationship("hilda", "bram", trust=-0.3)
    assert [type(e).__name__ for e in received] == ["Hostile"]
    assert esper.current_world == "default"
    esper.switch_world("village")
    esper.remove_handler("Hostile", handler)
