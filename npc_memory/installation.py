"""Installing the plugin into an esper world: ``install()``, ``uninstall()``, ``get_plugin()``.

One plugin is installed per esper world. ``install`` checks its arguments, loads the pack
and the store, builds the world's shared state and hands it to a :class:`MemoryPlugin`,
which adds its systems to the world.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TYPE_CHECKING

import esper

from npc_memory.clock import GameClock, check_number
from npc_memory.content import Pack, load_pack
from npc_memory.errors import AlreadyInstalledError, InvalidArgumentError, NotInstalledError
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.extraction.rules import RuleBasedExtractor
from npc_memory.plugin import MemoryPlugin
from npc_memory.plugin.wiring import Ticks
from npc_memory.rules.validation import MAX_KEY_CHARS, check_flag, check_positive, check_text
from npc_memory.state import ErrorPolicy, EventBus, EventQueue, Registry, WorldState, gossip_rng
from npc_memory.store import MigrationContext, Store, TinyDBStore
from npc_memory.store.documents import unpack_rng_state
from npc_memory.store.transfer import is_url
from npc_memory.systems import DEFAULT_FIXED_STEP, PRIORITY_BASE, DtSource, first_positional, keyword

if TYPE_CHECKING:
    from npc_memory.extraction.anthropic import AnthropicExtractor

_INSTALLED: dict[str, MemoryPlugin] = {}

__all__ = ["get_plugin", "install", "uninstall"]


def install(
    world: str | None = None,
    pack: str | Path | Pack = "village",
    store: str | os.PathLike[str] | Store | None = None,
    *,
    llm: AnthropicExtractor | None = None,
    seed: int = 0,
    time_scale: float = 1.0,
    start_time: float = 0.0,
    dt: str | DtSource | None = None,
    fixed_step: float | None = DEFAULT_FIXED_STEP,
    forward_events: bool = False,
    event_errors: ErrorPolicy = "raise",
    deterministic: bool = False,
    priority: int = PRIORITY_BASE,
    game_id: str = "default",
) -> MemoryPlugin:
    """Install the plugin into esper world ``world`` (default: the current world).

    ``pack`` is a bundled pack name, a path to a TOML pack or a loaded :class:`Pack`.
    ``store`` persists the world: a directory path (a :class:`TinyDBStore`, created if
    missing), a ``postgresql://`` URL (a :class:`~npc_memory.store.postgres.PostgresStore`
    holding this world under its name; needs the ``postgres`` extra), any
    :class:`Store` (the plugin takes ownership and closes it), or ``None`` to keep
    everything in memory. A store's saved clock and random state are restored,
    and each saved NPC or player is restored when its key is added again.
    ``llm`` turns on LLM extraction (an :class:`AnthropicExtractor`); without it,
    conversations are extracted by the rule-based extractor, offline.
    ``seed`` seeds the plugin's random generator (same seed, same world).
    Game time starts at ``start_time`` game seconds and advances by ``time_scale``
    game seconds per real second passed to ``esper.process``: by default its first
    positional argument; ``dt="name"`` reads a keyword argument, a callable
    ``(args, kwargs) -> float | None`` anything else. A tick with no dt counts
    ``fixed_step`` real seconds (default 1/60: one frame at 60 fps); with
    ``fixed_step=None`` a tick without dt raises :class:`InvalidArgumentError`.
    Events are delivered once the change that caused them is complete; handler errors
    are raised as one :class:`EventHandlerError` (``event_errors="raise"``) or logged
    on ``npc_memory.events`` (``"log"``). ``forward_events`` also dispatches each event
    through ``esper.dispatch_event(type name, event)``. The systems' work per tick stops
    at the pack's count caps or its time budgets (ms), whichever comes first, and a
    system with work does a unit of it at least every ``STARVE_TICKS`` + 1 ticks, so how
    many ticks a result takes is bounded the same on any machine (see
    :func:`npc_memory.state.tick.ticks_bound`). ``deterministic=True`` drops the time
    budgets and keeps the count caps: the same seed then gives the same world tick for
    tick on any machine (headless simulations, replays). ``priority`` is the base esper
    priority of the plugin's processors. ``game_id`` names the game being played: every
    memory and fact made from now on carries it, and ``plugin.privacy.end_game()`` purges the
    ``session`` and ``anon`` ones of that game.

    The world that was current before the call is current again afterwards.
    Raises :class:`AlreadyInstalledError` if a plugin is installed in ``world``,
    :class:`PackError` for a bad pack and :class:`StoreError` (locked, damaged or too
    new) for a store that cannot be used; nothing is installed then.
    """
    name = _world_name(world)
    if name in _INSTALLED:
        raise AlreadyInstalledError(
            f"npc_memory is already installed in esper world {name!r}; call npc_memory.uninstall() first"
        )
    for label, value in (("seed", seed), ("priority", priority)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentError(f"{label} must be an int, got {value!r}")
    if fixed_step is not None:
        check_positive("fixed_step", fixed_step, "real seconds")
    check_flag("deterministic", deterministic)
    game = check_text("game_id", game_id, MAX_KEY_CHARS)
    check_flag("forward_events", forward_events)
    if not isinstance(pack, (str, os.PathLike, Pack)):
        raise InvalidArgumentError(f"pack must be a bundled pack name, a path or a Pack, got {pack!r}")
    if event_errors not in ("raise", "log"):
        raise InvalidArgumentError(f"event_errors must be 'raise' or 'log', got {event_errors!r}")
    loaded = pack if isinstance(pack, Pack) else load_pack(pack)
    dt_source = _dt_source(dt)
    clock = GameClock(start=check_number("start_time", start_time), time_scale=time_scale)
    backend = _open_store(store, loaded, name)
    pipeline: ExtractionPipeline | None = None
    try:
        contents = backend.load() if backend is not None else None
        pipeline = ExtractionPipeline(
            loaded.budgets,
            loaded.llm,
            _checked_llm(llm),
            rules=RuleBasedExtractor(loaded.extraction),  # the pack's cues and tags
            tags=loaded.extraction.vocabulary(),  # …which the LLM prompt offers too
        )
        state = WorldState(
            world=name,
            pack=loaded,
            clock=clock,
            rng=random.Random(seed),
            gossip_rng=gossip_rng(seed),
            seed=seed,
            registry=Registry(name),
            events=EventQueue(EventBus(), name, forward=forward_events, errors=event_errors),
            game=game,
        )
        snapshots = 0
        if contents is not None:
            state.stored = contents.documents
            if contents.meta is not None:
                meta = contents.meta
                pipeline.restore(meta.pending_extractions)
                pipeline.stats.grounding.restore(meta.grounding)
                clock.set(max(meta.clock, clock.now))
                snapshots = meta.snapshots
                if meta.rng_state is not None:
                    unpack_rng_state(state.rng, meta.rng_state, meta.rng_gauss)
                if meta.gossip_rng_state is not None:
                    unpack_rng_state(state.gossip_rng, meta.gossip_rng_state, meta.gossip_rng_gauss)
        ticks = Ticks(dt_source, fixed_step, priority, deterministic)
        plugin = MemoryPlugin(state, pipeline, backend, snapshots, ticks)
    except BaseException:
        if pipeline is not None:
            pipeline.close()
        if backend is not None:
            backend.close()
        raise
    _INSTALLED[name] = plugin
    return plugin


def _world_name(world: str | None) -> str:
    """The esper world ``world`` names (``None``: the current one)."""
    name = esper.current_world if world is None else world
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"world must be a non-empty string, got {world!r}")
    return name


def _dt_source(dt: str | DtSource | None) -> DtSource:
    if dt is None:
        return first_positional
    if isinstance(dt, str):
        return keyword(dt)
    if callable(dt):
        return dt
    raise InvalidArgumentError(f"dt must be None, a keyword name or a callable, got {dt!r}")


def _checked_llm(llm: AnthropicExtractor | None) -> AnthropicExtractor | None:
    if llm is None:
        return None
    from npc_memory.extraction.anthropic import AnthropicExtractor  # imports anthropic

    if not isinstance(llm, AnthropicExtractor):
        raise InvalidArgumentError(f"llm must be an npc_memory.AnthropicExtractor or None, got {llm!r}")
    return llm


def _open_store(store: str | os.PathLike[str] | Store | None, pack: Pack, world: str) -> Store | None:
    if store is None:
        return None
    migration = MigrationContext(thresholds=pack.relationships.thresholds)
    if isinstance(store, str) and is_url(store):
        from npc_memory.store.postgres import PostgresStore  # needs the optional 'postgres' extra

        return PostgresStore(store, world=world, migration=migration)
    if isinstance(store, (str, os.PathLike)):
        return TinyDBStore(store, migration=migration, checkpoint_process=True)
    if isinstance(store, Store):
        return store
    raise InvalidArgumentError(f"store must be a path, a Store or None, got {store!r}")


def uninstall(world: str | None = None, *, save: bool = True) -> None:
    """Remove the plugin from ``world`` (default: the current world): save everything
    to its store and close it, remove its processors and event subscriptions.
    Components stay on their entities. Raises :class:`NotInstalledError` if no plugin
    is installed there. If the final save fails, raises :class:`StoreError` saying how
    to go on, and the plugin stays installed with everything in memory: call
    ``uninstall`` again once the store works, ``plugin.storage.export(PATH)`` to write the
    world elsewhere, or ``uninstall(save=False)`` to give up what is not on disk."""
    check_flag("save", save)
    name = _world_name(world)
    plugin = _INSTALLED.get(name)
    if plugin is None:
        raise NotInstalledError(f"npc_memory is not installed in esper world {name!r}")
    plugin.detach(save=save)
    del _INSTALLED[name]


def get_plugin(world: str | None = None) -> MemoryPlugin:
    """The plugin installed in ``world`` (default: the current world)."""
    name = _world_name(world)
    try:
        return _INSTALLED[name]
    except KeyError:
        raise NotInstalledError(f"npc_memory is not installed in esper world {name!r}") from None
