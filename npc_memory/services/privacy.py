"""Privacy: forgetting a player everywhere, ending a game, consent, cloning between
NPCs, and the audit trail of each.

Every operation here is a facade call, never tick work: it may take time in
proportion to the world (every NPC, live or only in the store), and it waits for the
store. Forgetting a player is crash-safe: the store records the player as *pending*
before anything changes, the cleaned documents are written, every older generation
on disk is purged, the player's own document goes last, and only then is the pending
record removed; a restart that finds it forgets the player again (idempotent) and the
audit log says the forgetting was resumed. Audit entries name players by a salted
pseudonym, never by key or name.

On a store several game servers share, forgetting runs while they all do: the pending
record is shared; each server forgets the player in what it holds (one that did not
begin it finds the record when it polls the store after a snapshot round, and works
through its NPCs a budgeted slice per tick) and records its part; the first live server
that did its part finishes the purge once no live server owning documents is still to
do its own (one that died owns nothing: its rows are cleaned from the store).
Withdrawn consent and the end of a game go the same way, each with a pending record of
its own (what it is, and what every server needs to do it alike): each server does it
in what it holds, through the same code as a call on one server, the rows no live server
owns are done from the store as it holds them (summaries of a compacted game are made
by the memory rules directly, the same on a live NPC and a row), and the last server to
finish a game's end deletes the rows of the anonymous participants no server has in play.
Withdrawn consent and a game's end are recorded only on a shared store; on one process
they are one save.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import msgspec

from npc_memory.components import (
    MEMORY_KINDS,
    SELF,
    Fact,
    Memory,
    NpcHandle,
    PairMemories,
    PendingConversation,
    PlayerProfile,
    Scope,
    SemanticMemory,
    kind_of,
)
from npc_memory.content import MemoryRules, PrivacyRules
from npc_memory.errors import InvalidArgumentError, PrivacyError
from npc_memory.rules import decay as decay_rules
from npc_memory.rules import memory as memory_rules
from npc_memory.rules import privacy as privacy_rules
from npc_memory.services.conversations import ConversationService
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.maintenance import MaintenanceService
from npc_memory.services.memories import NPC_CAP_CHECKS, MemoryService
from npc_memory.services.persistence import PersistenceService, handle_of
from npc_memory.services.relationships import RelationshipService
from npc_memory.state import WorldState
from npc_memory.state.tick import TickShare
from npc_memory.store import (
    AuditEntry,
    Document,
    NpcDocument,
    PendingForget,
    PlayerDocument,
    PrivacyStore,
    SharedStore,
    Store,
    encode_document,
)

log = logging.getLogger("npc_memory.privacy")


class ForgetReport(msgspec.Struct, kw_only=True):
    """What ``forget_player`` removed: ``player`` is the pseudonym the audit log uses;
    ``counts`` by kind of item (memories, facts, relationships, conversations, jobs,
    the player's document, files scrubbed on disk)."""

    player: str
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    resumed: bool = False
    waiting: list[int] = msgspec.field(default_factory=list)
    """On a store game servers share: the servers (sessions) still to forget the
    player in the NPCs they own; the forgetting finishes once they have, or are gone."""


class EndGameReport(msgspec.Struct, kw_only=True):
    """What ``end_game`` purged (and compacted) of game ``game``."""

    game: str
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    waiting: list[int] = msgspec.field(default_factory=list)
    """On a store game servers share: the servers (sessions) still to end the game in
    the NPCs they own."""


@dataclass(frozen=True)
class _Ending:
    """What ending a game needs: which items end (``game``'s ``session`` and ``anon``
    ones; ``legacy``: those made before games had ids too), whether they are
    compacted, the players held about whom goes (``anonymous``) or whose open
    conversations go (``transient``), the names a summary must not hold (``everyone``),
    the rules of summaries and the game and time they are made at."""

    game: str
    legacy: bool
    compact: bool
    anonymous: frozenset[str]
    transient: frozenset[str]
    everyone: re.Pattern[str] | None
    privacy: PrivacyRules
    memory: MemoryRules
    now: float
    current: str | None
    pattern: re.Pattern[str] = re.compile("")
    """Finds the rows to take from the store (every NPC's)."""
    origins: set[str] = field(default_factory=set)
    """The origins of the facts ended so far (a gossip copy of one shares it)."""
    told: set[str] = field(default_factory=set)
    """The contents of the facts ended so far (the ``heard`` memory a listener keeps of
    a gossip copy holds it)."""

    def ends(self, scope: str, made_in: str | None) -> bool:
        """Whether an item of ``scope`` made in game ``made_in`` ends."""
        return scope in privacy_rules.PURGED_AT_GAME_END and (
            made_in == self.game or (self.legacy and made_in is None)
        )


class ConsentReport(msgspec.Struct, kw_only=True):
    """A consent change: the player's pseudonym, the new consent, and what happened to
    what had been remembered with the old one."""

    player: str
    consent: bool
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    waiting: list[int] = msgspec.field(default_factory=list)
    """On a store game servers share, a withdrawal: the servers (sessions) still to
    rewrite the player's items in the NPCs they own."""


class CloneItem(msgspec.Struct, frozen=True, kw_only=True):
    """One memory or fact of the source NPC: its id, kind and content."""

    id: str
    kind: str
    content: str


class CloneSkip(msgspec.Struct, frozen=True, kw_only=True):
    """An item of a requested category that ``clone`` leaves behind, and why."""

    category: str
    id: str
    reason: str


class ClonePlan(msgspec.Struct, kw_only=True):
    """What a clone copies (``items`` by category) and skips; after a real run,
    ``copied`` holds the new ids in the target NPC, in the order of ``items``."""

    source: str
    target: str
    dry_run: bool
    items: dict[str, list[CloneItem]] = msgspec.field(default_factory=dict)
    skipped: list[CloneSkip] = msgspec.field(default_factory=list)
    copied: dict[str, list[str]] = msgspec.field(default_factory=dict)


@dataclass
class _RemoteForget:
    """This server's part, under way, of a forgetting (or a withdrawal of consent)
    another game server began."""

    record: PendingForget
    key: str
    pattern: re.Pattern[str]
    ending: _Ending | None
    owned_player: bool
    before: set[str]
    """Keys dirty when it began (stored ones among them are this server's to write)."""
    counts: Counter[str] = field(default_factory=Counter)
    queue: deque[str] = field(default_factory=deque)
    changed: set[str] = field(default_factory=set)
    found: bool = True
    """Whether the pass under way has found anything yet (the first pass counts as found)."""
    passes: int = 0
    """Passes over every NPC begun after the first."""


class PrivacyService:
    """The privacy operations of one plugin (arguments arrive checked by the facade)."""

    def __init__(
        self,
        state: WorldState,
        persistence: PersistenceService,
        memories: MemoryService,
        knowledge: KnowledgeService,
        relationships: RelationshipService,
        conversations: ConversationService,
        maintenance: MaintenanceService,
    ) -> None:
        self.state = state
        self.persistence = persistence
        self.memories = memories
        self.knowledge = knowledge
        self.relationships = relationships
        self.conversations = conversations
        self.maintenance = maintenance
        self._salt: bytes | None = None
        self._seen: list[PendingForget] = []
        """Forgetting another game server began that this one is still to do its part of
        (set by :meth:`poll` on the writer thread, taken by :meth:`tick`)."""
        self._applying: set[tuple[str, str]] = set()
        """Operations (op, key) done here by :meth:`tick` whose acknowledgement is not yet written."""
        self._work: _RemoteForget | None = None
        """This server's part of a forgetting another server began, under way."""
        self._share: TickShare | None = None
        self._endings: dict[str, _Ending] = {}
        """The games this server has ended its part of, as it ended them (for the rows
        no live server owns)."""
        self._known: list[PendingForget] = []
        """The world's pending forgetting as last seen: an NPC claimed meanwhile (whose
        row another server may have given up unchanged) is cleaned before it is served."""
        if persistence.shared is not None and isinstance(persistence.store, PrivacyStore):
            persistence.poll = self.poll
            persistence.claimed = self._claimed

    # ------------------------------------------------------------------ shared

    def _privacy_store(self) -> PrivacyStore | None:
        store = self.persistence.store
        if self.persistence.writer is not None and isinstance(store, PrivacyStore):
            return store
        return None

    def pseudonym(self, key: str) -> str:
        """The pseudonym that stands for player ``key`` in the audit log."""
        if self._salt is None:
            store = self._privacy_store()
            self._salt = store.audit_salt() if store is not None else os.urandom(16)
        return privacy_rules.pseudonym(self._salt, key)

    def npcs(self) -> Iterator[NpcHandle]:
        """Every NPC: live ones, then those only in the store (handles over their
        documents, which changes reach)."""
        yield from list(self.state.registry.npcs.values())
        for document in list(self.state.stored.values()):
            if isinstance(document, NpcDocument):
                handle = handle_of(document)
                assert isinstance(handle, NpcHandle)
                yield handle

    def profile(self, key: str) -> PlayerProfile | None:
        """The privacy profile of a live or stored player (``None``: no such player)."""
        live = self.state.registry.live_player(key)
        if live is not None:
            return live.profile
        stored = self.state.stored.get(key)
        return stored.profile if isinstance(stored, PlayerDocument) else None

    def players(self) -> Iterator[tuple[str, str, PlayerProfile]]:
        """(key, name, profile) of every live and stored player."""
        for handle in list(self.state.registry.players.values()):
            yield handle.identity.key, handle.identity.name, handle.profile
        for document in list(self.state.stored.values()):
            if isinstance(document, PlayerDocument):
                yield document.key, document.name, document.profile

    def unconsenting_pattern(self) -> re.Pattern[str] | None:
        """Finds the key or name of any player who has not consented to be remembered."""
        needles = [n for key, name, profile in self.players() if not profile.consent for n in (key, name)]
        return privacy_rules.mention_pattern(needles)

    def names_unconsenting(self, content: str) -> bool:
        """Whether ``content`` names (key or name, whole word) a player who has not
        consented; a substring pre-check per player keeps it O(players) cheap steps."""
        lowered = content.lower()
        hits = [
            needle
            for key, name, profile in self.players()
            if not profile.consent
            for needle in (key, name)
            if needle.lower() in lowered
        ]
        return bool(hits) and privacy_rules.mentions(privacy_rules.mention_pattern(hits), content)

    def check_world_memory(self, content: str, scope: str) -> None:
        """A world-scoped ``social`` or ``profile`` memory must name no player who has
        not consented (O(live and stored players))."""
        if scope in ("social", "profile") and self.names_unconsenting(content):
            raise PrivacyError(
                f"a {scope!r} memory may not name a player who has not consented to be remembered"
            )

    def world_fact_scope(self, content: str) -> Scope:
        """The scope of a fact about no one in particular: ``social``, or ``session``
        when it names a player who has not consented."""
        return "session" if self.names_unconsenting(content) else "social"

    # ------------------------------------------------------------------ forgetting

    def resume(self) -> list[ForgetReport | ConsentReport | EndGameReport]:
        """Finish the forgetting a crash interrupted, or take part in the forgetting
        (withdrawal of consent, end of a game) other game servers of a shared store began (called
        once the store is loaded, before any NPC is served)."""
        store = self._privacy_store()
        if store is None:
            return []
        reports: list[ForgetReport | ConsentReport | EndGameReport] = []
        for record in store.pending_forgets():
            actor = record.actor or "restart"  # (records of earlier versions name no one)
            if record.op == "forget":
                reports.append(self.forget_player(record.key, actor=actor, name=record.name, resumed=True))
            elif record.op == "withdraw":
                reports.append(self._withdraw_shared(record, actor, resumed=True))
            elif record.op == "end-game":
                reports.append(self._end_game_shared(record, actor, resumed=True))
        return reports

    def forget_player(
        self, key: str, *, actor: str, name: str | None = None, resumed: bool = False
    ) -> ForgetReport:
        """Remove player ``key`` from the live world, every NPC (live or stored), the
        extraction pipeline and every generation of the store on disk. On a store game
        servers share, the other live servers forget the player in the NPCs they own
        when they next poll the store's record; the last of them finishes the purge
        (``waiting`` in the report: the servers this one left it to)."""
        state = self.state
        live = state.registry.live_player(key)
        stored = state.stored.get(key)
        if live is not None:
            name = live.identity.name
        elif isinstance(stored, PlayerDocument):
            name = stored.name
        pattern = _pattern_of(key, name)
        store = self._privacy_store()
        pending = PendingForget(key=key, name=name, actor=actor)
        if store is not None:  # first: a crash from here on is finished by the restart
            self.persistence.run_on_store(lambda s: _set_pending(s, pending))
            self._known = [*(p for p in self._known if not _same(p, pending)), pending]
        counts: Counter[str] = Counter()
        shared = self.persistence.shared if store is not None else None
        before = set(state.dirty)
        changed = self._forget_here(key, pattern, counts)
        report = ForgetReport(player=self.pseudonym(key), resumed=resumed)
        entry = self.persistence.entry(
            "forget", report.player, actor, details={"resumed": True} if resumed else None
        )
        if shared is not None:
            self._keep_unowned_clean(changed, before)
            if live is not None:  # this server owns the player's document
                state.deleted.add(key)
            entry.counts.update(counts)
            waiting: list[int] = []
            self.persistence.save(after=lambda s: waiting.extend(self._part_done(s, pending, pattern, entry)))
            report.waiting = waiting
            counts.update({k: v for k, v in entry.counts.items() if k.startswith("files")})
        elif store is not None:

            def finish(s: Store) -> None:
                self._purge(s, pending, pattern, entry)

            entry.counts.update(counts)
            self.persistence.save(after=finish)
            counts.update({k: v for k, v in entry.counts.items() if k.startswith("files")})
        elif self.persistence.writer is not None:
            state.deleted.add(key)
            entry.counts.update(counts)
            self.persistence.save(audit=[entry])
        report.counts = dict(counts)
        return report

    def _forget_here(self, key: str, pattern: re.Pattern[str], counts: Counter[str]) -> set[str]:
        """Forget player ``key`` in this process: the live player, extraction work,
        every live and stored NPC, faction standing; the keys of the NPCs changed."""
        self._begin_forgetting(key, pattern, counts)
        changed = {npc.identity.key for npc in self.npcs() if self._scrub(npc, key, pattern, counts)}
        self._end_forgetting(key, counts)
        return changed

    def _begin_forgetting(self, key: str, pattern: re.Pattern[str], counts: Counter[str]) -> None:
        """The live player and the extraction work about them go first."""
        live = self.state.registry.live_player(key)
        if live is not None:
            self.state.registry.detach(live)
            counts["player"] += 1
        self.conversations.drop_jobs_of(key)
        counts["jobs"] += self.conversations.drop_jobs_mentioning(pattern)
        self.maintenance.drop_player(key)

    def _end_forgetting(self, key: str, counts: Counter[str]) -> None:
        """The faction standing kept for the player and their stored document go."""
        state = self.state
        self.relationships.standing.forget_player(key)
        if state.stored.pop(key, None) is not None:
            counts["player"] = 1
        state.dirty.discard(key)

    def _keep_unowned_clean(self, changed: set[str], before: set[str]) -> None:
        """After :meth:`_forget_here` on a shared store: stored documents changed only
        by the forgetting are not written from this process's (possibly stale) copies;
        :meth:`_part_done` cleans their rows as the store holds them."""
        state = self.state
        for key in changed - before:
            if state.registry.live(key) is None:
                state.dirty.discard(key)

    def _part_done(
        self,
        store: Store,
        record: PendingForget,
        pattern: re.Pattern[str],
        entry: AuditEntry,
        *,
        first: bool = True,
    ) -> list[int]:
        """On the writer thread, once this server's documents the operation ``record``
        changed are written (``first``: just now): acknowledge its part and apply it to
        the documents no live server owns (so none it adds later holds the player as
        before); then, if no server is still to do its part and this one is to finish,
        apply it to them again (those of servers gone meanwhile) and close the record
        (a forgetting purges the player from the store first). Returns the servers
        still waited for."""
        assert isinstance(store, SharedStore) and isinstance(store, PrivacyStore)
        if first:
            store.acknowledge_forget(record.key, record.op)
            _clean_free(store, record, pattern, entry, self._ending_for(record))
        waiting, finisher = store.forget_progress(record.key, record.op)
        if waiting or finisher != store.session:
            log.info("%s %s: left to game servers %s", record.op, entry.target, waiting or [finisher])
            return waiting or ([] if finisher is None else [finisher])
        if not first:
            _clean_free(store, record, pattern, entry, self._ending_for(record))
        if record.op == "forget":
            self._purge(store, record, pattern, entry)
        else:
            if record.op == "end-game":
                _delete_free_players(store, record, entry)
            self._endings.pop(record.key, None)
            store.append_audit(entry)  # before the pending record goes: a kill between repeats both
            _set_pending(store, record, closed=True)
        return []

    def _ending_for(self, record: PendingForget) -> _Ending | None:
        """The ending of an end-game ``record`` as this server did its part (or from the
        record alone); ``None`` for another operation. (On the writer thread.)"""
        if record.op != "end-game":
            return None
        ending = self._endings.get(record.key)
        return ending if ending is not None else _ending_of(record, self.state, set(), set(), None)

    def _purge(
        self, store: Store, record: PendingForget, pattern: re.Pattern[str], entry: AuditEntry
    ) -> None:
        """Purge the player from every generation of ``store``, append the audit entry,
        and close the pending record (on the writer thread)."""
        assert isinstance(store, PrivacyStore)
        key = record.key
        purged = store.purge(pattern, remove=[key])
        entry.counts.update(files_removed=purged.removed, files_scrubbed=purged.scrubbed)
        entry.counts.update(files_still_matching=len(purged.remaining))
        if purged.segments_left:
            raise PrivacyError(
                f"{purged.segments_left} journal segments could not be folded: "
                f"{'; '.join(purged.journal)}; the forgetting finishes at the next start"
            )
        store.append_audit(entry)  # before the pending record goes: a kill between repeats both
        _set_pending(store, record, closed=True)

    # ------------------------------------------------------------------ shared stores

    def poll(self, store: Store) -> None:
        """On the writer thread, once per snapshot round with a store game servers
        share: read the world's pending forgetting (one small query); what this server
        has not done its part of is applied by the next :meth:`tick`, what it has is
        finished here once no other server is still to do its part."""
        try:
            assert isinstance(store, SharedStore) and isinstance(store, PrivacyStore)
            pending = store.pending_forgets()
            self._known = pending
            ending = {p.key for p in pending if p.op == "end-game"}
            for game in [g for g in self._endings if g not in ending]:  # (finished elsewhere)
                self._endings.pop(game, None)
            session = store.session
            self._seen = [p for p in pending if session not in p.acks and (p.op, p.key) not in self._applying]
            for record in pending:
                if session in record.acks and (record.op, record.key) not in self._applying:
                    pattern = _pattern_for(record)
                    entry = self._entry(record, "game server")
                    self._part_done(store, record, pattern, entry, first=False)
        except Exception:  # the next round polls again
            log.exception("polling %r for pending forgetting failed", store)

    def _entry(self, record: PendingForget, actor: str, counts: Counter[str] | None = None) -> AuditEntry:
        """The audit entry of the pending operation ``record``."""
        if record.op == "forget":
            return self.persistence.entry("forget", self.pseudonym(record.key), actor, counts=counts)
        if record.op == "end-game":
            mode = "purge" if record.purge else "compact"
            return self.persistence.entry(
                "end-game", record.key, actor, counts=counts, details={"mode": mode}
            )
        return self.persistence.entry(
            "consent", self.pseudonym(record.key), actor, counts=counts, details={"consent": False}
        )

    def _claimed(self, document: Document) -> None:
        """Apply to a document just claimed from the shared store every pending
        operation (forgetting, withdrawn consent, a game's end): O(1) while there is none."""
        if not self._known:
            return
        counts: Counter[str] = Counter()
        for record in list(self._known):
            ending = None
            if record.op == "end-game":
                ending = self._endings.get(record.key) or self._ending(record)
            if _apply_to_document(record, _pattern_for(record), document, counts, ending):
                self.state.mark(document.key)

    def tick(self) -> None:
        """Do, in the NPCs this server holds, the privacy operations another game server
        began (seen by :meth:`poll`: forgetting, withdrawn consent, a game's end), one at
        a time, a few NPCs per tick within the snapshot budget (``snapshot_tick_ms``; at
        least one): O(1) while there is none. Passes over every NPC are made until one
        finds nothing left (meanwhile gossip may copy a fact from an NPC not yet done to
        one that was, and a conversation with the player an NPC still had open may end
        and be extracted); before each pass after the first, the extraction work about a
        forgotten player is dropped again. A game's end takes the ending items in the
        first pass, and in the passes after it only the gossip copies of the facts it
        took: what play makes meanwhile is made after the end, as on one server what is
        made after the call. The documents changed then go to the writer, which
        acknowledges this server's part. The tick never waits for the store."""
        work = self._work
        if work is None:
            while self._seen and work is None:
                record = self._seen.pop(0)
                if (record.op, record.key) not in self._applying:
                    work = self._begin_remote(record)
            if work is None:
                return
        if self._share is None:
            self._share = self.state.tick.share(self.state.pack.budgets.snapshot_tick_ms)
        deadline = self._share.deadline()
        if deadline is None:
            return
        while work.queue:
            npc = self._handle(work.queue.popleft())
            if npc is not None and self._apply(work, npc):
                work.changed.add(npc.identity.key)
                work.found = True
            if time.perf_counter() >= deadline:
                return
        if work.found:  # another pass, until one finds nothing
            work.found = False
            work.passes += 1
            if work.record.op == "forget":
                self.conversations.drop_jobs_of(work.key)  # (results of conversations ended meanwhile)
            work.queue.extend(self._npc_keys())
            return
        self._finish_remote(work)

    def _npc_keys(self) -> list[str]:
        """Keys of every live and stored NPC (once per pass of a forgetting)."""
        stored = [k for k, d in self.state.stored.items() if isinstance(d, NpcDocument)]
        return [*self.state.registry.npc_keys(), *stored]

    def _handle(self, key: str) -> NpcHandle | None:
        """NPC ``key``, live or stored, as it is now (``None``: gone meanwhile)."""
        live = self.state.registry.live(key)
        if isinstance(live, NpcHandle):
            return live
        document = self.state.stored.get(key)
        if not isinstance(document, NpcDocument):
            return None
        handle = handle_of(document)
        assert isinstance(handle, NpcHandle)
        return handle

    def _begin_remote(self, record: PendingForget) -> _RemoteForget:
        """Start this server's part of a forgetting another server began: the live
        player, extraction work, standing at once; the NPCs over the next ticks."""
        pattern = _pattern_for(record)
        ending = self._ending(record) if record.op == "end-game" else None
        work = _RemoteForget(
            record=record,
            key=record.key,
            pattern=pattern,
            ending=ending,
            owned_player=self.state.registry.live_player(record.key) is not None,
            before=set(self.state.dirty),
        )
        if record.op == "forget":
            self._begin_forgetting(record.key, pattern, work.counts)
            self._end_forgetting(record.key, work.counts)
        elif ending is not None:
            self._endings[record.key] = ending
            self._begin_ending(ending)
        else:
            self._withdraw_profile(record.key)
        work.queue.extend(self._npc_keys())
        self._applying.add((record.op, record.key))
        self._work = work
        return work

    def _finish_remote(self, work: _RemoteForget) -> None:
        """Hand the documents this server's part changed to the writer; it then
        acknowledges the part (and finishes the forgetting, if it is the one to)."""
        self._work = None
        self._keep_unowned_clean(work.changed, work.before)
        record, pattern = work.record, work.pattern
        entry = self._entry(record, "game server", work.counts)

        def done(store: Store) -> None:
            try:
                self._part_done(store, record, pattern, entry)
            except Exception:
                log.exception("%s %s in this server's NPCs: acknowledging failed", record.op, entry.target)
            finally:
                self._applying.discard((record.op, record.key))

        state = self.state
        written = [k for k in work.changed if k in state.dirty or state.registry.live(k) is not None]
        owned = [record.key] if work.owned_player else []
        if record.op == "forget":
            self.persistence.write_soon(written, owned, after=done)
        else:
            self.persistence.write_soon([*written, *owned], [], after=done)

    def _apply(self, work: _RemoteForget, npc: NpcHandle) -> bool:
        """Apply the pending operation of ``work`` to ``npc`` (live or stored) as a call
        on this server does; whether anything changed."""
        record, pattern, counts = work.record, work.pattern, work.counts
        if record.op == "forget":
            return self._scrub(npc, record.key, pattern, counts)
        if work.ending is not None and work.passes:
            return self._end_leaked(npc, work.ending, counts)
        if work.ending is not None:
            return self._end_npc(npc, work.ending, counts)
        return self._withdraw_npc(npc, record, pattern, counts)

    def _scrub(self, npc: NpcHandle, key: str, pattern: re.Pattern[str], counts: Counter[str]) -> bool:
        """Take out of ``npc`` everything about ``key`` or naming the player; whether anything went."""
        replace, forget = self.knowledge.replace_facts, self._forget_relationship
        changed = _scrub_components(npc, key, pattern, counts, replace, forget)
        if changed:
            self.state.mark(npc.identity.key)
        return changed

    def _forget_relationship(self, npc: NpcHandle, key: str) -> None:
        if npc.live:
            self.relationships.forget(npc, key)
        else:
            del npc.relationships.by_player[key]

    # ------------------------------------------------------------------ ending a game

    def end_game(self, game: str | None, *, actor: str) -> EndGameReport:
        """Purge (or compact, by pack rule) the ``session`` and ``anon`` memories and
        facts of game ``game`` (``None``: the current game, and items made before games
        had ids), the open conversations and summaries of players who have not
        consented, and everything held about anonymous participants (the documents of
        those no longer in the live world included). On a store game servers share, the
        other live servers do it in the NPCs they own when they next poll the store's
        record (``waiting`` in the report: the servers this one left it to)."""
        state = self.state
        players = list(self.players())
        record = PendingForget(
            op="end-game",
            key=state.game if game is None else game,
            purge=state.pack.privacy.end_game != "compact",
            legacy=game is None,
            anonymous=tuple(sorted({key for key, _, profile in players if profile.anonymous})),
            transient=tuple(sorted({key for key, _, profile in players if not profile.consent})),
            actor=actor,
        )
        if self._privacy_store() is not None and self.persistence.shared is not None:
            return self._end_game_shared(record, actor)
        ending = self._ending(record)
        counts: Counter[str] = Counter()
        for npc in self.npcs():
            self._end_npc(npc, ending, counts)
        for player in sorted(ending.transient):
            self.conversations.drop_jobs_of(player)
        for key in sorted(ending.anonymous):  # an anonymous participant's identity ends with the game
            if state.registry.live_player(key) is None and state.stored.pop(key, None) is not None:
                state.dirty.discard(key)
                if self.persistence.writer is not None:
                    state.deleted.add(key)
                counts["anonymous_players"] += 1
        entry = self._entry(record, actor, counts)
        self.persistence.save(audit=[entry])
        return EndGameReport(game=record.key, counts=dict(counts))

    def _ending(self, record: PendingForget) -> _Ending:
        """What ending the game of ``record`` needs to know, here: the players it names
        anonymous or without consent and those this server knows as such."""
        players = list(self.players())
        anonymous = {key for key, _, profile in players if profile.anonymous}
        transient = {key for key, _, profile in players if not profile.consent}
        everyone = privacy_rules.mention_pattern([n for key, name, _ in players for n in (key, name)])
        return _ending_of(record, self.state, anonymous, transient, everyone)

    def _end_npc(self, npc: NpcHandle, ending: _Ending, counts: Counter[str]) -> bool:
        """End the game of ``ending`` in ``npc`` (live or stored); whether anything changed."""
        changed = _end_game_components(
            npc, ending, counts, self.knowledge.replace_facts, self._forget_relationship
        )
        if changed:
            self.state.mark(npc.identity.key)
        return changed

    def _end_leaked(self, npc: NpcHandle, ending: _Ending, counts: Counter[str]) -> bool:
        """Take out of ``npc`` the gossip copies of the facts the game's end took and the
        ``heard`` memories it kept of them (an NPC may hear one from another not done
        yet); whether there was any."""

        def rumour(m: Memory) -> bool:
            return m.source == "heard" and m.content in ending.told and ending.ends(m.scope, m.game)

        changed = False
        for pair in npc.bank.players.values():
            removed = _filter_pair(pair, lambda m: not rumour(m))
            counts["memories"] += len(removed)
            changed |= bool(removed)
        if changed:
            self.state.mark(npc.identity.key)
        facts = npc.knowledge.facts
        kept = [
            f for f in facts if not (ending.ends(privacy_rules.fact_scope(f), f.game) and _copied(f, ending))
        ]
        if len(kept) == len(facts):
            return changed
        counts["facts"] += len(facts) - len(kept)
        self.knowledge.replace_facts(npc, kept)
        return True

    def _begin_ending(self, ending: _Ending) -> None:
        """On a store game servers share: the extraction work about players without
        consent goes (the rows of anonymous participants no server has in play go when
        the game has ended everywhere)."""
        for player in sorted(ending.transient):
            self.conversations.drop_jobs_of(player)

    def _drop_ended_players(self, ending: _Ending) -> None:
        """This server's copies of the anonymous participants whose rows went with the
        game's end."""
        state = self.state
        for key in sorted(ending.anonymous):
            if state.registry.live_player(key) is None and state.stored.pop(key, None) is not None:
                state.dirty.discard(key)

    def _end_game_shared(self, record: PendingForget, actor: str, *, resumed: bool = False) -> EndGameReport:
        """End the game of ``record`` on a store game servers share: record it, end it in
        what this server holds, then (on the writer) acknowledge and end it in the rows
        no live server owns; the other live servers do their part when they poll, and
        the last finishes, deleting the rows of anonymous participants no server has in
        play (see :meth:`forget_player`)."""
        state = self.state
        self.persistence.run_on_store(lambda s: _set_pending(s, record))
        self._known = [*(p for p in self._known if not _same(p, record)), record]
        ending = self._ending(record)
        self._endings[record.key] = ending
        before = set(state.dirty)
        self._begin_ending(ending)
        counts: Counter[str] = Counter()
        changed = {npc.identity.key for npc in self.npcs() if self._end_npc(npc, ending, counts)}
        self._keep_unowned_clean(changed, before)
        entry = self._entry(record, actor, counts)
        if resumed:
            entry.details["resumed"] = True
        waiting: list[int] = []
        self.persistence.save(
            after=lambda s: waiting.extend(self._part_done(s, record, ending.pattern, entry))
        )
        if not waiting:
            self._drop_ended_players(ending)
            if "anonymous_players" in entry.counts:
                counts["anonymous_players"] = entry.counts["anonymous_players"]
        return EndGameReport(game=record.key, counts=dict(counts), waiting=waiting)

    # ------------------------------------------------------------------ consent

    def set_consent(self, key: str, consent: bool, *, actor: str) -> ConsentReport:
        """Record player ``key``'s consent. Withdrawn: their ``player`` and ``social``
        memories and facts become de-identified ``anon`` fragments of the current game
        (or are purged, by pack rule)."""
        state = self.state
        live = state.registry.live_player(key)
        stored = state.stored.get(key)
        profile = self.profile(key)
        if profile is None:
            raise InvalidArgumentError(f"no player {key!r}, live or stored")
        if consent and profile.anonymous:
            raise PrivacyError(f"player {key!r} is anonymous and cannot consent to be remembered")
        if not consent and self._privacy_store() is not None and self.persistence.shared is not None:
            name = (
                live.identity.name
                if live is not None
                else stored.name
                if isinstance(stored, PlayerDocument)
                else None
            )
            purge = state.pack.privacy.withdrawn_consent == "purge"
            record = PendingForget(
                op="withdraw", key=key, name=name, purge=purge, game=state.game, actor=actor
            )
            return self._withdraw_shared(record, actor)
        changed_profile = msgspec.structs.replace(profile, consent=consent)
        if live is not None:
            state.registry.replace_profile(live, changed_profile)
            name = live.identity.name
        else:
            assert isinstance(stored, PlayerDocument)
            stored.profile = changed_profile
            name = stored.name
        state.mark(key)
        counts: Counter[str] = Counter()
        if not consent:
            self._withdraw(key, name, counts)
        report = ConsentReport(player=self.pseudonym(key), consent=consent, counts=dict(counts))
        self.persistence.save(
            audit=[
                self.persistence.entry(
                    "consent", report.player, actor, counts=report.counts, details={"consent": consent}
                )
            ]
        )
        return report

    def _withdraw(self, key: str, name: str, counts: Counter[str]) -> None:
        purge = self.state.pack.privacy.withdrawn_consent == "purge"
        record = PendingForget(op="withdraw", key=key, name=name, purge=purge, game=self.state.game)
        pattern = _pattern_of(key, name)
        for npc in self.npcs():
            self._withdraw_npc(npc, record, pattern, counts)

    def _withdraw_npc(
        self, npc: NpcHandle, record: PendingForget, pattern: re.Pattern[str], counts: Counter[str]
    ) -> bool:
        """Rewrite (or purge) what ``npc`` holds by player ``record.key``'s withdrawn consent;
        whether anything changed."""
        changed = _withdraw_components(npc, record, pattern, counts, self.knowledge.replace_facts)
        if changed:
            self.state.mark(npc.identity.key)
        return changed

    def _withdraw_profile(self, key: str) -> bool:
        """Player ``key`` no longer consents, here: whether this server owns them (live).
        A stored copy changes in memory only (its row is its owner's, or the store's
        writer's, to rewrite)."""
        live = self.state.registry.live_player(key)
        if live is not None:
            if live.profile.consent:
                self.state.registry.replace_profile(
                    live, msgspec.structs.replace(live.profile, consent=False)
                )
                self.state.mark(key)
            return True
        stored = self.state.stored.get(key)
        if isinstance(stored, PlayerDocument) and stored.profile.consent:
            stored.profile = msgspec.structs.replace(stored.profile, consent=False)
        return False

    def _withdraw_shared(self, record: PendingForget, actor: str, *, resumed: bool = False) -> ConsentReport:
        """Withdraw player ``record.key``'s consent on a store game servers share: record
        the withdrawal, rewrite what this server holds, then (on the writer) acknowledge
        and rewrite the rows no live server owns; the other live servers do their part
        when they poll, and the last finishes (see :meth:`forget_player`)."""
        state = self.state
        pattern = _pattern_of(record.key, record.name)
        self.persistence.run_on_store(lambda s: _set_pending(s, record))
        self._known = [*(p for p in self._known if not _same(p, record)), record]
        before = set(state.dirty)
        self._withdraw_profile(record.key)
        counts: Counter[str] = Counter()
        changed = {
            npc.identity.key for npc in self.npcs() if self._withdraw_npc(npc, record, pattern, counts)
        }
        self._keep_unowned_clean({*changed, record.key}, before)
        entry = self._entry(record, actor, counts)
        if resumed:
            entry.details["resumed"] = True
        waiting: list[int] = []
        self.persistence.save(after=lambda s: waiting.extend(self._part_done(s, record, pattern, entry)))
        return ConsentReport(
            player=self.pseudonym(record.key), consent=False, counts=dict(counts), waiting=waiting
        )

    # ------------------------------------------------------------------ cloning

    def clone(
        self, source: NpcHandle, target: NpcHandle, categories: Sequence[str], *, dry_run: bool, actor: str
    ) -> ClonePlan:
        """Copy ``source``'s clonable ``categories`` to ``target`` (or only plan it)."""
        plan = self.plan_clone(source, target, categories, dry_run=dry_run)
        if not dry_run:
            now = self.state.clock.now
            by_id = {m.id: m for m in source.bank.world.all()}
            facts = {f.id: f for f in source.knowledge.facts}
            for category, items in plan.items.items():
                copied = plan.copied.setdefault(category, [])
                for item in items:
                    if item.kind == "fact":
                        copied.append(self._clone_fact(target, facts[item.id], source.identity.key, now))
                    else:
                        copied.append(self._clone_memory(target, by_id[item.id], source.identity.key, now))
        counts = {category: len(items) for category, items in plan.items.items()}
        counts["skipped"] = len(plan.skipped)
        self.persistence.save(
            audit=[
                self.persistence.entry(
                    "clone-dry-run" if dry_run else "clone",
                    f"{source.identity.key}->{target.identity.key}",
                    actor,
                    counts=counts,
                    details={
                        "categories": list(categories),
                        "planned": {c: [i.id for i in items] for c, items in plan.items.items()},
                        "copied": plan.copied,
                        "skipped": [f"{s.id}: {s.reason}" for s in plan.skipped],
                    },
                )
            ]
        )
        return plan

    def plan_clone(
        self, source: NpcHandle, target: NpcHandle, categories: Sequence[str], *, dry_run: bool
    ) -> ClonePlan:
        """What :meth:`clone` would copy and skip, item by item (nothing changes)."""
        plan = ClonePlan(source=source.identity.key, target=target.identity.key, dry_run=dry_run)
        sensitive = self.state.pack.privacy.sensitive_tags
        unconsenting = self.unconsenting_pattern()
        held_contents = {m.content for m in target.bank.world.all()}
        held_origins = {o for f in target.knowledge.facts for o in (f.origin, *f.aliases)}
        for category in categories:
            items = plan.items.setdefault(category, [])
            if category == "knowledge":
                for fact in source.knowledge.facts:
                    reason = privacy_rules.fact_clonable(fact, sensitive)
                    if reason is None and self.profile(fact.subject or "") is not None:
                        reason = "about a player"
                    if reason is None and privacy_rules.fact_mentions(unconsenting, fact):
                        reason = "names a player who has not consented"
                    if reason is None and fact.origin in held_origins:
                        reason = "already known to the target"
                    if reason is None:
                        items.append(CloneItem(id=fact.id, kind="fact", content=fact.content))
                    else:
                        plan.skipped.append(CloneSkip(category=category, id=fact.id, reason=reason))
                continue
            for memory in source.bank.world.all():
                if memory.scope != category:
                    continue
                reason = privacy_rules.memory_clonable(memory, sensitive)
                if reason is None and privacy_rules.memory_mentions(unconsenting, memory):
                    reason = "names a player who has not consented"
                if reason is None and memory.content in held_contents:
                    reason = "already held by the target"
                if reason is None:
                    items.append(CloneItem(id=memory.id, kind=kind_of(memory), content=memory.content))
                else:
                    plan.skipped.append(CloneSkip(category=category, id=memory.id, reason=reason))
        for memory in source.bank.world.all():
            if memory.scope not in privacy_rules.CLONE_CATEGORIES:
                skip = CloneSkip(category="excluded", id=memory.id, reason=f"scope {memory.scope}")
                plan.skipped.append(skip)
        for player, pair in source.bank.players.items():
            who = self.pseudonym(player)
            plan.skipped += [
                CloneSkip(category="excluded", id=m.id, reason=f"player-specific ({who})") for m in pair.all()
            ]
        return plan

    def _clone_memory(self, target: NpcHandle, memory: Memory, source: str, now: float) -> str:
        if memory.scope not in ("social", "profile"):
            raise PrivacyError(f"memory {memory.id} of scope {memory.scope!r} cannot be cloned")
        copy = self.memories.remember(
            target,
            None,
            memory.content,
            kind=kind_of(memory),
            tags=memory.tags,
            importance=memory.importance,
            confidence=memory.confidence,
            valence=memory.valence,
            intensity=memory.intensity,
            locked=memory.locked,
            scope=memory.scope,
            room=memory.room,
            actor=source if memory.actor == SELF else memory.actor,  # the source NPC's own deed
            source=memory.source,
        )
        marked = msgspec.structs.replace(copy, cloned_from=source, cloned_at=now)
        records: list[Memory] = getattr(target.bank.world, kind_of(copy))
        for index, held in enumerate(records):
            if held.id == copy.id:
                records[index] = marked
        return copy.id

    def _clone_fact(self, target: NpcHandle, fact: Fact, source: str, now: float) -> str:
        learned = self.knowledge.learn(
            target,
            content=fact.content,
            category=fact.category,
            subject=fact.subject,
            topic=fact.topic,
            tags=fact.tags,
            confidence=fact.confidence,
            importance=fact.importance,
            source=fact.source,
            room=target.location.room,
            origin=fact.origin,
            locked=fact.locked,
            scope=privacy_rules.fact_scope(fact),
            game=fact.game,
        )
        if learned is None:
            return ""
        marked = msgspec.structs.replace(learned, cloned_from=source, cloned_at=now)
        facts = [marked if f.id == learned.id else f for f in target.knowledge.facts]
        self.knowledge.replace_facts(target, facts)
        return learned.id


def _scrub_components(
    npc: NpcHandle,
    key: str,
    pattern: re.Pattern[str],
    counts: Counter[str],
    replace_facts: Callable[[NpcHandle, list[Fact]], None],
    forget_relationship: Callable[[NpcHandle, str], None],
) -> bool:
    """Take out of ``npc`` everything about ``key`` or naming the player (``pattern``);
    whether anything went. Facts and relationships change through the given calls."""
    changed = False
    bank = npc.bank
    pair = bank.players.pop(key, None)
    if pair is not None:
        counts["memories"] += len(pair)
        changed = True
    if bank.milestones.pop(key, None) is not None:
        changed = True
    for held in (bank.world, *bank.players.values()):
        removed = _filter_pair(held, lambda m: not privacy_rules.memory_mentions(pattern, m))
        counts["memories"] += len(removed)
        changed |= bool(removed)
    if key in npc.relationships.by_player:
        forget_relationship(npc, key)
        counts["relationships"] += 1
        changed = True
    working = npc.working
    for table in (working.open, working.recent, working.conversations):
        if table.pop(key, None) is not None:
            counts["conversations"] += table is working.open
            changed = True
    for player, turns in list(working.open.items()):
        kept_turns = [t for t in turns if not privacy_rules.mentions(pattern, t.text, t.speaker)]
        if len(kept_turns) != len(turns):
            working.open[player] = kept_turns
            changed = True
    for player, summaries in list(working.recent.items()):
        kept_summaries = [
            s for s in summaries if not privacy_rules.mentions(pattern, s.summary, s.conversation)
        ]
        if len(kept_summaries) != len(summaries):
            working.recent[player] = kept_summaries
            changed = True
    extracted = [c for c in working.extracted if not privacy_rules.mentions(pattern, c)]
    if len(extracted) != len(working.extracted):
        working.extracted = extracted
        changed = True
    pending = [p for p in working.pending if p.player != key and not _pending_mentions(pattern, p)]
    if len(pending) != len(working.pending):
        counts["conversations"] += len(working.pending) - len(pending)
        working.pending = pending
        changed = True
    facts = npc.knowledge.facts
    kept = [f for f in facts if f.subject != key and not privacy_rules.fact_mentions(pattern, f)]
    if len(kept) != len(facts):
        counts["facts"] += len(facts) - len(kept)
        replace_facts(npc, kept)
        changed = True
    return changed


def _pattern_of(key: str, name: str | None) -> re.Pattern[str]:
    """Finds the key or name (if known) of player ``key``."""
    pattern = privacy_rules.mention_pattern([key] if name is None else [key, name])
    assert pattern is not None
    return pattern


def _withdraw_components(
    npc: NpcHandle,
    record: PendingForget,
    pattern: re.Pattern[str],
    counts: Counter[str],
    replace_facts: Callable[[NpcHandle, list[Fact]], None],
) -> bool:
    """Player ``record.key`` (``pattern`` finds them) withdrew their consent: ``npc``'s
    ``player`` and ``social`` memories and facts about them go, or (unless
    ``record.purge``) become de-identified ``anon`` fragments of game ``record.game``;
    whether anything changed. Facts change through ``replace_facts``."""
    key, purge, game = record.key, record.purge, record.game
    changed = False
    pair = npc.bank.players.get(key)
    if pair is not None:
        moved = _filter_pair(pair, lambda m: m.scope not in ("player", "social"))
        counts["memories"] += len(moved)
        changed |= bool(moved)
        if not purge:
            for memory in moved:
                fragment = msgspec.structs.replace(
                    memory,
                    scope="anon",
                    game=game,
                    content=privacy_rules.redact(pattern, memory.content),
                    source_conversation=None,
                    actor=None if memory.actor == key else memory.actor,  # a fragment names no one
                    teller=None if memory.teller == key else memory.teller,
                )
                getattr(npc.bank.world, kind_of(fragment)).append(fragment)
    facts = npc.knowledge.facts
    rewritten: list[Fact] = []
    for fact in facts:
        if fact.subject != key or privacy_rules.fact_scope(fact) not in ("player", "social"):
            rewritten.append(fact)
            continue
        counts["facts"] += 1
        if not purge:
            rewritten.append(
                msgspec.structs.replace(
                    fact,
                    subject=None,
                    scope="anon",
                    game=game,
                    content=privacy_rules.redact(pattern, fact.content),
                )
            )
    if rewritten != facts:
        replace_facts(npc, rewritten)
        changed = True
    return changed


def _end_game_components(
    npc: NpcHandle,
    ending: _Ending,
    counts: Counter[str],
    replace_facts: Callable[[NpcHandle, list[Fact]], None],
    forget_relationship: Callable[[NpcHandle, str], None],
) -> bool:
    """End the game of ``ending`` in ``npc``: its ending memories and facts go (compacted
    into at most ``compact_max_per_npc`` summaries naming no player, by rule), the open
    conversations and summaries of players without consent, everything about anonymous
    participants; whether anything changed. Facts and relationships change through the
    given calls."""
    gathered: dict[str, set[str]] = {}
    changed = False
    for player, pair in [(None, npc.bank.world), *list(npc.bank.players.items())]:
        removed = _filter_pair(pair, lambda m: not ending.ends(m.scope, m.game))
        counts["memories"] += len(removed)
        changed |= bool(removed)
        for memory in removed if ending.compact else ():
            if memory.tags:  # one person per player; world fragments each count as one
                gathered.setdefault(memory.tags[0], set()).add(player or memory.id)
        if player is not None and not len(pair):
            del npc.bank.players[player]
            npc.bank.milestones.pop(player, None)
        changed |= _clear_actors(pair, ending.anonymous)  # an anonymous participant ends with the game
    facts = npc.knowledge.facts
    kept = [f for f in facts if not ending.ends(privacy_rules.fact_scope(f), f.game)]
    ended = [f for f in facts if ending.ends(privacy_rules.fact_scope(f), f.game)]
    ending.origins.update(f.origin for f in ended)
    ending.told.update(f.content for f in ended)
    if len(kept) != len(facts):
        counts["facts"] += len(facts) - len(kept)
        replace_facts(npc, kept)
        changed = True
    working = npc.working
    for table in (working.open, working.recent):
        for player in [p for p in table if p in ending.transient]:
            del table[player]
            counts["conversations"] += 1
            changed = True
    pending = [p for p in working.pending if p.player not in ending.transient]
    if len(pending) != len(working.pending):
        counts["conversations"] += len(working.pending) - len(pending)
        working.pending = pending
        changed = True
    for player in [p for p in npc.relationships.by_player if p in ending.anonymous]:
        forget_relationship(npc, player)
        working.conversations.pop(player, None)
        counts["relationships"] += 1
        changed = True
    if gathered:
        ranked = sorted(gathered.items(), key=lambda item: (-len(item[1]), item[0]))
        nameless = [(t, people) for t, people in ranked if not privacy_rules.mentions(ending.everyone, t)]
        rules = ending.privacy
        for tag, people in nameless[: rules.compact_max_per_npc]:  # a summary names no player
            _summarise(npc, rules.compact_template.format(tag=tag, people=len(people)), tag, ending)
            counts["compacted"] += 1
            changed = True
    return changed


def _clear_actors(pair: PairMemories, gone: Iterable[str]) -> bool:
    """Make the memories of ``pair`` whose actor or teller is one of ``gone`` by or from
    no one known (``None``); whether any were."""
    gone = frozenset(gone)
    if not gone:
        return False
    changed = False
    for kind in MEMORY_KINDS:
        records: list[Memory] = getattr(pair, kind)
        for index, memory in enumerate(records):
            if memory.actor in gone or memory.teller in gone:
                actor = None if memory.actor in gone else memory.actor
                teller = None if memory.teller in gone else memory.teller
                records[index] = msgspec.structs.replace(memory, actor=actor, teller=teller)
                changed = True
    return changed


def _copied(fact: Fact, ending: _Ending) -> bool:
    """Whether ``fact`` shares its origin (or an alias) with one the end took."""
    return fact.origin in ending.origins or any(a in ending.origins for a in fact.aliases)


def _summarise(npc: NpcHandle, content: str, tag: str, ending: _Ending) -> None:
    """``npc`` keeps a ``social`` summary of what ended (within the caps of its memory
    rules, as any new memory)."""
    bank = npc.bank
    summary = SemanticMemory(
        id=f"m{bank.next_id}",
        content=content,
        tags=(tag,),
        importance=0.3,
        confidence=0.5,
        created=ending.now,
        last_accessed=ending.now,
        scope="social",
        room=npc.location.room,
        game=ending.current,
    )
    memory_rules.insert_numbered(bank, bank.world, summary, ending.memory, ending.now)
    if bank.next_id % max(1, ending.memory.memories_per_npc // NPC_CAP_CHECKS) == 0:
        decay_rules.over_npc_cap(bank, ending.memory, ending.now)


def _ending_of(
    record: PendingForget,
    state: WorldState,
    anonymous: set[str],
    transient: set[str],
    everyone: re.Pattern[str] | None,
) -> _Ending:
    """The ending of an end-game ``record`` under ``state``'s pack, now, with the
    players ``anonymous`` and ``transient`` known here as well as those it names."""
    return _Ending(
        game=record.key,
        legacy=record.legacy,
        compact=not record.purge,
        anonymous=frozenset({*record.anonymous, *anonymous}),
        transient=frozenset({*record.transient, *transient}),
        everyone=everyone,
        privacy=state.pack.privacy,
        memory=state.pack.memory,
        now=state.clock.now,
        current=state.game,
    )


def _delete_free_players(store: SharedStore, record: PendingForget, entry: AuditEntry) -> None:
    """Delete the documents of the anonymous participants of an ended game that no live
    game server has in play (on the writer thread); counted in ``entry``."""
    anonymous = privacy_rules.mention_pattern(record.anonymous)
    if anonymous is None:
        return
    taken = store.take_free(anonymous, "player")
    gone = sorted(d.key for d in taken if d.key in record.anonymous)
    kept = [encode_document(d) for d in taken if d.key not in record.anonymous]
    if kept:
        store.write(kept)  # (given up again unchanged)
    store.delete(gone)
    entry.counts["anonymous_players"] = entry.counts.get("anonymous_players", 0) + len(gone)


def _pattern_for(record: PendingForget) -> re.Pattern[str]:
    """What finds the rows the pending operation ``record`` may change."""
    return _Ending.pattern if record.op == "end-game" else _pattern_of(record.key, record.name)


def _clean_free(
    store: SharedStore,
    record: PendingForget,
    pattern: re.Pattern[str],
    entry: AuditEntry,
    ending: _Ending | None,
) -> None:
    """Apply the pending operation ``record`` to the documents no live game server
    owns, as the store holds them (on the writer thread); counted in ``entry``."""
    taken = store.take_free(pattern)
    if record.op == "withdraw":
        taken += store.take_free(pattern, "player")
    cleaned: Counter[str] = Counter()
    for document in taken:
        _apply_to_document(record, pattern, document, cleaned, ending)
    if taken:
        store.write([encode_document(d) for d in taken])
    entry.counts["documents_cleaned"] = entry.counts.get("documents_cleaned", 0) + len(taken)


def _apply_to_document(
    record: PendingForget,
    pattern: re.Pattern[str],
    document: Document,
    counts: Counter[str],
    ending: _Ending | None = None,
) -> bool:
    """The pending operation ``record`` on a stored document (not in the live world):
    an NPC forgets the player or rewrites their items; the player's own document of a
    withdrawal records that they no longer consent. Whether anything changed."""
    if isinstance(document, PlayerDocument):
        if record.op != "withdraw" or document.key != record.key or not document.profile.consent:
            return False
        document.profile = msgspec.structs.replace(document.profile, consent=False)
        return True
    if not isinstance(document, NpcDocument):
        return False
    handle = handle_of(document)
    assert isinstance(handle, NpcHandle)
    if record.op == "forget":
        return _scrub_components(handle, record.key, pattern, counts, _set_facts, _drop_relationship)
    if ending is not None:
        return _end_game_components(handle, ending, counts, _set_facts, _drop_relationship)
    return _withdraw_components(handle, record, pattern, counts, _set_facts)


def _set_facts(npc: NpcHandle, facts: list[Fact]) -> None:
    """``npc`` (a stored document's handle) now knows ``facts``."""
    npc.knowledge.facts = facts


def _drop_relationship(npc: NpcHandle, key: str) -> None:
    del npc.relationships.by_player[key]


def _pending_mentions(pattern: re.Pattern[str], pending: PendingConversation) -> bool:
    """Whether a pending conversation's lines name what ``pattern`` finds: what makes
    the extraction pipeline drop its job (see ``ConversationService.dropped``; a
    speaker is a participant, and a forgotten participant's conversations go by key)."""
    return any(privacy_rules.mentions(pattern, turn.text) for turn in pending.turns)


def _filter_pair(pair: PairMemories, keep: Callable[[Memory], bool]) -> list[Memory]:
    """Keep the pair's memories ``keep(memory)`` accepts; returns those that went."""
    removed: list[Memory] = []
    for kind in MEMORY_KINDS:
        records = getattr(pair, kind)
        kept = [m for m in records if keep(m)]
        if len(kept) != len(records):
            removed += [m for m in records if not keep(m)]
            setattr(pair, kind, kept)
    return removed


def _same(one: PendingForget, other: PendingForget) -> bool:
    """Whether two records are of the same pending operation."""
    return one.op == other.op and one.key == other.key


def _set_pending(store: Store, pending: PendingForget, *, closed: bool = False) -> None:
    """Record the operation ``pending`` (``closed``: take it out, finished). A record
    of it already there is kept, with the game servers that have done their part."""
    assert isinstance(store, PrivacyStore)
    records = store.pending_forgets()
    held = next((p for p in records if _same(p, pending)), None)
    if not closed and held is not None:
        pending = msgspec.structs.replace(held, name=held.name or pending.name)
        if pending == held:
            return
    others = [p for p in records if not _same(p, pending)]
    store.set_pending_forgets(others if closed else [*others, pending])


__all__ = [
    "CloneItem",
    "ClonePlan",
    "CloneSkip",
    "ConsentReport",
    "EndGameReport",
    "ForgetReport",
    "PrivacyService",
]
