"""Persistence: documents of NPCs and players, snapshot rounds, ``save()``, deleting
forgotten keys, the audit trail, and how stale the store is.

Every ``snapshot_interval`` game seconds a round starts with the keys marked dirty
since the last one (a key changed ten times in an interval is written once) and the
metadata (clock, random state, pending extractions) as of that tick. The round's
documents are *captured* — their containers copied, records shared, nothing encoded
(see :mod:`npc_memory.store.records`) — and the store's writer thread encodes them as
patches against what it wrote last and appends them to the journal, one fsync per
batch and per ``ROUND_GROUP`` of a round's documents. The round is complete once its
last batch is on disk.

How stale the store is (:meth:`PersistenceService.oldest_unsaved`): every change is
dated (to the tick before the one that first saw it); a round hands its keys over in
the order of their first change and the writer takes them in that order, so once its
first groups are on disk the round's oldest unsaved change is the first change of the
first key not yet written (:attr:`StoreWriter.round_durable`; where the writer captures
and the store keeps a journal: otherwise a round counts until it is all on disk). A
conversation waiting for extraction is saved with its NPC's document (its lines stay in
the working memory until its memories are applied), so it is as stale as that document;
the metadata's list of waiting jobs adds what their LLM calls cost and their order.

Where the interpreter has a GIL (every CPython before the free-threaded builds) the
writer captures the round's documents itself, each with one sequence of C calls that
no other thread can interrupt: the tick only hands over the set of keys, with the
parts of each NPC's document the services marked changed (:meth:`WorldState.mark`); the
writer copies and compares those parts (and any marked since) and keeps the rest of
what it wrote last, so a round costs what changed, not the documents' sizes. Otherwise the tick
captures them, ``snapshot_tick_ms`` and ``snapshot_documents_per_tick`` at a time.
Disk work and encoding never happen on the tick.

Shedding: a round starts only once the previous one is captured, and at most
``MAX_BACKLOG`` tick captures wait for the writer; the keys meanwhile coalesce
further changes. Nothing is dropped: a slow disk shows as a growing
:meth:`PersistenceService.oldest_unsaved`. The writer works between ticks and gives
the GIL up every millisecond of work (every 0.2 ms once it finds the game thread busy);
once a round it captures is late (past its interval, or on course to take longer than
it), until the round ends, it yields only at the interpreter's default switch interval
(about half of a busy interpreter), trading frame latency for a store that keeps up.
"""

from __future__ import annotations

import bisect
import datetime
import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from npc_memory.components import (
    FactionMember,
    Handle,
    Identity,
    Location,
    NpcHandle,
    PlayerHandle,
)
from npc_memory.errors import StoreError, StoreLostError, StoreOwnershipError
from npc_memory.events import SnapshotFailed, StoreOwnershipLost
from npc_memory.extraction.model import ExtractionJob
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.state import WorldState
from npc_memory.store import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    JournalStore,
    NpcDocument,
    PlayerDocument,
    SharedStore,
    Store,
    StoreMeta,
)
from npc_memory.store.documents import pack_rng_state
from npc_memory.store.records import (
    Capture,
    NpcCapture,
    capture_atomically,
    capture_document,
    capture_handle,
    writer_may_capture,
)
from npc_memory.store.writer import Players, StoreWriter, WriteBatch

log = logging.getLogger("npc_memory.snapshot")

LATE_CHECK = 0.125
"""Share of the snapshot interval after which a round's pace tells whether it is late."""
LATE_PROJECTED = 1.0
"""A round on course (at its pace so far) to take more than this share of the snapshot
interval is late: the writer takes a fair share of the GIL until it ends, so that the
next round starts on time. Not sooner: a writer that holds the GIL 5 ms at a time makes
the game's frames late, and a late frame has no idle time for the writer either (at
0.75, and late past half the interval, stress 10k rounds took longer, not shorter)."""
MAX_BACKLOG = 4096
"""Captured documents that may wait for the writer; capture pauses beyond (slow disk)."""
END_COST = 0.0002
"""Seconds a round's end (its metadata, handed to the writer) is first expected to take
on the tick; measured from then on, weighted ``END_COST_WEIGHT`` per round."""
END_COST_WEIGHT = 0.25


