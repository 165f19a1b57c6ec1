"""Runs a scenario hour by hour in its own esper world and tells its story.

A scenario populates the world and plays one game hour at a time; the runner installs
the plugin deterministically (same seed, same world on any machine), ticks it once
per game hour, times each of the plugin's systems, and hands everything that matters
to a :class:`~npc_memory.demo.story.Chronicle`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import esper

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.content import Pack
from npc_memory.demo.deeds import Witnessed
from npc_memory.demo.story import Chronicle, Story
from npc_memory.errors import StoreError
from npc_memory.installation import install, uninstall
from npc_memory.plugin import MemoryPlugin
from npc_memory.store.tinydb_store import is_store
from npc_memory.store.tools import clear_store

HOURS_PER_DAY = 24


class Scenario(Protocol):
    """A world to simulate: who lives in it and what they do each game hour."""

    name: str

    def pack(self, pack: str | Pack) -> str | Pack:
        """The content pack to install, given the one asked for."""
        ...

    def populate(self, plugin: MemoryPlugin, resumed: bool) -> None:
        """Add the NPCs and players (``resumed``: they are coming back from the store)."""
        ...

    def hour(self, plugin: MemoryPlugin, hour: int, witnessed: Callable[[Witnessed], None]) -> None:
        """Play game hour ``hour`` (0-23) of the current day; report public deeds."""
        ...

    def styles(self) -> dict[str, str]:
        """Each player's play style, by key."""
        ...

    def headline(self) -> str:
        """One line naming the scenario and its size."""
        ...


@dataclass
class DemoResult:
    """What a run produced: the plugin (installed only with ``keep_installed``), the
    printed report and the story behind it."""

    plugin: MemoryPlugin
    report: str
    log: list[str] = field(default_factory=list)
    story: Story | None = None
    saved: str = ""
    """Where the world was saved and how to continue it (empty without a store)."""


Progress = Callable[[int], Any]
"""Told how many ticks to run; returns something with ``update(n)`` and ``close()``."""


def run(
    scenario: Scenario,
    days: int,
    seed: int,
    pack: str | Pack = "village",
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = False,
    world: str = "npc-memory-demo",
    keep_installed: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Simulate ``days`` game days of ``scenario`` and return its story.

    With ``store`` the world is persisted there (a TinyDB store directory): a fresh one
    unless ``resume`` continues the world saved there (a missing store is an error
    then). An existing store is only replaced if this demo wrote it (esper world
    ``world``) and no process has it open. The plugin is uninstalled (saving the store,
    deleting the esper world) afterwards unless ``keep_installed`` is set.
    """
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    if resume:
        _check_resumable(store)
    elif store is not None:
        clear_store(store, world)  # only a store this demo wrote, and never one in use
    previous_world = esper.current_world
    plugin = install(
        world=world, pack=scenario.pack(pack), store=store, seed=seed, time_scale=3600.0, deterministic=True
    )
    try:
        chronicle = Chronicle(plugin, scenario.headline(), seed, scenario.styles())
        scenario.populate(plugin, resumed=resume)
        chronicle.begin()
        timings = _time_systems(plugin, chronicle)
        esper.switch_world(world)
        bar = progress(days * HOURS_PER_DAY) if progress is not None else None
        try:
            for _ in range(days):
                for _ in range(HOURS_PER_DAY):
                    hour = int(plugin.clock.now % SECONDS_PER_DAY // 3600)
                    scenario.hour(plugin, hour, chronicle.witnessed)
                    esper.process(1.0)
                    chronicle.hour_passed(timings)
                    if bar is not None:
                        bar.update(1)
                chronicle.day_passed()
        finally:
            if bar is not None:
                bar.close()
        story = chronicle.finish()
        saved = ""
        if store is not None:
            plugin.save()
            saved = (
                f"\nSaved to {store} ({len(plugin.npcs())} NPCs, {len(plugin.players())} players). "
                f"Look inside: npc-memory inspect --db {store} --npc {plugin.npcs()[0]}; "
                f"continue it: npc-memory demo {scenario.name} --db {store} --resume\n"
            )
        report = story.text() + saved
        return DemoResult(plugin=plugin, report=report, log=story.log(), story=story, saved=saved)
    finally:
        esper.switch_world(previous_world)
        if not keep_installed:
            uninstall(world)
            if world != previous_world:
                esper.delete_world(world)


def _check_resumable(store: str | os.PathLike[str] | None) -> None:
    if store is None:
        raise StoreError("--resume needs a store to continue; give --db PATH, not --memory")
    path = Path(store)
    if not path.exists():
        raise StoreError(f"cannot resume: {path} does not exist; run the demo without --resume first")
    if not path.is_dir() or not is_store(path):
        raise StoreError(f"cannot resume: {path} is not an npc-memory store")


def _time_systems(plugin: MemoryPlugin, chronicle: Chronicle) -> dict[str, float]:
    """Wrap each of the plugin's processors so the time it spends in a tick adds up in
    the returned dict (milliseconds by system name), which the chronicle reads and
    resets every hour."""
    spent: dict[str, float] = {}
    for processor in plugin.processors:
        name = type(processor).__name__
        spent[name] = 0.0
        processor.process = _timed(processor.process, name, spent)  # type: ignore[method-assign]
    return spent


def _timed(process: Callable[..., Any], name: str, spent: dict[str, float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return process(*args, **kwargs)
        finally:
            spent[name] += (time.perf_counter() - started) * 1000.0

    return timed
