"""Shared fixtures. esper keeps its worlds in module globals, so every test starts from
a clean 'default' world with no plugin installed, and leaves it that way."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import esper
import pytest

import npc_memory
from npc_memory.errors import StoreError
from npc_memory.installation import _INSTALLED

from .fake_anthropic import FakeMessagesAPI

if TYPE_CHECKING:
    from .privacy_world import Backend


def tick(world: str, n: int = 1, dt: float = 1.0) -> None:
    """Run ``n`` esper ticks of ``dt`` real seconds in ``world``, then return to the caller's world."""
    previous = esper.current_world
    esper.switch_world(world)
    try:
        for _ in range(n):
            esper.process(dt)
    finally:
        esper.switch_world(previous)


def settle(world: str, limit: int = 500, dt: float = 1.0) -> int:
    """Tick ``world`` (``dt`` real seconds a tick) until its plugin's extraction has
    nothing queued, being read or waiting to be applied, as a game's test does (a result
    comes within a bound that holds on any machine: docs/installing-and-budgets.md);
    the ticks it took, at most ``limit``."""
    pipeline = npc_memory.get_plugin(world).extraction
    for ticks in range(1, limit + 1):
        tick(world, dt=dt)
        if not (pipeline.queue or pipeline.reading or pipeline.ready or pipeline.in_flight):
            return ticks
    raise AssertionError(f"extraction in {world!r} still busy after {limit} ticks")


def reset_esper() -> None:
    for name in list(_INSTALLED):
        try:
            npc_memory.uninstall(name)
        except StoreError:  # a test left its store failing: give up what is unsaved
            npc_memory.uninstall(name, save=False)
    esper.switch_world("default")
    for name in esper.list_worlds():
        if name != "default":
            esper.delete_world(name)
    esper.clear_database()


@pytest.fixture(autouse=True)
def clean_esper() -> Iterator[None]:
    reset_esper()
    yield
    reset_esper()


@pytest.fixture
def plugin() -> npc_memory.MemoryPlugin:
    """The village pack installed into esper world 'test' (the caller stays in 'default'),
    on count caps alone (``deterministic=True``): what a few ticks get done does not hang
    on the machine's speed. Tests of the time budgets install their own."""
    return npc_memory.install(world="test", pack="village", seed=1, deterministic=True)


@dataclass
class Village:
    plugin: npc_memory.MemoryPlugin
    hilda: int
    brandt: int
    alice: int
    bram: int


@pytest.fixture
def village(plugin: npc_memory.MemoryPlugin) -> Village:
    """Hilda the blacksmith (smiths), Brandt the guard captain (guards), Alice the
    adventurer and Bram the thief."""
    return Village(
        plugin=plugin,
        hilda=plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge"),
        brandt=plugin.add_npc(key="brandt", name="Brandt", archetype="guard_captain", room="barracks"),
        alice=plugin.add_player(key="alice", name="Alice", faction="adventurers", room="forge"),
        bram=plugin.add_player(key="bram", name="Bram", faction="thieves", room="market"),
    )


@pytest.fixture
def no_anthropic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ANTHROPIC_* variable and no user configuration reach the SDK."""
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-anthropic-config"))


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    """A fake Messages API on 127.0.0.1 (an ephemeral port), stopped afterwards."""
    server = FakeMessagesAPI()
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["tinydb", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A privacy test's store: a TinyDB directory, then a world on the test PostgreSQL
    server (skipped without one)."""
    from .privacy_world import Backend

    if request.param == "tinydb":
        return Backend(tmp_path / "village.db")
    from .postgres import pg_url

    return Backend(tmp_path / "village.db", pg_url())
