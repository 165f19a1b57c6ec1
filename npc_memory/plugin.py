"""The plugin's entry point: ``install()``/``uninstall()`` and the :class:`MemoryPlugin` facade.

One plugin is installed per esper world. Everything the plugin knows about that
world lives on its :class:`MemoryPlugin` object (and the processors it adds), so
two worlds hold fully independent NPC memories.
"""

from __future__ import annotations

import concurrent.futures
import copy
import datetime
import math
import os
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import esper
import msgspec

from npc_memory.bus import EventBus, Subscription
from npc_memory.clock import GameClock
from npc_memory.components import (
    DIMENSIONS,
    MEMORY_KINDS,
    VALENCES,
    EpisodicMemory,
    FactionMember,
    Identity,
    Location,
    Memory,
    MemoryBank,
    MemoryKind,
    NpcTraits,
    PairMemories,
    PlayerProfile,
    ProceduralMemory,
    Relationship,
    Relationships,
    Scope,
    SemanticMemory,
    TriggerContext,
    Valence,
)
from npc_memory.components.knowledge import (
    Fact,
    FactCategory,
    KnowledgeBase,
)
from npc_memory.components.memory import kind_of
from npc_memory.components.relationship import Dimension
from npc_memory.components.working import ConversationSummary, WorkingMemory
from npc_memory.content import Pack, load_pack
from npc_memory.context import recall as recall_rules
from npc_memory.context import text as text_rules
from npc_memory.context.builder import ContextProvider, ContextRequest, PromptContext
from npc_memory.context.builder import build as build_context
from npc_memory.context.providers import DEFAULT_PROVIDERS, reputation
from npc_memory.context.text import estimate_tokens
from npc_memory.errors import (
    AlreadyInstalledError,
    DuplicateKeyError,
    InvalidArgumentError,
    MemoryCapacityError,
    NotInstalledError,
    NpcMemoryError,
    PrivacyError,
    UnknownContentError,
    UnknownEntityError,
    VersionConflictError,
)
from npc_memory.events import (
    THRESHOLD_EVENTS,
    Event,
    ExtractionDropped,
    FactionReputationShift,
    MemoriesExtracted,
    MemoryMilestone,
    RelationshipStageChanged,
    RelationshipThresholdCrossed,
    SnapshotFailed,
)
from npc_memory.extraction.model import ExtractionJob, ExtractionResult, SummaryOutcome, Turn
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.extraction.rules import summarize
from npc_memory.knowledge import Knowledge
from npc_memory.maintenance import Maintenance
from npc_memory.query import MemoryQuery
from npc_memory.rules import consolidation as consolidation_rules
from npc_memory.rules import knowledge as knowledge_rules
from npc_memory.rules import memory as memory_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.reputation import FactionStanding
from npc_memory.store import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    MigrationContext,
    NpcDocument,
    PlayerDocument,
    Store,
    StoreContents,
    StoreMeta,
    TinyDBStore,
)
from npc_memory.store.documents import pack_rng_state, unpack_rng_state
from npc_memory.store.writer import StoreWriter, WriteBatch
from npc_memory.systems import (
    CLOCK_PRIORITY,
    CONSOLIDATION_PRIORITY,
    DECAY_PRIORITY,
    EXTRACTION_PRIORITY,
    GOSSIP_PRIORITY,
    PRIORITY_BASE,
    SNAPSHOT_PRIORITY,
    ClockSystem,
    DtSource,
    first_positional,
    keyword,
)
from npc_memory.systems.decay import ConsolidationSystem, DecaySystem, PairCursor
from npc_memory.systems.extraction import ExtractionSystem
from npc_memory.systems.gossip import GossipBoard, GossipSystem
from npc_memory.systems.snapshot import SnapshotSystem, Snapshotter
from npc_memory.validation import (
    MAX_KEY_CHARS,
    check_category,
    check_positive,
    check_room,
    check_scope,
    check_tags,
    check_text,
    check_unit,
)
from npc_memory.world import world_context

if TYPE_CHECKING:
    from npc_memory.extraction.anthropic import AnthropicExtractor

Ref = int | str
"""An NPC or player: its esper entity id in the plugin's world, or its stable key."""

E = TypeVar("E", bound=Event)
_D = TypeVar("_D", NpcDocument, PlayerDocument)

GAME_ONLY_TAGS = frozenset({"game-only", "game_only"})
"""Memories with these tags are game clues and are never stored."""

MAX_CONTENT_CHARS = 2000
MAX_TURNS = 500
RULES_CONFIDENCE = 0.7
LLM_CONFIDENCE = 0.9

_INSTALLED: dict[str, MemoryPlugin] = {}


@dataclass(slots=True)
class NpcHandle:
    """The plugin's references to one NPC's components (attached once, mutated in place)."""

    entity: int
    identity: Identity
    faction: FactionMember
    location: Location
    traits: NpcTraits
    bank: MemoryBank
    relationships: Relationships
    working: WorkingMemory
    knowledge: KnowledgeBase