@dataclass(slots=True)
class _Unsettled:
    """A round taken and not yet on disk."""

    round: int
    since: float
    """Game time of the oldest change it carries."""
    released: int
    """Extraction jobs released before it started."""
    dates: _Dates | None = None
    """When its keys first changed, if known (see :attr:`StoreWriter.round_durable`)."""


@dataclass(slots=True)
class _Dates:
    """When keys were first marked, in the order of :attr:`WorldState.changed`: the
    keys from position ``starts[i]`` on changed at game time ``times[i]`` or later."""

    starts: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    count: int = 0
    """Keys dated so far."""

    def date(self, count: int, time: float) -> None:
        """The keys from :attr:`count` up to ``count`` changed at ``time`` or later."""
        if count > self.count:
            self.starts.append(self.count)
            self.times.append(time)
            self.count = count

    def first_after(self, position: int) -> float | None:
        """When the key at ``position`` (or any later one) first changed, at the
        earliest; ``None`` past the last key."""
        if position >= self.count:
            return None
        return self.times[bisect.bisect_right(self.starts, position) - 1]


def document_of(handle: Handle, now: float) -> Document:
    """The document that persists ``handle``'s components (``saved_at`` = ``now``)."""
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


def handle_of(document: Document) -> Handle:
    """A stored (entity-less, read-only) handle over ``document``'s components."""
    identity = Identity(key=document.key, name=document.name)
    if isinstance(document, NpcDocument):
        return NpcHandle(
            entity=None,
            identity=identity,
            faction=FactionMember(faction=document.faction),
            location=Location(document.room),
            traits=document.traits,
            bank=document.bank,
            relationships=document.relationships,
            working=document.working,
            knowledge=document.knowledge,
        )
    return PlayerHandle(
        entity=None,
        identity=identity,
        faction=FactionMember(faction=document.faction),
        location=Location(document.room),
        profile=document.profile,
    )


