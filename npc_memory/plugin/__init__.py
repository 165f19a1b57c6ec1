"""The :class:`MemoryPlugin` facade of one installed plugin.

It builds the world's services and systems (``npc_memory.install`` hands it the shared
state); each call only checks arguments, resolves NPCs and players, calls one service,
and then delivers the events the call queued.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, Unpack

import esper

from npc_memory.components import (
    MEMORY_KINDS,
    Fact,
    Memory,
    MemoryKind,
    NpcHandle,
    PlayerHandle,
    Relationship,
    Turn,
)
from npc_memory.context.builder import ContextProvider, PromptContext
from npc_memory.context.providers import DEFAULT_PROVIDERS
from npc_memory.errors import (
    EventHandlerError,
    InvalidArgumentError,
    NpcMemoryError,
    StoreError,
)
from npc_memory.events import Event
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.plugin.calls import check_installed, delivers
from npc_memory.plugin.llm import LlmCalls
from npc_memory.plugin.privacy import PrivacyCalls
from npc_memory.plugin.storage import StorageCalls
from npc_memory.plugin.wiring import Services, Ticks, attach
from npc_memory.query import MemoryQuery
from npc_memory.rules.validation import (
    MAX_KEY_CHARS,
    MAX_RECALL_K,
    check_flag,
    check_int,
    check_key_or_none,
    check_query,
    check_room,
    check_text,
)
from npc_memory.services import (
    ConversationEnded,
    ConversationService,
    DialogueService,
    Health,
    HealthService,
    KnowledgeService,
    MaintenanceService,
    MemoryService,
    PersistenceService,
    PopulationService,
    PromptMessages,
    RelationshipService,
    Resolver,
    SafetyService,
)
from npc_memory.services.calls import CheckedCalls, FactOptions, LearnOptions, RememberOptions
from npc_memory.services.privacy import (
    ClonePlan,
    ConsentReport,
    EndGameReport,
    ForgetReport,
    PrivacyService,
)
from npc_memory.state import Ref, Subscription, WorldState
from npc_memory.state.world import world_context
from npc_memory.store import NpcDocument, PlayerDocument, Store

E = TypeVar("E", bound=Event)
F = TypeVar("F", bound=Callable[..., Any])

MAX_TURNS = 500
"""Lines an open conversation may hold before it must be ended."""

MAX_CONTEXT_TOKENS = 1_000_000
"""Largest token budget of one prompt context."""

log = logging.getLogger("npc_memory.events")

__all__ = [
    "ClonePlan",
    "ConsentReport",
    "ConversationEnded",
    "EndGameReport",
    "ForgetReport",
    "Health",
    "MemoryPlugin",
    "PromptMessages",
    "Ref",
]


class MemoryPlugin:
    """The facade of one installed plugin: spawn NPCs and players, record memories,
    change relationships, subscribe to events, ask questions (:attr:`query`).

    Calls are synchronous and cheap (O(1) or O(memories of one pair)); they may be
    made whichever esper world is current. NPCs and players are named by entity id or
    stable key; reads also accept the key of one that is only in the store.
    """

    def __init__(
        self,
        state: WorldState,
        pipeline: ExtractionPipeline,
        store: Store | None,
        snapshots: int,
        ticks: Ticks,
    ):
        self._state = state
        self._pipeline = pipeline
        self._resolve = Resolver(state)
        pipeline.archetype_of = self._archetype_of
        self._relationships = RelationshipService(state)
        self._persistence = PersistenceService(state, store, pipeline, snapshots)
        self._safety = SafetyService(state, self._persistence.audit)
        self._health = HealthService(state, self._persistence, pipeline, self._safety.stats)
        self._memories = MemoryService(state, self._relationships, self._safety)
        self._knowledge = KnowledgeService(state, self._relationships, self._safety, self._memories)
        self._conversations = ConversationService(
            state, pipeline, self._memories, self._knowledge, self._relationships
        )
        self._persistence.excluded = self._conversations.dropped
        self._population = PopulationService(state, self._persistence, self._knowledge, self._conversations)
        self._maintenance = MaintenanceService(
            state, pipeline, self._memories, self._relationships, self._knowledge
        )
        self._dialogue = DialogueService(state, self._relationships, self._conversations, pipeline)
        self._privacy = PrivacyService(
            state, self._persistence, self._memories, self._knowledge, self._relationships,
            self._conversations, self._maintenance,
        )  # fmt: skip
        self._calls = CheckedCalls(
            state, self._resolve, self._memories, self._knowledge, self._relationships, self._population,
            self._privacy,
        )  # fmt: skip
        self.query = MemoryQuery(self._resolve, self._relationships, self._knowledge, self._memories)
        """Typed, in-memory questions for game logic."""
        self.processors: list[esper.Processor] = []
        """The plugin's esper processors, in the order they run."""
        self.privacy = PrivacyCalls(state, self._resolve, self._privacy)
        """Privacy requests: ``forget_player``, ``end_game``, ``set_consent``, ``clone``, and
        what this start finished that a crash interrupted (``resumed``)."""
        self.llm = LlmCalls(
            state, self._resolve, pipeline, self._dialogue,
            lambda npc, player, message, tokens: self.context(npc, player, message, max_tokens=tokens),
        )  # fmt: skip
        """The model: ``set_extraction`` (who has their conversations extracted by it),
        ``prompt_messages`` (the NPC's next line, for your own client) and ``reply`` (from
        the configured one)."""
        self.storage = StorageCalls(state, self._persistence)
        """The store: ``store``, ``unsaved_seconds()``, ``flush()``, ``stored_npcs()``,
        ``stored_players()``, ``export(path)``."""
        self.processors.extend(attach(state, Services(
            self._population, self._conversations, self._knowledge, self._relationships, self._maintenance,
            self._persistence, self._health, self._privacy,
        ), ticks))  # fmt: skip

    world = property(
        lambda self: self._state.world, doc="Name of the esper world the plugin is installed in."
    )
    pack = property(lambda self: self._state.pack, doc="The content pack in force.")
    seed = property(lambda self: self._state.seed, doc="The seed of the plugin's random generator.")
    rng = property(
        lambda self: self._state.rng,
        doc="A random generator seeded by ``seed`` for the game: the plugin never draws from it, "
        "and a save keeps its state.",
    )
    clock = property(
        lambda self: self._state.clock, doc="Game time; read ``plugin.clock.now`` (game seconds)."
    )
    safety = property(
        lambda self: self._safety,
        doc="Content safety: ``safety.stats`` counts screened, redacted, flagged and dropped "
        "texts; ``safety.use(screener)`` puts a game's own screen in place of the pack's.",
    )
    extraction = property(
        lambda self: self._pipeline,
        doc="The extraction pipeline: ``stats``, ``limiter``, ``breaker``, queue.",
    )
    installed = property(lambda self: self._state.installed, doc="Whether the plugin is still installed.")

    # ------------------------------------------------------------------ lifecycle

    def detach(self, *, save: bool = True) -> None:
        """Save, stop the plugin's threads and remove its systems (``uninstall`` does this).
        If saving fails, raises :class:`StoreError` and stays attached with everything
        in memory (``save=False`` detaches without saving)."""
        error: NpcMemoryError | None = None
        self._maintenance.close()
        # Before the last save: what calls in flight cost and brought is saved with their jobs.
        self._pipeline.close(grace=self.pack.llm.shutdown_grace)
        if save:
            try:
                self._persistence.save()
            except StoreError as exc:
                where = f"esper world {self.world!r}"
                raise StoreError(
                    f"{exc}. npc_memory stays installed in {where} with everything in memory (the "
                    f"LLM is closed: the rules extract from here): fix the store and call "
                    f"npc_memory.uninstall() again, or write the world elsewhere with "
                    f"plugin.storage.export(PATH) and load it with 'npc-memory import --db NEW_STORE PATH'; "
                    f"npc_memory.uninstall(save=False) gives up what is not on disk"
                ) from exc
            except NpcMemoryError as exc:
                error = exc
        try:
            self._state.events.deliver()  # what the last changes queued reaches its handlers
        except EventHandlerError as exc:
            log.error("npc_memory event handlers raised during uninstall", exc_info=exc)
        self._persistence.close()
        if self.world in esper.list_worlds():
            with world_context(self.world):
                for processor in self.processors:
                    if esper.get_processor(type(processor)) is processor:
                        esper.remove_processor(type(processor))
        self.processors.clear()
        self._state.events.clear()
        self._state.events.bus.clear()
        self._state.installed = False
        if error is not None:
            raise error

    @delivers
    def save(self) -> None:
        """Write every change to the store now and wait until it is on disk (a no-op
        without a store). Raises :class:`StoreError` if writing failed; the changes
        stay queued for the next snapshot."""
        self._persistence.save()

    @delivers
    def health(self) -> Health:
        """How the plugin is doing: ``status`` ``ok``, ``degraded`` (working, but
        something needs attention; nothing is lost) or ``failing`` (the store is not
        being written), with ``reasons`` and since when (game time ``since``, UTC
        ``since_wall``). Each change is also published as :class:`HealthChanged`."""
        return self._health.health()

    def metrics(self) -> dict[str, Any]:
        """Figures since install, as plain data: ``health``; ``ticks`` per system
        (``p50_ms``, ``p99_ms``, ``max_ms`` over the last 600 ticks, ``budget_ms``,
        ``overruns`` and ``overruns_in_window``); ``queues`` (extraction queued, in
        flight, ready, parked; snapshot backlog, store batches in flight);
        ``extraction`` outcomes; ``llm`` calls, failures, tokens, ``cost_usd`` and
        breaker state; ``snapshots`` (rounds started and completed,
        ``oldest_unsaved_s``); ``store`` (write latency p50/p99, writes, failures,
        bytes); ``safety`` (texts screened, redacted, flagged, dropped); ``counts`` of
        NPCs, players, memories, facts and relationships (this walks every NPC: call it
        now and then, not every tick)."""
        return self._health.metrics()

    # ------------------------------------------------------------------ spawning

    @delivers
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

        If the store holds an NPC with this key (or it was removed, or its entity was
        deleted from esper), its memories and relationships are restored, and the saved
        name, faction, archetype and room fill in whichever arguments are ``None``.
        """
        key, name, room = self._calls.spawn_arguments(key, name, room)
        faction, archetype = check_key_or_none("faction", faction), check_key_or_none("archetype", archetype)
        return _entity(self._population.add_npc(entity, key, name, faction, archetype, room))

    @delivers
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
        for label, value in (("consent", consent), ("anonymous", anonymous)):
            if value is not None and not isinstance(value, bool):
                raise InvalidArgumentError(f"{label} must be True, False or None, got {value!r}")
        key, name, room = self._calls.spawn_arguments(key, name, room)
        faction = check_key_or_none("faction", faction)
        return _entity(self._population.add_player(entity, key, name, faction, room, consent, anonymous))

    @delivers
    def remove(self, ref: Ref, *, forget: bool = False) -> None:
        """Take an NPC or player out of the live world: detach the plugin's components
        from its entity (the entity itself stays). Its state is kept (in the store, if
        any) and restored if the key is added again, unless ``forget`` deletes it. The
        key of an NPC or player that is only in the store may be forgotten too. Forgetting
        a player is ``privacy.forget_player`` (everything about them, everywhere)."""
        check_flag("forget", forget)
        if isinstance(ref, str) and ref not in self._state.registry.by_key and ref in self._state.stored:
            if forget and isinstance(self._state.stored[ref], PlayerDocument):
                self._privacy.forget_player(ref, actor="plugin")
            elif forget:
                self._population.forget_stored(ref)
            return
        handle = self._state.registry.handle(ref)
        if forget and isinstance(handle, PlayerHandle):
            self._privacy.forget_player(handle.identity.key, actor="plugin")
            return
        self._population.remove(handle, forget=forget)

    def move(self, ref: Ref, room: str | None) -> None:
        """Put an NPC or player in ``room`` (``None``: nowhere in particular); the same
        as setting its ``Location.room``."""
        self._check_installed()
        self._state.registry.handle(ref).location.room = check_room(room)

    def entity(self, key: str) -> int:
        """The entity of the live NPC or player with stable key ``key``."""
        return self._state.registry.entity(key)

    def key(self, ref: Ref) -> str:
        """The stable key of an NPC or player."""
        return self._state.registry.handle(ref).identity.key

    def npcs(self) -> list[str]:
        """Keys of every live NPC, in the order they were added."""
        return self._state.registry.npc_keys()

    def players(self) -> list[str]:
        """Keys of every live player, in the order they were added."""
        return self._state.registry.player_keys()

    def npc(self, ref: Ref) -> NpcHandle:
        """The components of an NPC (live, or by key from the store). Read-only but for
        ``location.room``: change them through the facade."""
        return self._resolve.npc(ref, stored=True)

    def player(self, ref: Ref) -> PlayerHandle:
        """The components of a player (live, or by key from the store; read-only but
        for ``location.room``)."""
        return self._resolve.player(ref, stored=True)

    # ------------------------------------------------------------------ memories

    @delivers
    def remember(
        self, npc: Ref, player: Ref | None, content: str, **options: Unpack[RememberOptions]
    ) -> Memory:
        """Store a memory of ``npc`` about ``player`` (``None``: about the world).

        Keyword options (:class:`~npc_memory.services.calls.RememberOptions`) and their
        defaults: ``kind="episodic"``, ``tags=()``, ``importance=0.5``, ``confidence=1.0``,
        ``valence="neutral"``, ``intensity=0.0``, ``locked=False``, ``scope``, ``room``,
        ``source_conversation=None``, ``pattern``, ``trigger=None``, ``source_episodes=()``,
        ``affect_relationship=False``, ``actor``, ``source="authored"``, ``teller=None``;
        an unknown one raises :class:`InvalidArgumentError`.

        ``actor`` is whose deed or words it records: by default ``player`` (no one known,
        ``None``, for a world memory); ``"self"`` for the NPC's own; another NPC or
        player (entity or key, live or stored); ``None`` when unknown. ``source`` is how
        the NPC knows it: ``"authored"`` (default: the game says so), ``"witnessed"``,
        ``"said"``, ``"claimed"`` or ``"heard"``; ``teller``, who told it (as ``actor``).
        Only the player's own deeds and words count in :attr:`query` by default and
        move the relationship with ``affect_relationship`` (claims and hearsay only
        where asked for).

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
        refused with :class:`PrivacyError`, as is a world-scoped ``social`` or ``profile``
        memory naming a player who has not consented. The memory carries the current
        game's id (``install(game_id=...)``). Nothing is changed when an error is raised.
        ``content`` is screened (see :attr:`safety`): personal data becomes typed
        placeholders, and content that tries to instruct a model is kept as a marked
        quotation tagged ``flagged`` that moves no relationship.
        """
        return self._calls.remember(npc, player, content, options)

    def memories(
        self, npc: Ref, player: Ref | None = None, *, kind: MemoryKind | None = None
    ) -> list[Memory]:
        """The memories ``npc`` holds about ``player`` (``None``: world-scoped), highest
        salience first; only those of ``kind`` if given. Either may be only in the store."""
        handle = self._resolve.npc(npc, stored=True)
        key = None if player is None else self._resolve.player(player, stored=True).identity.key
        if kind is not None and kind not in MEMORY_KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}")
        return self._memories.memories(handle, key, kind)

    # ------------------------------------------------------------------ conversations

    def say(self, npc: Ref, player: Ref, speaker: str, text: str) -> None:
        """Append a line to the open conversation between ``npc`` and ``player``
        (opened by the first line). ``speaker`` is who said it: the name, key or first
        name of the NPC or of the player (a first name is kept as their name), or the
        name or key of another known NPC or player (anything else raises
        :class:`UnknownEntityError` and nothing is recorded). Open
        conversations are part of the NPC's WorkingMemory, saved and restored with it.
        The line is screened first (see :attr:`safety`): personal data is redacted, and a
        line that tries to instruct a model is kept quoted and never extracted, or dropped."""
        self._check_installed()
        limit = self.pack.limits.content_chars
        line = Turn(check_text("speaker", speaker, MAX_KEY_CHARS), check_text("text", text, limit))
        npc_handle, player_handle = self._resolve.npc(npc), self._resolve.player(player)
        speaker = self._resolve.speaker(line.speaker, npc_handle, player_handle)
        if speaker != line.speaker:
            line = Turn(speaker, line.text)
        self._conversations.say(npc_handle, player_handle, line, MAX_TURNS)

    def _archetype_of(self, key: str) -> str | None:
        live = self._state.registry.live_npc(key)
        if live is not None:
            return live.traits.archetype
        stored = self._state.stored.get(key)
        return stored.archetype if isinstance(stored, NpcDocument) else None

    @delivers
    def end_conversation(self, npc: Ref, player: Ref) -> ConversationEnded | None:
        """Close the open conversation of ``npc`` and ``player`` and queue its extraction.

        At once: the conversation gets an id (``"<npc>/<player>/<n>"``), a one-line
        summary goes into the NPC's working memory (last three per pair), and the pair
        counts one interaction. The extraction job then waits for ExtractionSystem. If
        the queue is full the result says so: ``status`` is ``"extracted"`` when the
        rules extracted it on the spot (pack ``extraction_overflow = "rules"``) or
        ``"dropped"`` (``"drop"``; an ExtractionDropped event fires). Returns ``None``
        when no conversation is open, so ending twice is harmless."""
        return self._conversations.end(self._resolve.npc(npc), self._resolve.player(player))

    # ------------------------------------------------------------------ knowledge

    @delivers
    def observe(self, *, room: str, content: str, **options: Unpack[FactOptions]) -> list[str]:
        """Every NPC in ``room`` witnesses something: each learns it first-hand (source
        ``observation``), and if ``subject`` is a player the tags move each witness's
        relationship by the pack's tag rules. ``topic`` names what the fact is a claim
        about, so that rival claims compete (``"whereabouts"``: the newer or better
        founded is believed, the other kept as no longer believed); without one (the
        default) the fact competes with none, so two thefts are two facts.
        ``expires_in`` in game seconds. Returns the
        keys of the witnesses (sorted); none when the safety screen flagged the content and
        the pack drops flagged text. The facts' scope follows the subject's consent (see
        :meth:`end_game`); about no one, ``social``, or ``session`` when the content names
        a player who has not consented.

        Keyword options (:class:`~npc_memory.services.calls.FactOptions`) and their
        defaults: ``subject=None``, ``tags=()``, ``importance=0.5``, ``confidence=1.0``,
        ``category`` (from the subject), ``topic=None``, ``expires_in=None`` (never)."""
        return self._calls.observe(room, content, options)

    @delivers
    def learn_fact(self, npc: Ref, content: str, **options: Unpack[LearnOptions]) -> Fact | None:
        """Give one NPC an authored fact (quest logic, scripted lore). Returns the
        stored fact, or ``None`` if the NPC already knew it (or the safety screen flagged
        it and the pack drops flagged text). Takes the options of :meth:`observe` and
        ``locked=False``; its scope and ``topic`` are as there."""
        return self._calls.learn_fact(npc, content, options)

    def facts(self, npc: Ref, *, include_disbelieved: bool = False) -> list[Fact]:
        """What ``npc`` knows: the facts it believes (and, if asked, the ones it no
        longer believes), oldest first; expired facts are left out."""
        return self._knowledge.facts(
            self._resolve.npc(npc, stored=True),
            include_disbelieved=check_flag("include_disbelieved", include_disbelieved),
        )

    # ------------------------------------------------------------------ read path

    def recall(
        self, npc: Ref, player: Ref | None, query: str = "", *, k: int = 5, strengthen: bool = True
    ) -> list[Memory]:
        """The ``k`` memories of ``npc`` about ``player`` (and world-scoped ones) best
        matching ``query``: relevance (BM25 over content and tags) combined with
        salience; salience alone for an empty query. Recalling a memory strengthens it:
        its access count grows and its last access becomes now (``strengthen=False``
        only looks, for previews and evaluation)."""
        handle = self._resolve.npc(npc, stored=True)
        key = None if player is None else self._resolve.player(player, stored=True).identity.key
        check_int("k", k, 1, MAX_RECALL_K)
        check_flag("strengthen", strengthen)
        check_query("query", query, self.pack.limits.query_chars)
        return self._dialogue.recall(handle, key, query, k, strengthen=strengthen)

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
        handle, target = self._resolve.npc(npc, stored=True), self._resolve.player(player, stored=True)
        check_int("max_tokens", max_tokens, 1, MAX_CONTEXT_TOKENS)
        check_query("message", message, self.pack.limits.query_chars)
        if providers is not None and (isinstance(providers, str) or not isinstance(providers, Iterable)):
            raise InvalidArgumentError(f"providers must be a list of context providers, got {providers!r}")
        chosen = list(DEFAULT_PROVIDERS if providers is None else providers)
        names = [getattr(p, "name", None) for p in chosen]
        if not all(
            isinstance(n, str) and callable(getattr(p, "render", None))
            for n, p in zip(names, chosen, strict=True)
        ):
            raise InvalidArgumentError(
                "each provider needs a string 'name' and a 'render(request, budget)' method"
            )
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"provider names must be unique, got {names}")
        return self._dialogue.context(handle, target, message, max_tokens, chosen)

    # ------------------------------------------------------------------ relationships

    def relationship(self, npc: Ref, player: Ref) -> Relationship:
        """How ``npc`` regards ``player`` (the faction-based starting point if they have
        no history yet). Either may be only in the store."""
        handle, target = self._resolve.npc(npc, stored=True), self._resolve.player(player, stored=True)
        return copy.copy(self._relationships.peek(handle, target.identity.key, target.faction.faction))

    @delivers
    def adjust_relationship(
        self, npc: Ref, player: Ref, *, expected_version: int | None = None, **deltas: float
    ) -> Relationship:
        """Add ``deltas`` (dimension name → change) to a relationship; each dimension
        stays clamped to [0, 1]. With ``expected_version`` the change applies only if
        the relationship is still at that version (else :class:`VersionConflictError`).
        Fires threshold and stage events. Returns the new relationship."""
        return self._calls.adjust_relationship(npc, player, expected_version, deltas)

    @delivers
    def record_interaction(self, npc: Ref, player: Ref) -> Relationship:
        """Count one interaction between ``npc`` and ``player`` (they have now met).
        Returns the new relationship."""
        return self._relationships.record_interaction(self._resolve.npc(npc), self._resolve.player(player))

    # ------------------------------------------------------------------ events

    def on(self, event_type: type[E], handler: Callable[[E], None]) -> Subscription:
        """Call ``handler`` with every event of ``event_type`` (or a subclass), in
        subscription order, once the change that caused it is complete. Returns the
        subscription; ``cancel()`` it to stop."""
        return self._state.events.bus.subscribe(event_type, handler)

    # ------------------------------------------------------------------ checks

    def _check_installed(self) -> None:
        check_installed(self._state)


def _entity(handle: NpcHandle | PlayerHandle) -> int:
    assert handle.entity is not None
    return handle.entity