@dataclass(slots=True)
class PlayerHandle:
    """The plugin's references to one player's components."""

    entity: int
    identity: Identity
    faction: FactionMember
    location: Location
    profile: PlayerProfile


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
    forward_events: bool = False,
    priority: int = PRIORITY_BASE,
) -> MemoryPlugin:
    """Install the plugin into esper world ``world`` (default: the current world).

    ``pack`` is a bundled pack name, a path to a TOML pack or a loaded :class:`Pack`.
    ``store`` persists the world: a directory path (a :class:`TinyDBStore`, created if
    missing), any :class:`Store` (the plugin takes ownership and closes it), or ``None``
    to keep everything in memory. A store's saved clock and random state are restored,
    and each saved NPC or player is restored when its key is added again.
    ``llm`` turns on LLM extraction (an :class:`AnthropicExtractor`); without it,
    conversations are extracted by the rule-based extractor, offline.
    ``seed`` seeds the plugin's random generator (same seed, same world).
    Game time starts at ``start_time`` game seconds and advances by ``time_scale``
    game seconds per real second passed to ``esper.process``: by default its first
    positional argument; ``dt="name"`` reads a keyword argument, a callable
    ``(args, kwargs) -> float`` anything else. ``forward_events`` also dispatches
    each plugin event through ``esper.dispatch_event(type name, event)``.
    ``priority`` is the base esper priority of the plugin's processors.

    The world that was current before the call is current again afterwards.
    Raises :class:`AlreadyInstalledError` if a plugin is installed in ``world``,
    :class:`PackError` for a bad pack and :class:`StoreError` (locked, damaged or too
    new) for a store that cannot be used; nothing is installed then.
    """
    name = esper.current_world if world is None else world
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"world must be a non-empty string, got {world!r}")
    if name in _INSTALLED:
        raise AlreadyInstalledError(
            f"npc_memory is already installed in esper world {name!r}; "
            "call npc_memory.uninstall() first"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidArgumentError(f"seed must be an int, got {seed!r}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidArgumentError(f"priority must be an int, got {priority!r}")
    loaded = pack if isinstance(pack, Pack) else load_pack(pack)
    if dt is None:
        dt_source: DtSource = first_positional
    elif isinstance(dt, str):
        dt_source = keyword(dt)
    elif callable(dt):
        dt_source = dt
    else:
        raise InvalidArgumentError(f"dt must be None, a keyword name or a callable, got {dt!r}")
    clock = GameClock(start=start_time, time_scale=time_scale)
    backend = _open_store(store, loaded)
    pipeline: ExtractionPipeline | None = None
    try:
        contents = backend.load() if backend is not None else None
        pipeline = ExtractionPipeline(loaded.budgets, loaded.llm, _llm_worker(llm, loaded))
        plugin = MemoryPlugin(name, loaded, seed=seed, clock=clock, forward_events=forward_events)
        plugin._attach(ClockSystem(plugin.clock, dt_source), priority + CLOCK_PRIORITY)
        plugin._attach_extraction(pipeline, priority + EXTRACTION_PRIORITY)
        plugin._attach(
            GossipSystem(
                plugin._board, plugin.rng, loaded.budgets.gossip_exchanges_per_tick, plugin._knowledge.gossip
            ),
            priority + GOSSIP_PRIORITY,
        )
        memory_rules_in_pack = loaded.memory
        plugin._attach(
            DecaySystem(
                PairCursor(plugin.npcs, plugin._maintenance.pairs_of),
                plugin.clock,
                loaded.budgets.decay_pairs_per_tick,
                memory_rules_in_pack.decay_interval,
                plugin._maintenance.decay_pair,
            ),
            priority + DECAY_PRIORITY,
        )
        plugin._attach(
            ConsolidationSystem(
                PairCursor(plugin.npcs, plugin._maintenance.pairs_of),
                plugin.clock,
                loaded.budgets.consolidation_pairs_per_tick,
                memory_rules_in_pack.decay_interval,
                plugin._maintenance.consolidate_pair,
                poll=plugin._maintenance.poll_summaries,
            ),
            priority + CONSOLIDATION_PRIORITY,
        )
        if backend is not None and contents is not None:
            plugin._attach_store(backend, contents, priority + SNAPSHOT_PRIORITY)
    except BaseException:
        if pipeline is not None:
            pipeline.close()
        if backend is not None:
            backend.close()
        raise
    _INSTALLED[name] = plugin
    return plugin


def _llm_worker(llm: AnthropicExtractor | None, pack: Pack) -> Any:
    if llm is None:
        return None
    from npc_memory.extraction.anthropic import AnthropicExtractor, LLMWorker  # imports anthropic

    if not isinstance(llm, AnthropicExtractor):
        raise InvalidArgumentError(f"llm must be an npc_memory.AnthropicExtractor or None, got {llm!r}")
    return LLMWorker(
        llm,
        deadline=pack.llm.deadline,
        max_retries=pack.llm.max_retries,
        max_tokens=pack.llm.max_output_tokens,
    )


def _open_store(store: str | os.PathLike[str] | Store | None, pack: Pack) -> Store | None:
    if store is None:
        return None
    if isinstance(store, (str, os.PathLike)):
        return TinyDBStore(store, migration=MigrationContext(thresholds=pack.relationships.thresholds))
    if isinstance(store, Store):
        return store
    raise InvalidArgumentError(f"store must be a path, a Store or None, got {store!r}")


def uninstall(world: str | None = None) -> None:
    """Remove the plugin from ``world`` (default: the current world): save everything
    to its store and close it, remove its processors and event subscriptions.
    Components stay on their entities. Raises :class:`NotInstalledError` if no plugin
    is installed there, and :class:`StoreError` if the final save failed (the plugin is
    uninstalled all the same)."""
    name = esper.current_world if world is None else world
    plugin = _INSTALLED.pop(name, None)
    if plugin is None:
        raise NotInstalledError(f"npc_memory is not installed in esper world {name!r}")
    plugin._detach()


def get_plugin(world: str | None = None) -> MemoryPlugin:
    """The plugin installed in ``world`` (default: the current world)."""
    name = esper.current_world if world is None else world
    try:
        return _INSTALLED[name]
    except KeyError:
        raise NotInstalledError(f"npc_memory is not installed in esper world {name!r}") from None


class ConversationEnded(msgspec.Struct, frozen=True, kw_only=True):
    """What ``end_conversation`` did: the conversation's id, its working-memory summary,
    and what happened to its extraction: ``"queued"``, ``"extracted"`` (queue full: the
    rules extracted it at once) or ``"dropped"`` (queue full, pack says drop)."""

    conversation: str
    summary: str
    status: Literal["queued", "extracted", "dropped"]


class PromptMessages(msgspec.Struct, frozen=True, kw_only=True):
    """A ready Anthropic Messages request body: ``system`` and ``messages``, and the
    :class:`PromptContext` the system prompt was built with."""

    system: str
    messages: list[dict[str, str]]
    context: PromptContext


class MemoryPlugin:
    """The facade of one installed plugin: spawn NPCs and players, record memories,
    change relationships, subscribe to events, ask questions (:attr:`query`).

    Calls are synchronous and cheap (O(1) or O(memories of one pair)); they may be
    made whichever esper world is current.
    """

    def __init__(
        self,
        world: str,
        pack: Pack,
        *,
        seed: int,
        clock: GameClock,
        forward_events: bool = False,
    ) -> None:
        self.world = world
        """Name of the esper world the plugin is installed in."""
        self.pack = pack
        """The content pack in force."""
        self.seed = seed
        self.rng = random.Random(seed)
        """The plugin's seeded random generator: all of its randomness comes from here."""
        self.clock = clock
        """Game time; read ``plugin.clock.now`` (game seconds)."""
        self.query = MemoryQuery(self)
        """Typed, in-memory questions for game logic."""
        self.forward_events = forward_events
        self._bus = EventBus()
        self._npcs: dict[int, NpcHandle] = {}
        self._players: dict[int, PlayerHandle] = {}
        self._entities_by_key: dict[str, int] = {}
        self._processors: list[esper.Processor] = []
        self._installed = True
        self.store: Store | None = None
        """The store snapshots go to, or ``None`` when the world lives in memory only."""
        self._stored: dict[str, Document] = {}
        self._writer: StoreWriter | None = None
        self._snapshotter: Snapshotter | None = None
        self._pipeline: ExtractionPipeline | None = None
        self._conversations: dict[tuple[str, str], list[Turn]] = {}
        self._facts: dict[str, knowledge_rules.FactIndex] = {}
        self._maintenance = Maintenance(self)
        self._terms = recall_rules.TermCache()
        self._scorer: recall_rules.Scorer = recall_rules.BM25()
        self._summaries: list[
            tuple[str, str, consolidation_rules.Cluster, int, concurrent.futures.Future[SummaryOutcome]]
        ] = []
        self._standing = FactionStanding(bands=list(pack.knowledge.reputation_bands))
        self._knowledge = Knowledge(self)
        self._board = GossipBoard(
            teller_weight=self._knowledge.teller_weight,
            listener_weight=self._knowledge.listener_weight,
            has_news=self._knowledge.has_news,
        )

    # ------------------------------------------------------------------ lifecycle

    def _attach(self, processor: esper.Processor, priority: int) -> None:
        with world_context(self.world, create=True):
            esper.add_processor(processor, priority=priority)
        self._processors.append(processor)

    def _attach_extraction(self, pipeline: ExtractionPipeline, priority: int) -> None:
        self._pipeline = pipeline
        self._attach(ExtractionSystem(pipeline, self._apply_extraction), priority)

    @property
    def extraction(self) -> ExtractionPipeline:
        """The extraction pipeline: ``stats``, ``limiter`` (budgets), ``breaker``, queue."""
        assert self._pipeline is not None
        return self._pipeline

    def _attach_store(self, store: Store, contents: StoreContents, priority: int) -> None:
        meta = contents.meta
        if meta is not None:
            self.extraction.restore(meta.pending_extractions)
            self.clock.set(max(meta.clock, self.clock.now))
            if meta.rng_state is not None:
                unpack_rng_state(self.rng, meta.rng_state, meta.rng_gauss)
        self.store = store
        self._stored = contents.documents
        self._writer = StoreWriter(store, name=f"npc-memory-{self.world}")
        self._snapshotter = Snapshotter(
            self._writer,
            self.clock,
            self.pack.budgets,
            document_for=self._document,
            meta_for=self._meta,
            on_failure=self._snapshot_failed,
            snapshots=0 if meta is None else meta.snapshots,
        )
        self._attach(SnapshotSystem(self._snapshotter), priority)

    def _snapshot_failed(self, error: Exception) -> None:
        self._publish(SnapshotFailed(game_time=self.clock.now, error=str(error)))

    def _detach(self) -> None:
        error: BaseException | None = None
        try:
            self.save()
        except NpcMemoryError as exc:
            error = exc
        self._maintenance.close()
        if self._pipeline is not None:
            self._pipeline.close()
        if self._writer is not None:
            self._writer.close()
        if self.store is not None:
            self.store.close()
        if self.world in esper.list_worlds():
            with world_context(self.world):
                for processor in self._processors:
                    if esper.get_processor(type(processor)) is processor:
                        esper.remove_processor(type(processor))
        self._processors.clear()
        self._bus.clear()
        self._installed = False
        if error is not None:
            raise error

    def save(self) -> None:
        """Write every change to the store now and wait until it is on disk (a no-op
        without a store). Raises :class:`StoreError` if writing failed; the changes
        stay queued for the next snapshot."""
        self._check_installed()
        if self._snapshotter is not None:
            self._snapshotter.save()

    def stored_npcs(self) -> list[str]:
        """Keys of NPCs saved in the store and not added to the world (yet)."""
        return sorted(k for k, d in self._stored.items() if isinstance(d, NpcDocument))

    def stored_players(self) -> list[str]:
        """Keys of players saved in the store and not added to the world (yet)."""
        return sorted(k for k, d in self._stored.items() if isinstance(d, PlayerDocument))

    @property
    def installed(self) -> bool:
        """Whether the plugin is still installed in its world."""
        return self._installed

    # ------------------------------------------------------------------ spawning

    def add_npc(
        self,
        entity: int | None = None,
        *,
        key: str,
        name: str | None = None,
        faction: str | None = None,
        archetype: str | None = None,
        room: str | None = None,
    ) -> int:
        """Make ``entity`` (created in the plugin's world if ``None``) an NPC and return it.

        Attaches Identity, FactionMember, Location, NpcTraits, MemoryBank,
        Relationships, WorkingMemory and KnowledgeBase once; the pack's authored facts
        for this NPC are learned. ``faction`` defaults to the archetype's faction; traits
        come from the archetype (neutral traits without one). ``key`` is the NPC's
        stable identity and must be unique among NPCs and players.

        If the store holds an NPC with this key, its memories and relationships are
        restored, and the saved name, faction, archetype and room fill in whichever of
        those arguments are ``None``.
        """
        self._check_installed()
        key, display = self._check_new_key(key, name)
        saved = self._saved(key, NpcDocument)
        if saved is not None:
            display = saved.name if name is None else display
            archetype = saved.archetype if archetype is None else archetype
            faction = saved.faction if faction is None else faction
            room = saved.room if room is None else room
        traits = NpcTraits()
        if archetype is not None:
            arch = self.pack.archetypes.get(archetype)
            if arch is None:
                raise UnknownContentError(
                    f"unknown archetype {archetype!r} for NPC {key!r}; pack "
                    f"{self.pack.pack.name!r} defines: {', '.join(sorted(self.pack.archetypes))}"
                )
            faction = arch.faction if faction is None else faction
            traits = NpcTraits(archetype=archetype, **arch.traits.model_dump())
        self._check_faction(faction, key)
        handle = NpcHandle(
            entity=0,
            identity=Identity(key=key, name=display),
            faction=FactionMember(faction=faction),
            location=Location(room=check_room(room)),
            traits=traits,
            bank=MemoryBank() if saved is None else saved.bank,
            relationships=Relationships() if saved is None else saved.relationships,
            working=WorkingMemory() if saved is None else saved.working,
            knowledge=KnowledgeBase() if saved is None else saved.knowledge,
        )
        handle.entity = self._attach_components(
            entity,
            key,
            handle.identity,
            handle.faction,
            handle.location,
            handle.traits,
            handle.bank,
            handle.relationships,
            handle.working,
            handle.knowledge,
        )
        self._npcs[handle.entity] = handle
        self._entities_by_key[key] = handle.entity
        self._stored.pop(key, None)
        self._facts[key] = knowledge_rules.FactIndex(handle.knowledge, self.pack.knowledge, self.clock.now)
        self._board.enter(key, handle.location.room)
        if handle.faction.faction is not None:
            self._standing.join(
                handle.faction.faction, {p: r.disposition for p, r in handle.relationships.by_player.items()}
            )
        self._knowledge.learn_authored(handle)
        if saved is None or (saved.name, saved.faction, saved.archetype) != (
            display,
            faction,
            traits.archetype,
        ):
            self._mark(key)
        self._unpark()
        return handle.entity

    def add_player(
        self,
        entity: int | None = None,
        *,
        key: str,
        name: str | None = None,
        faction: str | None = None,
        room: str | None = None,
        consent: bool | None = None,
        anonymous: bool | None = None,
    ) -> int:
        """Make ``entity`` (created if ``None``) a player and return it.

        ``consent``: the player agreed to be remembered across sessions, which allows
        ``player``-scoped memories and makes them the default. ``anonymous``: an
        unidentified participant, remembered only as ``anon`` fragments. Both default
        to the saved values of a stored player, else ``False``.
        """
        self._check_installed()
        key, display = self._check_new_key(key, name)
        saved = self._saved(key, PlayerDocument)
        if saved is not None:
            display = saved.name if name is None else display
            faction = saved.faction if faction is None else faction
            room = saved.room if room is None else room
            consent = saved.profile.consent if consent is None else consent
            anonymous = saved.profile.anonymous if anonymous is None else anonymous
        self._check_faction(faction, key)
        if consent and anonymous:
            raise PrivacyError(f"player {key!r} cannot be both anonymous and consenting")
        handle = PlayerHandle(
            entity=0,
            identity=Identity(key=key, name=display),
            faction=FactionMember(faction=faction),
            location=Location(room=check_room(room)),
            profile=PlayerProfile(consent=bool(consent), anonymous=bool(anonymous)),
        )
        handle.entity = self._attach_components(
            entity, key, handle.identity, handle.faction, handle.location, handle.profile
        )
        self._players[handle.entity] = handle
        self._entities_by_key[key] = handle.entity
        self._stored.pop(key, None)
        if saved is None or (saved.name, saved.faction, saved.profile) != (
            display,
            faction,
            handle.profile,
        ):
            self._mark(key)
        self._unpark()
        return handle.entity

    def remove(self, ref: Ref, *, forget: bool = False) -> None:
        """Take an NPC or player out of the live world: detach the plugin's components
        from its entity (the entity itself stays). Call this before deleting an entity
        the plugin knows. Its saved state stays in the store, restored if the key is
        added again, unless ``forget`` deletes it from the store too."""
        self._check_installed()
        entity = self._resolve_entity(ref)
        handle: NpcHandle | PlayerHandle = self._npcs.get(entity) or self._players[entity]
        key = handle.identity.key
        if self._snapshotter is not None:
            if forget:
                self._snapshotter.forget(key)
                self._writer_audit("forget", key)
            else:
                self._stored[key] = self._document_of(handle)
        with world_context(self.world):
            if esper.entity_exists(entity):
                for component in _components_of(handle):
                    esper.try_remove_component(entity, type(component))
        if isinstance(handle, NpcHandle):
            self._board.leave(key, handle.location.room)
            self._facts.pop(key, None)
            if handle.faction.faction is not None:
                dispositions = {p: r.disposition for p, r in handle.relationships.by_player.items()}
                self._standing.leave(handle.faction.faction, dispositions)
        self._npcs.pop(entity, None)
        self._players.pop(entity, None)
        del self._entities_by_key[handle.identity.key]

    def move(self, ref: Ref, room: str | None) -> None:
        """Put an NPC or player in ``room`` (``None``: nowhere in particular)."""
        entity = self._resolve_entity(ref)
        handle: NpcHandle | PlayerHandle = self._npcs.get(entity) or self._players[entity]
        room = check_room(room)
        if isinstance(handle, NpcHandle) and room != handle.location.room:
            self._board.leave(handle.identity.key, handle.location.room)
            self._board.enter(handle.identity.key, room)
        handle.location.room = room

    def entity(self, key: str) -> int:
        """The entity of the NPC or player with stable key ``key``."""
        return self._resolve_entity(key)

    def key(self, ref: Ref) -> str:
        """The stable key of an NPC or player."""
        entity = self._resolve_entity(ref)
        handle: NpcHandle | PlayerHandle = self._npcs.get(entity) or self._players[entity]
        return handle.identity.key

    def npcs(self) -> list[str]:
        """Keys of every NPC, in the order they were added."""
        return [h.identity.key for h in self._npcs.values()]

    def players(self) -> list[str]:
        """Keys of every player, in the order they were added."""
        return [h.identity.key for h in self._players.values()]

    def npc(self, ref: Ref) -> NpcHandle:
        """The live components of an NPC (treat as read-only; change them through the
        facade so invariants, versions and events hold)."""
        return self._resolve_npc(ref)

    def player(self, ref: Ref) -> PlayerHandle:
        """The live components of a player (treat as read-only)."""
        return self._resolve_player(ref)

    # ------------------------------------------------------------------ memories

    def remember(
        self,
        npc: Ref,
        player: Ref | None,
        content: str,
        *,
        kind: MemoryKind = "episodic",
        tags: Iterable[str] = (),
        importance: float = 0.5,
        confidence: float = 1.0,
        valence: Valence = "neutral",
        intensity: float = 0.0,
        locked: bool = False,
        scope: Scope | None = None,
        room: str | None = None,
        source_conversation: str | None = None,
        pattern: str | None = None,
        trigger: TriggerContext | None = None,
        source_episodes: Iterable[str] = (),
        affect_relationship: bool = False,
    ) -> Memory:
        """Store a memory of ``npc`` about ``player`` (``None``: about the world).

        Ranges: ``importance``, ``confidence``, ``intensity`` in [0, 1]. ``scope``
        defaults to the narrowest that fits: ``anon`` for an anonymous player,
        ``player`` for a consenting one, ``session`` otherwise. ``room`` defaults to
        the NPC's room. Procedural memories take a ``pattern`` (default: content) and
        a ``trigger``; semantic memories may name their ``source_episodes``. With
        ``affect_relationship`` the memory's tags move the relationship by the pack's
        tag rules (one update; threshold and stage events fire).

        A procedural memory with the same first tag and trigger as one already held
        (or the same pattern, untagged) reinforces that habit instead: its
        ``reinforcement`` grows by one and it is returned.

        Keeps the pair within its caps by evicting (see :func:`rules.memory.insert`);
        returns the new record, which is itself evicted at once if it ranks below
        every unlocked memory of a full kind. Memories tagged ``game-only`` are
        refused with :class:`PrivacyError`. Nothing is changed when an error is raised.
        """
        self._check_installed()
        handle = self._resolve_npc(npc)
        target = None if player is None else self._resolve_player(player)
        text = check_text("content", content, MAX_CONTENT_CHARS)
        tag_tuple = check_tags(tags)
        if GAME_ONLY_TAGS.intersection(tag_tuple):
            raise PrivacyError("memories tagged 'game-only' are game clues and are never stored")
        if kind not in MEMORY_KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}")
        if valence not in VALENCES:
            raise InvalidArgumentError(f"valence must be one of {', '.join(VALENCES)}, got {valence!r}")
        check_unit("importance", importance)
        check_unit("confidence", confidence)
        check_unit("intensity", intensity)
        resolved_scope = check_scope(scope, target)
        if affect_relationship and target is None:
            raise InvalidArgumentError("affect_relationship needs a player, not a world-scoped memory")
        if kind != "procedural" and (pattern is not None or trigger is not None):
            raise InvalidArgumentError("pattern and trigger apply to procedural memories only")
        if trigger is not None and not isinstance(trigger, TriggerContext):
            raise InvalidArgumentError(f"trigger must be a TriggerContext, got {trigger!r}")
        episodes = tuple(source_episodes)
        if episodes and kind != "semantic":
            raise InvalidArgumentError("source_episodes apply to semantic memories only")
        key = None if target is None else target.identity.key
        existing = handle.bank.pair(key)
        known_ids = {m.id for m in existing.all()} if existing is not None else set()
        unknown = [e for e in episodes if e not in known_ids]
        if unknown:
            raise InvalidArgumentError(f"source_episodes not held for this pair: {', '.join(unknown)}")
        now = self.clock.now
        common: dict[str, Any] = {
            "content": text,
            "tags": tag_tuple,
            "importance": float(importance),
            "confidence": float(confidence),
            "valence": valence,
            "intensity": float(intensity),
            "created": now,
            "last_accessed": now,
            "locked": bool(locked),
            "scope": resolved_scope,
            "room": handle.location.room if room is None else check_room(room),
            "source_conversation": source_conversation,
        }
        pair = handle.bank.pair_for_write(key)
        memory: Memory
        memory_id = f"m{handle.bank.next_id}"
        if kind == "episodic":
            memory = EpisodicMemory(id=memory_id, **common)
        elif kind == "semantic":
            memory = SemanticMemory(id=memory_id, source_episodes=episodes, **common)
        else:
            memory = ProceduralMemory(
                id=memory_id,
                pattern=text if pattern is None else check_text("pattern", pattern, MAX_CONTENT_CHARS),
                trigger=trigger or TriggerContext(),
                **common,
            )
        habit = _same_habit(pair, memory) if isinstance(memory, ProceduralMemory) else None
        if habit is not None:
            memory = msgspec.structs.replace(
                habit,
                reinforcement=habit.reinforcement + 1,
                last_accessed=now,
                importance=max(habit.importance, memory.importance),
                locked=habit.locked or memory.locked,
            )
            pair.procedural[pair.procedural.index(habit)] = memory
        else:
            memory_rules.insert(pair, memory, self.pack.memory, now)
            handle.bank.next_id += 1
        self._mark(handle.identity.key)
        if key is not None and habit is None:
            self._check_milestone(handle, key, len(pair))
        if affect_relationship and target is not None:
            deltas = rel_rules.memory_deltas(
                tag_tuple, importance, intensity, valence, self.pack.relationships
            )
            if deltas:
                self._change_relationship(handle, target, deltas)
        return memory

    def memories(
        self, npc: Ref, player: Ref | None = None, *, kind: MemoryKind | None = None
    ) -> list[Memory]:
        """The memories ``npc`` holds about ``player`` (``None``: world-scoped), highest
        salience first; only those of ``kind`` if given."""
        handle = self._resolve_npc(npc)
        key = None if player is None else self._resolve_player(player).identity.key
        pair = handle.bank.pair(key)
        if pair is None:
            return []
        if kind is None:
            records = pair.all()
        elif kind in MEMORY_KINDS:
            records = list(getattr(pair, kind))
        else:
            raise InvalidArgumentError(f"kind must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}")
        rules = self.pack.memory
        now = self.clock.now
        return memory_rules.rank_by_salience(records, now, rules.recency_days, rules.intensity_retention)

    def salience(self, memory: Memory) -> float:
        """Salience of ``memory`` now, in [0, 1]."""
        rules = self.pack.memory
        return memory_rules.salience(memory, self.clock.now, rules.recency_days, rules.intensity_retention)

    # ------------------------------------------------------------------ conversations

    def say(self, npc: Ref, player: Ref, speaker: str, text: str) -> None:
        """Append a line to the open conversation between ``npc`` and ``player``
        (opened by the first line). ``speaker`` is who said it (a display name)."""
        self._check_installed()
        handle, target = self._resolve_npc(npc), self._resolve_player(player)
        line = Turn(
            check_text("speaker", speaker, MAX_KEY_CHARS), check_text("text", text, MAX_CONTENT_CHARS)
        )
        pair = (handle.identity.key, target.identity.key)
        turns = self._conversations.setdefault(pair, [])
        if len(turns) >= MAX_TURNS:
            raise InvalidArgumentError(
                f"the conversation of {pair[0]!r} and {pair[1]!r} has {MAX_TURNS} lines; end it first"
            )
        turns.append(line)

    def end_conversation(self, npc: Ref, player: Ref) -> ConversationEnded | None:
        """Close the open conversation of ``npc`` and ``player`` and queue its extraction.

        At once: the conversation gets an id (``"<npc>/<player>/<n>"``), a one-line
        summary goes into the NPC's working memory (last three per pair), and the pair
        counts one interaction. The extraction job then waits for ExtractionSystem. If
        the queue is full the result says so: ``status`` is ``"extracted"`` when the
        rules extracted it on the spot (pack ``extraction_overflow = "rules"``) or
        ``"dropped"`` (``"drop"``; an ExtractionDropped event fires). Returns ``None``
        when no conversation is open, so ending twice is harmless."""
        self._check_installed()
        handle, target = self._resolve_npc(npc), self._resolve_player(player)
        npc_key, player_key = handle.identity.key, target.identity.key
        turns = self._conversations.pop((npc_key, player_key), None)
        if not turns:
            return None
        working = handle.working
        number = working.conversations.get(player_key, 0) + 1
        working.conversations[player_key] = number
        archetype = self.pack.archetypes.get(handle.traits.archetype or "")
        job = ExtractionJob(
            conversation=f"{npc_key}/{player_key}/{number}",
            npc=npc_key,
            npc_name=handle.identity.name,
            npc_role=archetype.role if archetype is not None else "",
            player=player_key,
            player_name=target.identity.name,
            room=handle.location.room,
            turns=tuple(turns),
            ended_at=self.clock.now,
        )
        summary = ConversationSummary(
            conversation=job.conversation, summary=summarize(job), turns=len(turns), ended_at=job.ended_at
        )
        working.remember_conversation(player_key, summary)
        self.record_interaction(handle.entity, target.entity)
        pipeline = self.extraction
        status: Literal["queued", "extracted", "dropped"] = "queued"
        if not pipeline.enqueue(job):
            if self.pack.budgets.extraction_overflow == "rules":
                status = "extracted"
                result = pipeline.extract_now(job, "queue full: extracted by the rules at once")
                self._apply_extraction(result)
            else:
                status = "dropped"
                pipeline.stats.dropped += 1
                dropped = ExtractionDropped(
                    game_time=self.clock.now, npc=npc_key, player=player_key, conversation=job.conversation
                )
                self._publish(dropped)
        return ConversationEnded(conversation=job.conversation, summary=summary.summary, status=status)

    def working_memory(self, npc: Ref, player: Ref) -> list[ConversationSummary]:
        """The last conversations (up to three, oldest first) of ``npc`` with ``player``."""
        handle, target = self._resolve_npc(npc), self._resolve_player(player)
        return list(handle.working.recent.get(target.identity.key, []))

    def _apply_extraction(self, result: ExtractionResult) -> None:
        job = result.job
        npc_entity = self._entities_by_key.get(job.npc, -1)
        player_entity = self._entities_by_key.get(job.player, -1)
        if npc_entity not in self._npcs or player_entity not in self._players:
            self.extraction.parked.append(result)  # applied when both are in the world again
            return
        handle, target = self._npcs[npc_entity], self._players[player_entity]
        stats = self.extraction.stats
        if not handle.working.mark_extracted(job.conversation):
            stats.duplicates += 1
            return
        confidence = LLM_CONFIDENCE if result.source == "llm" else RULES_CONFIDENCE
        ids: list[str] = []
        deltas: dict[Dimension, float] = {}
        for extracted in result.memories:
            try:
                memory = self.remember(
                    npc_entity,
                    player_entity,
                    extracted.content,
                    kind=extracted.kind,
                    tags=extracted.tags,
                    importance=extracted.importance,
                    confidence=confidence,
                    valence=extracted.valence,
                    intensity=extracted.intensity,
                    source_conversation=job.conversation,
                )
            except (MemoryCapacityError, PrivacyError):
                continue
            ids.append(memory.id)
            if extracted.tags:
                self._knowledge.learn(
                    handle,
                    content=memory.content,
                    category="player_trait",
                    subject=job.player,
                    topic=extracted.tags[0],
                    tags=extracted.tags,
                    confidence=confidence,
                    importance=extracted.importance,
                    source="conversation",
                    source_memory=memory.id,
                    room=job.room,
                )
            for dim, delta in rel_rules.memory_deltas(
                extracted.tags, extracted.importance, extracted.intensity, extracted.valence,
                self.pack.relationships,
            ).items():
                deltas[dim] = deltas.get(dim, 0.0) + delta
        self._mark(handle.identity.key)
        if deltas:
            self._change_relationship(handle, target, deltas)
        stats.applied += 1
        self._publish(
            MemoriesExtracted(
                game_time=self.clock.now,
                npc=job.npc,
                player=job.player,
                conversation=job.conversation,
                source=result.source,
                reason=result.reason,
                memories=tuple(ids),
            )
        )

    def _unpark(self) -> None:
        if self._pipeline is None or not self._pipeline.parked:
            return
        parked, self._pipeline.parked = self._pipeline.parked, []
        for result in parked:
            self._apply_extraction(result)

    # ------------------------------------------------------------------ knowledge

    def observe(
        self,
        *,
        room: str,
        content: str,
        subject: Ref | None = None,
        tags: Iterable[str] = (),
        importance: float = 0.5,
        confidence: float = 1.0,
        category: FactCategory | None = None,
        topic: str | None = None,
        expires_in: float | None = None,
    ) -> list[str]:
        """Every NPC in ``room`` witnesses something: each learns it first-hand (source
        ``observation``), and if ``subject`` is a player the tags move each witness's
        relationship by the pack's tag rules. ``topic`` (default: the first tag) groups
        competing beliefs about the subject; ``expires_in`` in game seconds. Returns the
        keys of the witnesses (sorted)."""
        self._check_installed()
        room_name = check_text("room", room, MAX_KEY_CHARS)
        text, tag_tuple, topic = _fact_arguments(
            content, tags, importance, confidence, category, topic, expires_in
        )
        subject_key = None if subject is None else self._knowledge.subject_key(subject)
        witnesses = sorted(self._board.members.get(room_name, ()))
        for key in witnesses:
            handle = self._npcs[self._entities_by_key[key]]
            fact = self._knowledge.learn(
                handle,
                content=text,
                category=category or self._knowledge.category_of(subject_key),
                subject=subject_key,
                topic=topic,
                tags=tag_tuple,
                confidence=float(confidence),
                importance=float(importance),
                source="observation",
                room=room_name,
                expires_in=expires_in,
                origin=f"seen:{room_name}:{self.clock.now!r}:{text}",
            )
            if fact is not None and fact.believed:
                self._knowledge.hearsay(handle, fact, 1.0)
        return witnesses

    def learn_fact(
        self,
        npc: Ref,
        content: str,
        *,
        subject: Ref | None = None,
        tags: Iterable[str] = (),
        importance: float = 0.5,
        confidence: float = 1.0,
        category: FactCategory | None = None,
        topic: str | None = None,
        locked: bool = False,
        expires_in: float | None = None,
    ) -> Fact | None:
        """Give one NPC an authored fact (quest logic, scripted lore). Returns the
        stored fact, or ``None`` if the NPC already knew it."""
        self._check_installed()
        handle = self._resolve_npc(npc)
        text, tag_tuple, topic = _fact_arguments(
            content, tags, importance, confidence, category, topic, expires_in
        )
        subject_key = None if subject is None else self._knowledge.subject_key(subject)
        return self._knowledge.learn(
            handle,
            content=text,
            category=category or self._knowledge.category_of(subject_key),
            subject=subject_key,
            topic=topic,
            tags=tag_tuple,
            confidence=float(confidence),
            importance=float(importance),
            source="authored",
            room=handle.location.room,
            locked=locked,
            expires_in=expires_in,
            origin=f"authored:{handle.identity.key}:{text}",
        )

    def facts(self, npc: Ref, *, include_disbelieved: bool = False) -> list[Fact]:
        """What ``npc`` knows: the facts it believes (and, if asked, the ones it no
        longer believes), oldest first; expired facts are left out."""
        handle = self._resolve_npc(npc)
        now = self.clock.now
        return [
            f
            for f in handle.knowledge.facts
            if not knowledge_rules.is_expired(f, now) and (include_disbelieved or f.believed)
        ]

    def _check_milestone(self, handle: NpcHandle, player: str, count: int) -> None:
        reached = handle.bank.milestones.get(player, 0)
        passed = [m for m in self.pack.knowledge.memory_milestones if reached < m <= count]
        if passed:
            handle.bank.milestones[player] = passed[-1]
            milestone = MemoryMilestone(
                game_time=self.clock.now,
                npc=handle.identity.key,
                player=player,
                milestone=passed[-1],
                count=count,
            )
            self._publish(milestone)

    # ------------------------------------------------------------------ names

    def _player_name(self, player: str) -> str:
        entity = self._entities_by_key.get(player)
        if entity in self._players:
            return self._players[entity].identity.name
        saved = self._stored.get(player)
        return saved.name if isinstance(saved, PlayerDocument) else player

    # ------------------------------------------------------------------ read path

    def recall(
        self, npc: Ref, player: Ref | None, query: str = "", *, k: int = 5, strengthen: bool = True
    ) -> list[Memory]:
        """The ``k`` memories of ``npc`` about ``player`` (and world-scoped ones) best
        matching ``query``: relevance (BM25 over content and tags) combined with
        salience; salience alone for an empty query. Recalling a memory strengthens it:
        its access count grows and its last access becomes now (``strengthen=False``
        only looks, for previews and evaluation)."""
        handle = self._resolve_npc(npc)
        target = None if player is None else self._resolve_player(player)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidArgumentError(f"k must be an int from 1 to 1000, got {k!r}")
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {query!r}")
        owner = handle.identity.key
        pairs = [handle.bank.world]
        if target is not None and (pair := handle.bank.pair(target.identity.key)) is not None:
            pairs.insert(0, pair)
        memories = [m for pair in pairs for m in pair.all()]
        if not memories:
            return []
        rules, now = self.pack.memory, self.clock.now
        span, retention = rules.recency_days, rules.intensity_retention
        saliences = memory_rules.saliences(memories, now, span, retention)
        documents = self._terms.of_all(owner, memories)
        weight = self.pack.context.relevance_weight
        query_terms = text_rules.terms(query)
        ranked = recall_rules.rank(memories, saliences, documents, query_terms, self._scorer, weight)
        if not strengthen:
            return [memory for _, memory in ranked[:k]]
        recalled = []
        for _, memory in ranked[:k]:
            touched = msgspec.structs.replace(memory, access_count=memory.access_count + 1, last_accessed=now)
            for pair in pairs:
                records: list[Any] = getattr(pair, kind_of(memory))
                position = next((i for i, r in enumerate(records) if r is memory), None)
                if position is not None:
                    records[position] = touched
                    break
            recalled.append(touched)
        self._mark(owner)
        return recalled

    def context(
        self,
        npc: Ref,
        player: Ref,
        message: str = "",
        *,
        max_tokens: int = 1000,
        providers: Sequence[ContextProvider] | None = None,
    ) -> PromptContext:
        """What ``npc`` brings to its reply to ``player``'s ``message``: sections from
        ``providers`` (default: relationship, working memory, memories, knowledge), each
        within its share of ``max_tokens`` (pack ``[context]``), joined into ``text``,
        which never exceeds ``max_tokens`` by :func:`npc_memory.context.estimate_tokens`;
        and ``placeholders`` such as ``reputation``. Recalls memories (see :meth:`recall`)."""
        handle, target = self._resolve_npc(npc), self._resolve_player(player)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidArgumentError(f"max_tokens must be a positive int, got {max_tokens!r}")
        chosen = list(DEFAULT_PROVIDERS if providers is None else providers)
        names = [p.name for p in chosen]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"provider names must be unique, got {names}")
        rel = handle.relationships.by_player.get(target.identity.key)
        shown = rel or self._peek_relationship(handle, target)
        placeholders = {
            "reputation": reputation(rel),
            "npc": handle.identity.name,
            "player": target.identity.name,
            "stage": shown.stage.value,
            "disposition": f"{shown.disposition:+.2f}",
            "trust": f"{shown.trust:.2f}",
        }
        request = ContextRequest(plugin=self, npc=handle, player=target, message=message)
        return build_context(request, chosen, max_tokens, self.pack.context, placeholders)

    def prompt_messages(
        self, npc: Ref, player: Ref, message: str, *, max_tokens: int = 1000
    ) -> PromptMessages:
        """A system prompt (persona from the archetype, what the NPC will and won't
        discuss, the context) and the message list for an Anthropic Messages call: the
        open conversation's lines, then ``message`` from the player."""
        handle, target = self._resolve_npc(npc), self._resolve_player(player)
        text = check_text("message", message, MAX_CONTENT_CHARS)
        context = self.context(npc, player, text, max_tokens=max_tokens)
        archetype = self.pack.archetypes.get(handle.traits.archetype or "")
        role = f", {archetype.role}" if archetype and archetype.role else ""
        parts = [f"You are {handle.identity.name}{role}."]
        if archetype is not None:
            if archetype.persona:
                parts.append(archetype.persona)
            if archetype.will_discuss:
                parts.append(f"You like to talk about: {', '.join(archetype.will_discuss)}.")
            if archetype.wont_discuss:
                parts.append(f"You will not discuss: {', '.join(archetype.wont_discuss)}.")
        parts.append(
            f"You are speaking with {target.identity.name}; "
            f"you see them as: {context.placeholders['reputation']}. "
            "Stay in character, answer in one or two sentences, and never claim memories you do not have."
        )
        system = " ".join(parts) + (f"\n\n{context.text}" if context.text else "")
        name = target.identity.name.lower()
        messages: list[dict[str, str]] = [
            {"role": "user" if turn.speaker.lower() in (name, target.identity.key) else "assistant",
             "content": turn.text}
            for turn in self._conversations.get((handle.identity.key, target.identity.key), [])
        ]
        messages.append({"role": "user", "content": text})
        if messages[0]["role"] == "assistant":
            messages.insert(0, {"role": "user", "content": "(The conversation continues.)"})
        return PromptMessages(system=system, messages=messages, context=context)

    def reply(
        self, npc: Ref, player: Ref, message: str, *, max_tokens: int = 1000, reply_tokens: int = 300
    ) -> concurrent.futures.Future[SummaryOutcome]:
        """Ask the configured LLM for ``npc``'s next line to ``message``; returns at once
        with a future whose result has ``text`` (or ``failure``: over budget, circuit
        open, timeout, API error). Raises if no LLM is configured; use
        :meth:`prompt_messages` with your own client then."""
        worker = self.extraction.worker
        if worker is None:
            raise NpcMemoryError(
                "no LLM is configured: install with llm=npc_memory.AnthropicExtractor(...), "
                "or send plugin.prompt_messages(...) with your own client"
            )
        prompt = self.prompt_messages(npc, player, message, max_tokens=max_tokens)
        request = {
            "model": worker.extractor.model,
            "max_tokens": reply_tokens,
            "system": prompt.system,
            "messages": prompt.messages,
        }
        owner = self.key(npc)
        estimate = estimate_tokens(prompt.system)
        estimate += sum(estimate_tokens(m["content"]) for m in prompt.messages)
        pipeline = self.extraction
        refusal = pipeline.limiter.check(owner, estimate + reply_tokens)
        if refusal is None and not pipeline.breaker.allow():
            refusal = "circuit open"
        if refusal is not None:
            done: concurrent.futures.Future[SummaryOutcome] = concurrent.futures.Future()
            done.set_result(SummaryOutcome(None, None, refusal))
            return done
        pipeline.limiter.reserve(owner, estimate + reply_tokens)
        future = worker.submit_text(request)

        def settle(finished: concurrent.futures.Future[SummaryOutcome]) -> None:
            cancelled = SummaryOutcome(None, None, "cancelled")
            outcome = cancelled if finished.cancelled() else finished.result()
            cost = worker.extractor.price.cost(outcome.usage) if outcome.usage else 0.0
            pipeline.limiter.settle(owner, estimate + reply_tokens, outcome.usage, cost)
            if outcome.text is not None:
                pipeline.breaker.record_success()
            else:
                pipeline.breaker.record_failure()

        future.add_done_callback(settle)
        return future

    # ------------------------------------------------------------------ relationships

    def relationship(self, npc: Ref, player: Ref) -> Relationship:
        """A copy of how ``npc`` regards ``player`` (the faction-based starting point
        if they have no history yet)."""
        return copy.copy(self._peek_relationship(self._resolve_npc(npc), self._resolve_player(player)))

    def adjust_relationship(
        self,
        npc: Ref,
        player: Ref,
        *,
        expected_version: int | None = None,
        **deltas: float,
    ) -> Relationship:
        """Add ``deltas`` (dimension name → change) to a relationship; each dimension
        stays clamped to [0, 1]. With ``expected_version`` the change applies only if
        the relationship is still at that version (else :class:`VersionConflictError`).
        Fires threshold and stage events. Returns a copy of the new relationship."""
        self._check_installed()
        handle = self._resolve_npc(npc)
        target = self._resolve_player(player)
        checked: dict[Dimension, float] = {}
        for name, delta in deltas.items():
            if name not in DIMENSIONS:
                raise InvalidArgumentError(
                    f"unknown relationship dimension {name!r}; expected one of {', '.join(DIMENSIONS)}"
                )
            if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta):
                raise InvalidArgumentError(f"delta for {name!r} must be a finite number, got {delta!r}")
            checked[name] = float(delta)
        if expected_version is not None:
            current = self._peek_relationship(handle, target).version
            if current != expected_version:
                raise VersionConflictError(
                    f"relationship {handle.identity.key!r}→{target.identity.key!r} is at version "
                    f"{current}, not {expected_version}"
                )
        return copy.copy(self._change_relationship(handle, target, checked))

    def record_interaction(self, npc: Ref, player: Ref) -> Relationship:
        """Count one interaction between ``npc`` and ``player`` (they have now met).
        Returns a copy of the relationship."""
        self._check_installed()
        handle = self._resolve_npc(npc)
        target = self._resolve_player(player)
        rel = self._relationship_for_write(handle, target.identity.key, target.faction.faction)
        self._mark(handle.identity.key)
        now = self.clock.now
        rel.interaction_count += 1
        if rel.first_met is None:
            rel.first_met = now
        rel.last_interaction = now
        change = rel_rules.refresh(rel, self.pack.relationships)
        self._publish_change(handle, target.identity.key, target.entity, rel, change)
        return copy.copy(rel)

    # ------------------------------------------------------------------ events

    def on(self, event_type: type[E], handler: Callable[[E], None]) -> Subscription:
        """Call ``handler`` with every event of ``event_type`` (or a subclass), in
        subscription order. Returns the subscription; ``cancel()`` it to stop."""
        return self._bus.subscribe(event_type, handler)

    def off(self, subscription: Subscription) -> None:
        """End a subscription made with :meth:`on`."""
        self._bus.unsubscribe(subscription)

    def _publish(self, event: Event) -> None:
        if self.forward_events:
            with world_context(self.world):
                esper.dispatch_event(type(event).__name__, event)
        self._bus.publish(event)

    # ------------------------------------------------------------------ internals

    def _mark(self, key: str) -> None:
        if self._snapshotter is not None:
            self._snapshotter.mark(key)

    def _saved(self, key: str, kind: type[_D]) -> _D | None:
        saved = self._stored.get(key)
        if saved is None or isinstance(saved, kind):
            return saved
        raise DuplicateKeyError(
            f"key {key!r} belongs to a stored {'NPC' if isinstance(saved, NpcDocument) else 'player'}"
        )

    def _document(self, key: str) -> Document | None:
        entity = self._entities_by_key.get(key)
        if entity is None:
            return self._stored.get(key)
        return self._document_of(self._npcs.get(entity) or self._players[entity])

    def _document_of(self, handle: NpcHandle | PlayerHandle) -> Document:
        now = self.clock.now
        if isinstance(handle, NpcHandle):
            return NpcDocument(
                v=SCHEMA_VERSION,
                key=handle.identity.key,
                name=handle.identity.name,
                faction=handle.faction.faction,
                archetype=handle.traits.archetype,
                room=handle.location.room,
                traits=handle.traits,
                bank=handle.bank,
                relationships=handle.relationships,
                working=handle.working,
                knowledge=handle.knowledge,
                saved_at=now,
            )
        return PlayerDocument(
            v=SCHEMA_VERSION,
            key=handle.identity.key,
            name=handle.identity.name,
            faction=handle.faction.faction,
            room=handle.location.room,
            profile=handle.profile,
            saved_at=now,
        )

    def _meta(self, snapshots: int) -> StoreMeta:
        rng_state, rng_gauss = pack_rng_state(self.rng)
        return StoreMeta(
            world=self.world,
            pack=self.pack.pack.name,
            seed=self.seed,
            clock=self.clock.now,
            rng_state=rng_state,
            rng_gauss=rng_gauss,
            snapshots=snapshots,
            pending_extractions=self.extraction.pending(),
        )

    def _writer_audit(self, action: str, target: str) -> None:
        if self._writer is not None:
            entry = AuditEntry(
                action=action,
                target=target,
                game_time=self.clock.now,
                wall_time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            )
            self._writer.submit(WriteBatch(audit=[entry]))

    def _check_installed(self) -> None:
        if not self._installed:
            raise NotInstalledError(f"this npc_memory plugin was uninstalled from {self.world!r}")

    def _check_new_key(self, key: str, name: str | None) -> tuple[str, str]:
        key = check_text("key", key, MAX_KEY_CHARS)
        if key in self._entities_by_key:
            raise DuplicateKeyError(f"key {key!r} is already used by entity {self._entities_by_key[key]}")
        display = key if name is None else check_text("name", name, MAX_KEY_CHARS)
        return key, display

    def _check_faction(self, faction: str | None, key: str) -> None:
        if faction is not None and faction not in self.pack.factions:
            raise UnknownContentError(
                f"unknown faction {faction!r} for {key!r}; pack {self.pack.pack.name!r} "
                f"defines: {', '.join(sorted(self.pack.factions))}"
            )

    def _attach_components(self, entity: int | None, key: str, *components: Any) -> int:
        with world_context(self.world):
            if entity is None:
                entity = esper.create_entity()
            elif isinstance(entity, bool) or not isinstance(entity, int):
                raise InvalidArgumentError(f"entity must be an int, got {entity!r}")
            elif not esper.entity_exists(entity):
                raise UnknownEntityError(f"entity {entity} does not exist in esper world {self.world!r}")
            if entity in self._npcs or entity in self._players:
                raise DuplicateKeyError(f"entity {entity} is already {self.key(entity)!r}")
            for component in components:
                esper.add_component(entity, component)
        return entity

    def _resolve_entity(self, ref: Ref) -> int:
        if isinstance(ref, str):
            entity = self._entities_by_key.get(ref)
            if entity is None:
                raise UnknownEntityError(f"no NPC or player with key {ref!r} in world {self.world!r}")
            return entity
        if isinstance(ref, bool) or not isinstance(ref, int):
            raise InvalidArgumentError(f"expected an entity id or a key, got {ref!r}")
        if ref not in self._npcs and ref not in self._players:
            raise UnknownEntityError(f"entity {ref} is not an NPC or player of world {self.world!r}")
        return ref

    def _resolve_npc(self, ref: Ref) -> NpcHandle:
        entity = self._resolve_entity(ref)
        handle = self._npcs.get(entity)
        if handle is None:
            raise UnknownEntityError(f"{self._players[entity].identity.key!r} is a player, not an NPC")
        return handle

    def _resolve_player(self, ref: Ref) -> PlayerHandle:
        entity = self._resolve_entity(ref)
        handle = self._players.get(entity)
        if handle is None:
            raise UnknownEntityError(f"{self._npcs[entity].identity.key!r} is an NPC, not a player")
        return handle

    def _peek_relationship(self, npc: NpcHandle, player: PlayerHandle) -> Relationship:
        rel = npc.relationships.by_player.get(player.identity.key)
        if rel is None:
            rel = rel_rules.initial_relationship(self.pack, npc.faction.faction, player.faction.faction)
        return rel

    def _player_ref(self, key: str) -> tuple[str | None, int | None]:
        """Faction and entity of a player known live or from the store (else neither)."""
        entity = self._entities_by_key.get(key)
        if entity is not None and entity in self._players:
            return self._players[entity].faction.faction, entity
        saved = self._stored.get(key)
        return (saved.faction if isinstance(saved, PlayerDocument) else None), None

    def _relationship_for_write(self, npc: NpcHandle, player: str, faction: str | None) -> Relationship:
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            rel = rel_rules.initial_relationship(self.pack, npc.faction.faction, faction)
            rel.drifted_at = self.clock.now
            npc.relationships.by_player[player] = rel
            self._standing_changed(npc, player, faction, None, rel.disposition)
        return rel

    def _change_relationship(
        self, npc: NpcHandle, player: PlayerHandle, deltas: dict[Dimension, float]
    ) -> Relationship:
        return self._change_relationship_of(npc, player.identity.key, deltas)

    def _change_relationship_of(
        self, npc: NpcHandle, player: str, deltas: dict[Dimension, float]
    ) -> Relationship:
        faction, entity = self._player_ref(player)
        rel = self._relationship_for_write(npc, player, faction)
        self._mark(npc.identity.key)
        before = rel.disposition
        change = rel_rules.apply_deltas(rel, deltas, self.pack.relationships)
        self._publish_change(npc, player, entity, rel, change)
        self._standing_changed(npc, player, faction, before, rel.disposition)
        return rel

    def _standing_changed(
        self, npc: NpcHandle, player: str, player_faction: str | None, old: float | None, new: float
    ) -> None:
        faction = npc.faction.faction
        if faction is None or npc.entity not in self._npcs:
            return
        initial = rel_rules.initial_relationship(self.pack, faction, player_faction).disposition
        shift = self._standing.update(faction, player, old, new, initial)
        if shift is not None:
            old_band, new_band, average = shift
            self._publish(
                FactionReputationShift(
                    game_time=self.clock.now,
                    faction=faction,
                    player=player,
                    old_band=old_band,
                    new_band=new_band,
                    average=average,
                )
            )

    def _publish_change(
        self,
        npc: NpcHandle,
        player: str,
        player_entity: int | None,
        rel: Relationship,
        change: rel_rules.RelationshipChange,
    ) -> None:
        common: dict[str, Any] = {
            "game_time": self.clock.now,
            "npc": npc.identity.key,
            "player": player,
            "npc_entity": npc.entity,
            "player_entity": player_entity,
        }
        events: list[Event] = [
            THRESHOLD_EVENTS.get(t.event or "", RelationshipThresholdCrossed)(
                threshold=t.name,
                dimension=t.dimension,
                direction=t.direction,
                limit=t.value,
                value=rel.value(t.dimension),
                **common,
            )
            for t in change.crossed
        ]
        if change.old_stage != change.new_stage:
            events.append(RelationshipStageChanged(old=change.old_stage, new=change.new_stage, **common))
        for event in events:
            self._publish(event)