class PersistenceService:
    """Snapshots of one plugin's world to its store (or nothing, without a store)."""

    def __init__(
        self,
        state: WorldState,
        store: Store | None,
        pipeline: ExtractionPipeline,
        snapshots: int = 0,
        *,
        capture_on_writer: bool | None = None,
    ) -> None:
        self.state = state
        self.store = store
        self.pipeline = pipeline
        self.excluded: Callable[[ExtractionJob], bool] = lambda job: False
        """Jobs the metadata must not keep (about or naming a forgotten player)."""
        self.shared = store if isinstance(store, SharedStore) else None
        """The store again where game servers share it (they claim what they add)."""
        self.snapshots = snapshots
        """Snapshot rounds numbered over the store's life (the last one started)."""
        self.rounds_completed = 0
        """Snapshot rounds (and saves) on disk since install."""
        self._capture_choice = capture_on_writer
        self.capture_on_writer = writer_may_capture() if capture_on_writer is None else capture_on_writer
        """Whether the writer thread captures the current round's documents (else this
        thread does, within ``snapshot_tick_ms``): chosen at each round's start, unless
        given, by :func:`~npc_memory.store.records.writer_may_capture`."""
        self.writer = (
            None
            if store is None
            else StoreWriter(
                store,
                name=f"npc-memory-{state.world}",
                capture=self._capture_atomically,
                wait_idle=state.tick.wait_idle,
            )
        )
        state.persistent = store is not None
        if store is not None:
            state.registry.listeners.append(self)  # a move changes the room a document holds
        if isinstance(store, JournalStore) and self.writer is not None:
            self._seed(store.versions())
        self._round: set[str] = set()
        self._round_parts: dict[str, int] = {}
        """The parts of the round's NPCs that changed (see :attr:`WorldState.changed`)."""
        self._round_players: dict[str, dict[str, None] | None] = {}
        """The players whose relationships with the round's NPCs were set (see
        :attr:`WorldState.relationship_players`)."""
        self._round_number = 0
        self._round_since: float | None = None
        self._round_active = False
        self._round_size = 0
        """Documents in the round the writer captures."""
        self._last_round_start = state.clock.now
        self._previous_now = state.clock.now
        self._since: float | None = None
        """Game time of the oldest change not yet taken into a round (conservative:
        the game time of the tick before the one that first saw it)."""
        self._unsettled: deque[_Unsettled] = deque()
        """Rounds taken and not yet on disk, oldest first."""
        self._marks: _Dates = _Dates()
        """When the keys of :attr:`WorldState.changed` were first marked."""
        self._undated = False
        """Whether keys were made dirty again since the last round began (a failed
        write), so :attr:`_marks` do not date every key of the next round."""
        self._failed_rounds: set[int] = set()
        """Rounds a batch of which failed (their released jobs stay saved as pending)."""
        self._capture_cost = 0.0
        """Recent wall seconds per capture (an exponential average), to stop in budget."""
        self._end_cost = END_COST
        """Seconds a round's end takes on the tick (a running estimate)."""
        self._end_reserved = False
        """Whether the next tick's budget has room set aside for the round's end."""
        self.failed_streak = 0
        """Store writes that failed since the last one that succeeded."""
        self.failures = 0
        """Store writes that failed since install."""
        self.last_error: str | None = None
        """What the latest failed write said."""
        self.disowned: str | None = None
        """Why this process stopped writing to the store (it lost the store's lock), if it did."""
        self.poll: Callable[[Store], None] | None = None
        """Run with the store on the writer thread after each round's (or save's) last
        batch, where game servers share the store (they poll it for work)."""
        self.claimed: Callable[[Document], None] | None = None
        """Called with each document claimed from a shared store, before it is served."""

    def _seed(self, versions: Mapping[str, int]) -> None:
        """Let the writer patch the loaded documents rather than rewrite them whole:
        capture each as loaded (before anything changes it) at its lsn."""
        assert self.writer is not None
        for key, document in self.state.stored.items():
            lsn = versions.get(key)
            if lsn and isinstance(document, NpcDocument):
                captured = capture_document(document)
                assert isinstance(captured, NpcCapture)
                self.writer.seed(key, lsn, captured)

    # ------------------------------------------------------------------ the registry's news

    def npc_added(self, npc: NpcHandle) -> None:
        """(Adding marks what it changes itself.)"""

    def npc_removed(self, npc: NpcHandle) -> None:
        """(Removing keeps the document: see :meth:`keep`.)"""

    def npc_moved(self, npc: NpcHandle, old: str | None, new: str | None) -> None:
        """``npc`` changed rooms: its document's room follows (no part of it changed)."""
        self.state.mark(npc.identity.key, 0)

    @property
    def round_active(self) -> bool:
        """Whether a snapshot round is being captured."""
        return self._round_active

    # ------------------------------------------------------------------ documents

    def document(self, key: str) -> Document | None:
        """The document of ``key`` now: live components, or the stored document."""
        handle = self.state.registry.live(key)
        if handle is None:
            return self.state.stored.get(key)
        return document_of(handle, self.state.clock.now)

    def keep(self, handle: Handle) -> None:
        """``handle`` leaves the live world: keep its document as stored, to restore it
        if its key is added again (and persist it with the next snapshot, which gives
        it up to other game servers sharing the store)."""
        key = handle.identity.key
        self.state.stored[key] = document_of(handle, self.state.clock.now)
        self.state.mark(key)
        if self.shared is not None:
            self.shared.release_on_write(key)

    def claim(self, key: str, kind: type[Document]) -> None:
        """With a store shared by game servers: own ``key`` and take its document as
        the store holds it now (another server may have changed it since loading)."""
        if self.shared is None:
            return
        document = self.shared.claim(key, "npc" if kind is NpcDocument else "player")
        if document is None:
            self.state.stored.pop(key, None)
        else:
            if self.claimed is not None:
                self.claimed(document)
            self.state.stored[key] = document

    def forget(self, key: str, actor: str = "plugin") -> None:
        """Delete ``key``'s document, live or stored, from memory and the store."""
        self.state.stored.pop(key, None)
        self.state.dirty.discard(key)
        self._round.discard(key)
        if self.writer is not None:
            self.state.deleted.add(key)
            self.audit("forget", key, actor)

    def audit(
        self,
        action: str,
        target: str,
        actor: str = "plugin",
        details: Mapping[str, Any] | None = None,
        *,
        counts: Mapping[str, int] | None = None,
    ) -> None:
        """Append an entry to the store's audit log (with the next batch)."""
        if self.writer is None:
            return
        entry = self.entry(action, target, actor, counts=counts, details=details)
        self.writer.submit(WriteBatch(audit=[entry]))

    def entry(
        self,
        action: str,
        target: str,
        actor: str,
        *,
        counts: Mapping[str, int] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> AuditEntry:
        """An audit entry dated now (game time and wall-clock UTC)."""
        return AuditEntry(
            action=action,
            target=target,
            actor=actor,
            game_time=self.state.clock.now,
            wall_time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            counts=dict(counts or {}),
            details=dict(details or {}),
        )

    def write_soon(
        self, keys: Collection[str], deletions: Collection[str], after: Callable[[Store], None]
    ) -> None:
        """Hand the documents of ``keys`` and the deletion of ``deletions`` to the
        writer, then ``after``; returns at once. The writer captures the documents
        where it may now (see :attr:`capture_on_writer`), else this thread does now."""
        if self.writer is None:
            return
        if writer_may_capture() if self._capture_choice is None else self._capture_choice:
            self.writer.submit(WriteBatch(keys=list(keys), deletions=sorted(deletions), after=after))
            return
        now = self.state.clock.now
        captures = [c for c in (self._capture(key, now) for key in keys) if c is not None]
        self.writer.submit(WriteBatch(captures=captures, deletions=sorted(deletions), after=after))

    def run_on_store(self, after: Callable[[Store], None], audit: Collection[AuditEntry] = ()) -> None:
        """Run ``after`` with the store on the writer thread once everything handed to
        it before is written, then append ``audit``; wait for it. Raises
        :class:`StoreError` if it failed."""
        if self.writer is None:
            return
        self._settle()
        self.writer.submit(WriteBatch(after=after, audit=list(audit)))
        self.writer.drain()
        failures = self._settle()
        if failures:
            raise StoreError(f"writing to {self.store!r} failed: {failures[0]}") from failures[0]

    def meta(self, snapshots: int) -> StoreMeta:
        """The store-wide metadata now."""
        state = self.state
        rng_state, rng_gauss = pack_rng_state(state.rng)
        gossip_state, gossip_gauss = pack_rng_state(state.gossip_rng)
        return StoreMeta(
            world=state.world,
            pack=state.pack.pack.name,
            seed=state.seed,
            clock=state.clock.now,
            rng_state=rng_state,
            rng_gauss=rng_gauss,
            gossip_rng_state=gossip_state,
            gossip_rng_gauss=gossip_gauss,
            snapshots=snapshots,
            pending_extractions=[j for j in self.pipeline.unsaved() if not self.excluded(j)],
            grounding=dict(self.pipeline.stats.grounding.reasons),
        )

    # ------------------------------------------------------------------ snapshot rounds

    def tick(self) -> None:
        """One tick's share of snapshot work: O(budget), never waits on the disk."""
        if self.writer is None:
            return
        started = time.perf_counter()
        state = self.state
        now = state.clock.now
        self._settle()
        if self.disowned is not None:  # another process may own the store: never write to it again
            return
        if self._since is None and (state.dirty or state.deleted):
            self._since = self._previous_now  # changed at or after the previous tick
        self._date_changes()
        self._previous_now = now
        budgets = state.pack.budgets
        if not self._round_active and now - self._last_round_start >= budgets.snapshot_interval:
            self._start_round(now)
            if self.capture_on_writer:  # the writer captures the round: hand it the keys
                keys, self._round = self._round, set()  # the writer owns the set now
                parts, self._round_parts = self._round_parts, {}
                players, self._round_players = self._round_players, {}
                self._submit_keys(keys, parts, players)
        if not self._round_active:
            return
        if self.capture_on_writer:
            if self.writer.captured_round >= self._round_number:
                # The metadata follows the captures: its pending jobs then cover every
                # conversation the captured documents show as ended and not yet applied.
                # It is made the tick after the captures are seen done, with room for
                # it set aside in that tick's budget.
                if not self._end_reserved:
                    self._end_reserved = True
                    state.tick.reserve(self._end_cost)
                else:
                    began = time.perf_counter()
                    self._submit_end([], now)
                    self._end_cost += (time.perf_counter() - began - self._end_cost) * END_COST_WEIGHT
            # once late, late until the round ends: its pace so far was measured while late
            writer = self.writer
            writer.late = self._round_active and (writer.late or self._late(now - self._last_round_start))
        elif self.writer.backlog < MAX_BACKLOG:
            self._capture_slice(now, started + budgets.snapshot_tick_ms / 1000.0)

    def save(self, after: Callable[[Store], None] | None = None, audit: Collection[AuditEntry] = ()) -> None:
        """Write everything dirty now and wait until it is on disk; raises
        :class:`StoreError` if any write failed (the changes stay queued). ``after``
        then runs with the store on the writer thread and ``audit`` is appended (see
        :class:`~npc_memory.store.writer.WriteBatch`)."""
        if self.writer is None:
            return
        self._settle()
        if self.disowned is not None:
            raise StoreOwnershipError(self.disowned)
        state = self.state
        now = state.clock.now
        if state.dirty or state.deleted:
            self._since = self._previous_now if self._since is None else self._since
        if self._round_active and not self.capture_on_writer:  # the round takes in everything dirty
            self._round |= state.dirty
            state.dirty = set()
            for key, mask in state.changed.items():
                self._round_parts[key] = self._round_parts.get(key, 0) | mask
            state.changed, state.relationship_players = {}, {}  # (the tick compares them all)
            if self._since is not None and self._round_since is not None:
                self._round_since = min(self._round_since, self._since)
                self._unsettled[-1].since = self._round_since
            self._since = None
        else:  # (a round the writer is capturing goes on; this one follows it)
            if self._round_active and self.capture_on_writer:
                # The writer reads the parts marked since its round began while it
                # captures: they must stay where they are until it is done.
                self.writer.drain()
            self._start_round(now)
        keys, self._round = self._round, set()
        parts, self._round_parts = self._round_parts, {}
        players, self._round_players = self._round_players, {}
        if self.capture_on_writer:  # this thread waits below: the writer sees one instant
            self._submit_end([], now, keys, parts, players, after=after, audit=audit)
        else:
            captures = [c for c in map(self._capture, keys, [now] * len(keys)) if c is not None]
            self._submit_end(captures, now, after=after, audit=audit)
        self._last_round_start = now
        self.writer.drain()
        failures = self._settle()
        if failures:
            raise StoreError(f"saving to {self.store!r} failed: {failures[0]}") from failures[0]

    def oldest_unsaved(self, now: float) -> float:
        """Game seconds since the oldest change not yet durably written (0.0: the store
        holds everything). Conservative by up to one tick: a change is dated to the
        tick before the one that first saw it."""
        self._settle()
        return self.unsaved(now)

    def unsaved(self, now: float) -> float:
        """:meth:`oldest_unsaved` without taking in the rounds the writer finished since
        the last tick (only how far into its round it is): only reads, so another thread
        (a metrics exporter) may call it. The tick puts a date in a round before it
        clears it where it was, so this reads those places in the other order."""
        times: list[float] = [] if self._since is None else [self._since]
        progress = self.writer.round_durable if self.writer is not None else (0, 0)
        for entry in list(self._unsettled):
            since: float | None = entry.since
            if entry.dates is not None and entry.round == progress[0]:
                since = entry.dates.first_after(progress[1])  # its first documents are on disk
            if since is not None:
                times.append(since)
        return max(0.0, now - min(times)) if times else 0.0

    def drain(self) -> None:
        """Wait until the writer has written every batch handed to it."""
        if self.writer is not None:
            self.writer.drain()

    @property
    def in_flight(self) -> int:
        """Batches handed to the writer and not yet written."""
        return 0 if self.writer is None else self.writer.in_flight

    @property
    def backlog(self) -> int:
        """Captured documents handed to the writer and not yet written."""
        return 0 if self.writer is None else self.writer.backlog

    def close(self) -> None:
        """Stop the writer (after what it holds is written) and close the store."""
        if self.writer is not None:
            self.writer.close()
        if self.store is not None:
            self.store.close()

    def _start_round(self, now: float) -> None:
        state = self.state
        if self._capture_choice is None:
            self.capture_on_writer = writer_may_capture()
        self.snapshots += 1
        self._round_number = self.snapshots
        self._date_changes()
        dates = None if self._undated else self._marks
        self._marks, self._undated = _Dates(), False
        self._round, state.dirty = state.dirty, set()  # O(1): the round owns the old set
        self._round_parts, state.changed = state.changed, {}
        self._round_players, state.relationship_players = state.relationship_players, {}
        self._round_since = now if self._since is None else self._since
        released = self.pipeline.released_total
        self._unsettled.append(_Unsettled(self._round_number, self._round_since, released, dates=dates))
        self._since = None  # (after: see unsaved)
        self._round_active = True
        self._last_round_start = now

    def _date_changes(self) -> None:
        """Date the keys first marked since the last look (see :attr:`_since`): O(1)."""
        self._marks.date(len(self.state.changed), self._previous_now)

    def _capture_slice(self, now: float, deadline: float) -> None:
        """Capture round documents until the next one would pass ``deadline`` (judged
        by the recent cost of a capture) or the count cap; at least one per tick."""
        limit = self.state.pack.budgets.snapshot_documents_per_tick
        captures: list[Capture] = []
        pending = self._round
        clock = time.perf_counter
        start = at = clock()
        taken = 0
        while pending and taken < limit:
            if taken and at + self._capture_cost > deadline:
                break
            captured = self._capture(pending.pop(), now)
            taken += 1
            if captured is not None:
                captures.append(captured)
            at = clock()
        if taken:
            self._capture_cost += ((at - start) / taken - self._capture_cost) * 0.25
        if pending:
            self._submit(captures)
        else:
            self._submit_end(captures, now)

    def _capture(self, key: str, now: float) -> Capture | None:
        """Capture ``key``'s document on the thread that changes the components."""
        handle = self.state.registry.live(key)
        if handle is None:
            stored = self.state.stored.get(key)
            return None if stored is None else capture_document(stored)
        return capture_handle(handle, now)

    def _capture_atomically(
        self, key: str, parts: int, players: Players, base: NpcCapture | None
    ) -> Capture | None:
        """Capture ``key``'s document on the writer thread (see
        :func:`~npc_memory.store.records.capture_atomically`): of a live NPC only
        ``parts``, the rest taken from ``base``; with the players whose relationship
        was set since ``base`` when ``players`` (the round's) and the marks since tell."""
        state = self.state
        handle = state.registry.live(key)
        if handle is not None:
            # Parts changed since the round began count too: a capture shows the whole
            # document at one instant, never a later change to one part beside an
            # earlier state of another (a conversation marked extracted without the
            # memories it gave). Checked again after copying, in case the game ran.
            parts |= state.changed.get(key, 0)
            while True:
                captured = capture_atomically(handle, state.clock.now, parts, base)
                later = state.changed.get(key, 0) & ~parts
                if not later:
                    break
                parts |= later
            if players is not None and base is not None and isinstance(captured, NpcCapture):
                # Read after the copy: a record it holds was marked before it was set.
                since = state.relationship_players.get(key, {})  # None: not known
                if since is not None:
                    captured.relationship_players = (*players, *(p for p in tuple(since) if p not in players))
            return captured
        stored = self.state.stored.get(key)
        if stored is None:
            return None
        # A stored document's containers become live ones if its key is added again
        # meanwhile: copy them atomically too.
        captured = capture_atomically(handle_of(stored), stored.saved_at)
        if isinstance(captured, NpcCapture) and isinstance(stored, NpcDocument):
            captured.archetype = stored.archetype
        return captured

    def _submit(self, captures: list[Capture]) -> None:
        assert self.writer is not None
        deletions = sorted(self.state.deleted)
        self.state.deleted.clear()
        if captures or deletions:
            self.writer.submit(
                WriteBatch(
                    captures=captures, deletions=deletions, round=self._round_number, since=self._round_since
                )
            )

    def _late(self, running: float) -> bool:
        """Whether the round the writer captures, ``running`` game seconds since it
        started, is late: past its interval, or, once ``LATE_CHECK`` of it has passed,
        on course to take more than ``LATE_PROJECTED`` of it at the pace so far
        (:attr:`StoreWriter.round_progress`)."""
        assert self.writer is not None
        interval = self.state.pack.budgets.snapshot_interval
        if running > interval:
            return True
        if running < LATE_CHECK * interval:
            return False
        round_number, taken = self.writer.round_progress
        done = taken if round_number == self._round_number else 0
        return running * self._round_size > LATE_PROJECTED * interval * done

    def _submit_keys(
        self, keys: Collection[str], parts: Mapping[str, int], players: Mapping[str, Players]
    ) -> None:
        """Hand the round's ``keys`` to the writer to capture; the round stays active
        until it has, then :meth:`tick` submits the metadata."""
        assert self.writer is not None
        self._round_size = len(keys)
        deletions = sorted(self.state.deleted)
        self.state.deleted.clear()
        self.writer.submit(
            WriteBatch(
                keys=keys, parts=parts, players=players, deletions=deletions, round=self._round_number,
                since=self._round_since, captures_round=True,
            )
        )
        self._round_active = True

    def _submit_end(
        self,
        captures: list[Capture],
        now: float,
        keys: Collection[str] = (),
        parts: Mapping[str, int] | None = None,
        players: Mapping[str, Players] | None = None,
        *,
        after: Callable[[Store], None] | None = None,
        audit: Collection[AuditEntry] = (),
    ) -> None:
        """Submit the last batch of the current round (captures made here, or ``keys``
        for the writer to capture, of their changed ``parts``), with the metadata."""
        assert self.writer is not None
        deletions = sorted(self.state.deleted)
        self.state.deleted.clear()
        self._date_changes()
        self.writer.submit(
            WriteBatch(
                captures=captures,
                keys=keys,
                parts={} if parts is None else parts,
                players={} if players is None else players,
                deletions=deletions,
                meta=self.meta(self._round_number),
                after=after if after is not None else self.poll,
                audit=list(audit),
                round=self._round_number,
                since=self._round_since,
            )
        )
        self._round_active = False
        self._end_reserved = False  # (a save() may end the round first)
        self.writer.late = False

    def _settle(self) -> list[Exception]:
        """Take in what the writer finished: failed batches go back to dirty (dated as
        old as their round), rounds on disk stop counting as unsaved."""
        if self.writer is None:
            return []
        durable = self.writer.durable_round  # read first: failures before it are queued by now
        errors = []
        for batch, error in self.writer.take_failures():
            log.error("snapshot write to %r failed (will retry): %s", self.store, error)
            self.state.dirty.update(c.key for c in batch.captures)
            self.state.dirty.update(batch.keys)
            self.state.deleted.update(batch.deletions)
            if batch.since is not None:
                self._since = batch.since if self._since is None else min(self._since, batch.since)
            errors.append(error)
            self._failed_rounds.add(batch.round)
            self.failed_streak += 1
            self.failures += 1
            self.last_error = str(error)
            self._undated = True  # (dirty again, though marked long ago)
            if isinstance(error, StoreLostError):  # the store holds nothing: everything is written again
                self._mark_everything()
            if isinstance(error, StoreOwnershipError) and self.disowned is None:
                self.disowned = str(error)
                where = str(getattr(self.store, "path", self.store))
                lost = StoreOwnershipLost(game_time=self.state.clock.now, store=where, error=str(error))
                self.state.publish(lost)
            self.state.publish(SnapshotFailed(game_time=self.state.clock.now, error=str(error)))
        while self._unsettled and self._unsettled[0].round <= durable and not (
            self._round_active and self._unsettled[0].round == self._round_number
        ):
            settled = self._unsettled.popleft()
            number, released = settled.round, settled.released
            if number in self._failed_rounds:
                self._failed_rounds.discard(number)
            else:  # every job applied before the round began is in a document on disk
                self.pipeline.forget_released(released)
            self.rounds_completed += 1
            if not errors:
                self.failed_streak = 0
        return errors

    def _mark_everything(self) -> None:
        """Mark every NPC and player, live or stored, to be written (once, after the
        store lost what it held)."""
        state = self.state
        state.dirty.update(state.registry.npc_keys(), state.registry.player_keys(), state.stored)
        self._undated = True

    def export(self) -> tuple[StoreMeta, list[Document]]:
        """The whole world as it is in memory now: metadata and every document (live
        and stored), sorted by key; for writing it elsewhere when its store fails."""
        state = self.state
        now = state.clock.now
        documents: dict[str, Document] = dict(state.stored)
        for key in (*state.registry.npc_keys(), *state.registry.player_keys()):
            handle = state.registry.live(key)
            if handle is not None:
                documents[key] = document_of(handle, now)
        return self.meta(self.snapshots), [documents[key] for key in sorted(documents)]
