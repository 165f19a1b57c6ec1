"""One background thread that turns snapshot batches into store writes, in order.

A batch names documents to write either as *captures* (made by the tick, see
:mod:`npc_memory.store.records`) or as *keys*, which this thread captures itself with
the ``capture`` function it was given (one sequence of C calls per document, atomic
under the GIL). Encoding, patches, file writes and fsyncs happen here, so a slow disk
or a large document never stalls a frame. This thread gives up the GIL at least every
``YIELD_EVERY`` seconds of work (``CONTENDED_YIELD_EVERY`` once it finds the game thread
busy), so a game thread waking up never waits for it long.

With a :class:`~npc_memory.store.base.JournalStore` the batches waiting in the queue
are written as one group, up to the first that completes a snapshot round (so a
round's end never waits for the next round's documents): each NPC captured before
becomes a patch against the capture this thread wrote last for it, anything else a
whole document; one journal append, one fsync. A round's documents are taken oldest
change first (the order of :attr:`WriteBatch.parts`) and made durable ``ROUND_GROUP``
at a time, each group with its own append and fsync, so a round's oldest changes are
on disk long before its end (:attr:`StoreWriter.round_durable` says how far).
While no batch waits, the store gets slices of upkeep time (checkpoints). Any other
:class:`~npc_memory.store.base.Store` gets whole documents through ``write``.

Failed batches are reported back to the tick (:meth:`StoreWriter.take_failures`)
rather than raised on this thread; the keys of a failed group are written whole next
time, since what reached the disk of it is unknown. When a group's append fails on a
disk error (full disk, a file-size limit), its documents are appended one at a time,
so one document that cannot be written never keeps the others (or the metadata) off
the disk. A store that lost its directory (:class:`StoreLostError`) forgets every
document it held: each is written whole again.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, takewhile
from typing import cast

from npc_memory.errors import StoreLostError
from npc_memory.store.base import JournalStore, Store
from npc_memory.store.documents import AuditEntry, Part, StoreMeta
from npc_memory.store.records import (
    Capture,
    Delete,
    MetaRecord,
    NpcCapture,
    Put,
    Record,
    diff,
    encode_capture,
    gil_enabled,
)
from npc_memory.window import SampleWindow

log = logging.getLogger("npc_memory.store")

MAINTENANCE_SLICE = 0.001
"""Seconds of store upkeep (checkpoint work) between two looks at the queue (and at
whether the game's tick is running)."""
YIELD_EVERY = 0.001
"""Seconds of work after which this thread lets other threads take the GIL: without
it a thread that wants the GIL waits the interpreter's switch interval (5 ms)."""
HANDOFF = 0.0001
"""Seconds this thread sleeps to give the GIL away. ``time.sleep(0)`` releases it and
takes it straight back, usually before a waiting thread has woken up; that thread then
waits a fresh switch interval, so a game thread could wait several milliseconds behind
yields that never handed over. A waiting thread wakes within tens of microseconds,
not always within 30 (a game thread then waited up to 5 ms in busy frames); within
this it does."""
CONTENDED = 0.001
"""Seconds a yield took beyond the shortest one seen (what the timer makes of
``HANDOFF``) after which another thread ran meanwhile and is taken to be busy: the
game thread, mid-frame, which this thread interrupted when the interpreter's switch
interval made it give the GIL up, and which now waits for it."""
CONTENDED_YIELD_EVERY = 0.0002
""":data:`YIELD_EVERY` after such a wait: a frame (and a tick about to start) waits for
this thread at most about this long."""
WINDOW = 600
"""Written groups whose latency :attr:`StoreWriter.latency` keeps."""
BASES_PER_PAUSE = 16
"""Captures let go of between two pauses once a group is on disk."""
KEYS_PER_PAUSE = 1024
"""Keys looked up between two pauses when sorting a batch's keys."""
ROUND_GROUP = 512
"""A round's documents made durable together (one journal append and fsync): a crash
mid-round keeps every group before the one being written."""


class _Durable:
    """Between two groups of a round's records: those before are to be made durable,
    and then ``round_durable`` is ``progress``."""

    __slots__ = ("progress",)

    def __init__(self, progress: tuple[int, int]) -> None:
        self.progress = progress


Base = tuple[int, NpcCapture]
"""A capture the store holds, at its lsn."""

Players = Mapping[str, None] | None
"""The players whose relationship with an NPC was set since the capture the store holds
(in the order first set), or ``None``: not known."""

Capturer = Callable[[str, int, Players, NpcCapture | None], Capture | None]
"""Captures the document of a key now: its parts (a :class:`Part` mask) changed since
the capture given (the one the store holds, ``None``: none), the rest taken from it;
the players whose relationship was set since, if known (see
:attr:`NpcCapture.relationship_players`)."""


@dataclass
class WriteBatch:
    """Deletions, then documents (``captures``, then ``keys`` to capture here), then
    metadata, then ``after`` (run with the store once those are durable), then audit
    entries, in that order. ``round`` is the snapshot round the batch belongs to (0:
    none); a batch with ``meta`` completes it. ``since`` is the game time of the oldest
    change the batch may carry."""

    captures: list[Capture] = field(default_factory=list)
    keys: Collection[str] = ()
    parts: Mapping[str, int] = field(default_factory=dict)
    """For each of ``keys``, the parts changed since it was last handed over (a
    :class:`Part` mask; a key not here: all of them). Its order is the order in which
    the keys are taken (keys not in it first): for a round, the order of their first
    change since the round before (see :attr:`StoreWriter.round_durable`)."""
    players: Mapping[str, Players] = field(default_factory=dict)
    """For each of ``keys`` whose relationships changed, the players whose relationship
    was set since it was last handed over, if known (a key not here: not known)."""
    deletions: list[str] = field(default_factory=list)
    meta: StoreMeta | None = None
    audit: list[AuditEntry] = field(default_factory=list)
    after: Callable[[Store], None] | None = None
    round: int = 0
    since: float | None = None
    captures_round: bool = False
    """The batch holds the rest of its round's documents (its metadata follows)."""


class StoreWriter:
    """Applies :class:`WriteBatch` es to ``store`` on a daemon thread."""

    def __init__(
        self,
        store: Store,
        name: str = "npc-memory",
        capture: Capturer | None = None,
        wait_idle: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.capture = capture
        """Captures the document of a key on this thread (for batches with ``keys``)."""
        self.wait_idle = wait_idle
        """Blocks (releasing the GIL) while the game's tick runs, for a bounded time:
        this thread then works between ticks and holds the interpreter at most one unit
        of work into a tick."""
        self.journal: JournalStore | None = store if isinstance(store, JournalStore) else None
        """``store`` when it keeps a journal (checked once: a protocol check costs
        microseconds, and upkeep asks between every slice)."""
        self._base: dict[str, Base] = {}
        """The capture last written for each NPC and its lsn (patches apply to it)."""
        self._queue: queue.Queue[WriteBatch | None] = queue.Queue()
        self._failures: queue.SimpleQueue[tuple[WriteBatch, Exception]] = queue.SimpleQueue()
        self._submitted = 0  # captures submitted (tick thread only)
        self._written = 0  # captures written or failed (writer thread only)
        self.round_progress = (0, 0)
        """The snapshot round whose documents this thread is taking (the last batch
        that holds the rest of a round, :attr:`WriteBatch.captures_round`) and how many
        of them it has taken so far: the round's progress while its group is written."""
        self.durable_round = 0
        """The last snapshot round whose completing batch is on disk."""
        self.round_durable = (0, 0)
        """How much of a round's documents are on disk while its group is written:
        ``(round, n)``, the documents of the first ``n`` entries of its batch's
        :attr:`WriteBatch.parts` (in order; entries whose key the batch does not hold
        count too) are durable. Set as each ``ROUND_GROUP`` lands, only for batches
        whose keys are all in ``parts`` (set to ``(round, len(parts))`` when the whole
        group is)."""
        self._round_taken: tuple[int, int] | None = None
        """``round_durable`` once the group being appended is on disk."""
        self.captured_round = 0
        """The last snapshot round whose documents this thread has captured (and
        written, or failed to)."""
        self.late = False
        """Set by the tick while a round will not end in time: this thread then yields
        the GIL only as often as the interpreter makes it."""
        self._yielded = time.perf_counter()
        self._contended = False
        """Whether this thread's last yield took ``CONTENDED`` longer than the shortest
        (see :meth:`_hand_back`)."""
        self._shortest_yield = math.inf
        self._yields = gil_enabled()
        """Whether there is a GIL to give away (a free-threaded interpreter has none)."""
        self.bytes_written = 0
        """Journal bytes appended by this writer."""
        self.latency = SampleWindow(WINDOW)
        """Seconds per written group of batches (the last ``WINDOW``), appends and fsyncs
        included (a round's documents: all their appends)."""
        self.failed_batches = 0
        """Batches that failed to write, ever."""
        self._thread = threading.Thread(target=self._run, name=f"{name}-store-writer", daemon=True)
        self._thread.start()

    def seed(self, key: str, lsn: int, capture: NpcCapture) -> None:
        """Patch ``key``'s next version against ``capture`` (the document the store holds
        at ``lsn``); call before submitting anything."""
        self._base[key] = (lsn, capture)

    @property
    def in_flight(self) -> int:
        """Batches submitted and not yet written."""
        return self._queue.unfinished_tasks

    @property
    def backlog(self) -> int:
        """Captured documents submitted and not yet written."""
        return self._submitted - self._written

    def submit(self, batch: WriteBatch) -> None:
        """Queue ``batch``; returns at once."""
        if not self._thread.is_alive():
            raise RuntimeError("the store writer is closed")
        self._submitted += len(batch.captures) + len(batch.keys)
        self._queue.put(batch)

    def drain(self) -> None:
        """Wait until every submitted batch has been written (or has failed)."""
        self._queue.join()

    def take_failures(self) -> list[tuple[WriteBatch, Exception]]:
        """Batches that failed since the last call, with their errors."""
        failures = []
        while True:
            try:
                failures.append(self._failures.get_nowait())
            except queue.Empty:
                return failures

    def close(self) -> None:
        """Write what is queued, then stop the thread (idempotent)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        upkeep = self.journal is not None
        while True:
            try:
                if upkeep:
                    batch = self._queue.get_nowait()
                else:
                    batch = self._queue.get()
                    self._hand_back()
            except queue.Empty:
                self._pause()
                upkeep = self._maintain()
                continue
            group = [batch]
            # What is queued goes in one group (one fsync), up to the first batch that
            # completes a round: that round is durable without waiting for the next.
            while batch is not None and batch.meta is None:
                try:
                    batch = self._queue.get_nowait()
                except queue.Empty:
                    break
                group.append(batch)
            batches = [b for b in group if b is not None]
            if batches:
                self._write(batches)
            for _ in group:
                self._queue.task_done()
            if group[-1] is None:
                return
            # A slice of upkeep after each write too: a writer behind on its rounds
            # never finds its queue empty, and the journal must not grow meanwhile.
            upkeep = self.journal is not None and self._maintain()

    def _maintain(self) -> bool:
        assert self.journal is not None
        try:
            return self.journal.maintain(time.perf_counter() + MAINTENANCE_SLICE, self._pause)
        except Exception:  # a checkpoint that fails is retried after the next write
            log.exception("checkpoint of %r failed; the journal keeps everything meanwhile", self.store)
            return False

    def _write(self, batches: list[WriteBatch]) -> None:
        updates: dict[str, Base | None] = {}
        started = time.perf_counter()
        self._round_taken = None
        try:
            if self.journal is not None:
                self._append(batches, updates)
            else:
                self._write_whole(batches)
            for batch in batches:
                if batch.after is not None:
                    batch.after(self.store)
                for entry in batch.audit:
                    self.store.append_audit(entry)
        except OSError as exc:  # a disk error: what can be written is, one document at a time
            self._forget(batches)
            if self.journal is not None:
                self._write_each(batches, exc)
            else:
                self._fail(batches, exc)
        except Exception as exc:  # reported to the tick thread, which retries
            if isinstance(exc, StoreLostError):
                self._base.clear()  # the store holds nothing this thread wrote
                self.round_durable = (0, 0)  # not even the groups just appended
            self._forget(batches)
            self._fail(batches, exc)
        else:
            # Replacing a base frees the capture it held (thousands of records a round):
            # paused like the captures, so a tick never waits for a whole round's worth.
            for count, (key, base) in enumerate(updates.items(), 1):
                if base is None:
                    self._base.pop(key, None)
                else:
                    self._base[key] = base
                if count % BASES_PER_PAUSE == 0:
                    self._pause()
            self.durable_round = max([self.durable_round, *(b.round for b in batches if b.meta is not None)])
        finally:
            self.latency.add(time.perf_counter() - started)
            self._written += sum(len(b.captures) + len(b.keys) for b in batches)
            ended = [b.round for b in batches if b.meta is not None or b.captures_round]
            self.captured_round = max([self.captured_round, *ended])

    def _append(self, batches: list[WriteBatch], updates: dict[str, Base | None]) -> None:
        """Append the records of ``batches``, one journal append (and fsync) per group
        of a round's documents (see :data:`ROUND_GROUP`), the rest in the last."""
        store = self.journal
        assert store is not None
        marks: list[_Durable] = []

        def record(item: Record | _Durable) -> bool:
            if isinstance(item, _Durable):
                marks.append(item)
                return False
            return True

        stream = self._records(batches, updates)
        while True:
            seen = len(marks)
            self.bytes_written += store.append(cast(Iterator[Record], takewhile(record, stream)))
            if len(marks) == seen:  # the stream ended: everything is on disk
                break
            self.round_durable = marks[-1].progress
        if self._round_taken is not None:
            self.round_durable, self._round_taken = self._round_taken, None

    def _forget(self, batches: list[WriteBatch]) -> None:
        """Write the keys of ``batches`` whole next time (what reached the disk is unknown)."""
        for batch in batches:
            for key in (*(c.key for c in batch.captures), *batch.keys, *batch.deletions):
                self._base.pop(key, None)

    def _fail(self, batches: list[WriteBatch], error: Exception) -> None:
        for batch in batches:
            self.failed_batches += 1
            self._failures.put((batch, error))

    def _write_each(self, batches: list[WriteBatch], error: Exception) -> None:
        """Append each deletion, document and metadata of ``batches`` on its own, after
        a group failed on a disk error; report what still fails (with its round)."""
        store = self.journal
        assert store is not None
        for batch in batches:
            failed: list[str] = []
            last = error
            try:
                if batch.deletions:
                    deletions = [Delete(lsn=store.reserve_lsn(), key=key) for key in batch.deletions]
                    self.bytes_written += store.append(deletions)
            except Exception as exc:
                self._fail([batch], exc)
                continue
            for capture in self._captures(batch, {}):
                encoded = encode_capture(capture)
                lsn = store.reserve_lsn()
                try:
                    self.bytes_written += store.append(
                        [Put(lsn=lsn, key=capture.key, kind=encoded.kind, data=encoded.data)]
                    )
                except Exception as exc:
                    failed.append(capture.key)
                    last = exc
                    continue
                if isinstance(capture, NpcCapture):
                    self._base[capture.key] = (lsn, capture)
            written_meta = lost = False
            if batch.meta is not None:
                try:
                    self.bytes_written += store.append([MetaRecord(lsn=store.reserve_lsn(), meta=batch.meta)])
                    written_meta = True
                except Exception as exc:
                    last, lost = exc, True
            try:
                for entry in batch.audit:
                    store.append_audit(entry)
            except Exception as exc:
                last, lost = exc, True
            if failed or lost:
                self._fail([WriteBatch(keys=failed, round=batch.round, since=batch.since)], last)
            if written_meta:
                self.durable_round = max(self.durable_round, batch.round)

    def _records(
        self, batches: list[WriteBatch], updates: dict[str, Base | None]
    ) -> Iterator[Record | _Durable]:
        """The journal records of ``batches``, in order (generated while the store
        writes, so encoding and writing interleave), with a :class:`_Durable` mark
        after each ``ROUND_GROUP`` of a round's documents."""
        store = self.journal
        assert store is not None
        for batch in batches:
            for key in batch.deletions:
                updates[key] = None
                yield Delete(lsn=store.reserve_lsn(), key=key)
            for capture in self._taken(batch, updates, marks=True):
                if isinstance(capture, _Durable):
                    yield capture
                    continue
                key = capture.key
                base = updates[key] if key in updates else self._base.get(key)
                if not isinstance(capture, NpcCapture):
                    encoded = encode_capture(capture)
                    yield Put(lsn=store.reserve_lsn(), key=key, kind=encoded.kind, data=encoded.data)
                    updates[key] = None
                    continue
                lsn = store.reserve_lsn()
                if base is None:
                    encoded = encode_capture(capture)
                    yield Put(lsn=lsn, key=key, kind=encoded.kind, data=encoded.data)
                else:
                    patch = diff(base[1], capture, lsn=lsn, base_lsn=base[0])
                    if patch is None:
                        continue  # nothing persisted changed: the store holds it already
                    yield patch
                updates[key] = (lsn, capture)
            if batch.meta is not None:
                yield MetaRecord(lsn=store.reserve_lsn(), meta=batch.meta)

    def _captures(self, batch: WriteBatch, updates: Mapping[str, Base | None]) -> Iterator[Capture]:
        """The batch's captures, then captures of its keys made now (see :meth:`_taken`)."""
        for item in self._taken(batch, updates, marks=False):
            assert not isinstance(item, _Durable)
            yield item

    def _taken(
        self, batch: WriteBatch, updates: Mapping[str, Base | None], *, marks: bool
    ) -> Iterator[Capture | _Durable]:
        """The batch's captures, then captures of its keys made now (of the parts
        changed since what the store holds: ``updates`` pending in this group, else
        what is on disk), in the order of :attr:`WriteBatch.parts` (keys not in it
        first); pauses between documents (see :meth:`_pause`). With ``marks``, a
        round's keys (all of them in ``parts``) are followed every ``ROUND_GROUP``
        by a :class:`_Durable` mark."""
        counted = batch.round if batch.captures_round else 0
        taken = 0
        for capture in batch.captures:
            self._pause()
            if counted:
                taken += 1
                self.round_progress = (counted, taken)
            yield capture
        if not batch.keys:
            return
        assert self.capture is not None, "a batch of keys needs a writer with a capture function"
        keys, parts, players, bases = batch.keys, batch.parts, batch.players, self._base
        if not isinstance(keys, set | frozenset | dict):
            keys = dict.fromkeys(keys)  # (in their order)
        unordered = self._unordered(keys, parts)
        grouped = marks and counted > 0 and not unordered
        ordered = ((position, key) for position, key in enumerate(parts) if key in keys)
        for position, key in chain(((0, key) for key in unordered), ordered):
            self._pause()
            if counted:
                if grouped and taken and taken % ROUND_GROUP == 0:
                    yield _Durable((counted, position))
                taken += 1
                self.round_progress = (counted, taken)
            base = updates[key] if key in updates else bases.get(key)
            captured = self.capture(
                key, parts.get(key, Part.ALL), players.get(key), None if base is None else base[1]
            )
            if captured is not None:
                yield captured
        if grouped:
            self._round_taken = (counted, len(parts))

    def _unordered(self, keys: Collection[str], parts: Mapping[str, int]) -> list[str]:
        """Those of ``keys`` that ``parts`` does not order (none, for a round's keys
        unless a write of them failed); pauses as it goes."""
        unordered: list[str] = []
        for count, key in enumerate(keys, 1):
            if key not in parts:
                unordered.append(key)
            if count % KEYS_PER_PAUSE == 0:
                self._pause()
        return unordered

    def _pause(self) -> None:
        """Between two pieces of work: wait while a tick runs, and give the GIL away
        once this thread has held it ``YIELD_EVERY`` (``CONTENDED_YIELD_EVERY`` after a
        yield that found the game thread busy; only when the interpreter makes it
        while a round is late)."""
        if self.wait_idle is not None and self.wait_idle():
            self._hand_back()
            return
        if not self._yields:
            return
        if self.late:
            # The interpreter's switch interval alone shares the GIL with a busy game
            # thread: a yield here would come right after this thread won the GIL back
            # (the interval counts from the last yield, not from that) and cost it a
            # whole switch interval of waiting for a few microseconds of work.
            return
        every = CONTENDED_YIELD_EVERY if self._contended else YIELD_EVERY
        if time.perf_counter() - self._yielded >= every:
            self._hand_back()

    def _hand_back(self) -> None:
        """Give the GIL to a thread that waits for it (see :data:`HANDOFF`); also right
        after a wait. This thread comes out of a wait holding the wait's lock until it
        has the GIL again; a game thread that needs that lock meanwhile (to mark a tick
        running, to hand over a batch) gives up the GIL to this thread and, without
        this, waits for it to reach its next pause or the interpreter's switch interval
        (5 ms): a tick that took 5 ms."""
        if not self._yields:
            return
        before = time.perf_counter()
        time.sleep(HANDOFF)
        self._yielded = time.perf_counter()
        took = self._yielded - before
        self._shortest_yield = min(self._shortest_yield, took)
        self._contended = took - self._shortest_yield > CONTENDED

    def _write_whole(self, batches: list[WriteBatch]) -> None:
        for batch in batches:
            if batch.deletions:
                self.store.delete(batch.deletions)
            captures = list(self._captures(batch, {}))
            if captures or batch.meta is not None:
                self.store.write([encode_capture(c) for c in captures], batch.meta)