def _fact_arguments(
    content: str,
    tags: Iterable[str],
    importance: float,
    confidence: float,
    category: str | None,
    topic: str | None,
    expires_in: float | None,
) -> tuple[str, tuple[str, ...], str]:
    """Checked content, tags and topic (default: the first tag) of a fact to learn."""
    text = check_text("content", content, MAX_CONTENT_CHARS)
    tag_tuple = check_tags(tags)
    if GAME_ONLY_TAGS.intersection(tag_tuple):
        raise PrivacyError("facts tagged 'game-only' are game clues and are never stored")
    check_unit("importance", importance)
    check_unit("confidence", confidence)
    check_category(category)
    if expires_in is not None:
        check_positive("expires_in", expires_in)
    if topic is not None:
        return text, tag_tuple, check_text("topic", topic, MAX_KEY_CHARS)
    return text, tag_tuple, tag_tuple[0] if tag_tuple else "general"


def _same_habit(pair: PairMemories, memory: ProceduralMemory) -> ProceduralMemory | None:
    for held in pair.procedural:
        if held.trigger != memory.trigger:
            continue
        same_tag = bool(memory.tags) and held.tags[:1] == memory.tags[:1]
        if same_tag or (not memory.tags and held.pattern == memory.pattern):
            return held
    return None


def _components_of(handle: NpcHandle | PlayerHandle) -> tuple[Any, ...]:
    if isinstance(handle, NpcHandle):
        return (
            handle.identity,
            handle.faction,
            handle.location,
            handle.traits,
            handle.bank,
            handle.relationships,
            handle.working,
            handle.knowledge,
        )
    return (handle.identity, handle.faction, handle.location, handle.profile)
