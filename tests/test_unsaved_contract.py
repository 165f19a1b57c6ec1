"""The promise of ``plugin.storage.unsaved_seconds()``, held to while snapshot rounds are half
written.

``unsaved_seconds()`` is the game seconds since the oldest change not yet durably in the
store. So at any instant every change made before ``horizon = clock.now -
unsaved_seconds()`` is on disk: a crash right then, and loading the store gives it back.
That covers ended conversations too: their memories are in the NPC's document, or their
extraction job is pending (in the NPC's document, and in the store's metadata) and is
applied, exactly once, after a reload.

The horizon itself is excluded: a change made at game time ``t`` is ``now - t`` seconds
old, so the oldest unsaved change sits exactly at the horizon (``unsaved_seconds()`` is 0
right after a change made this instant, and 1 one tick later: see
``tests/test_persistence.py::test_the_oldest_unsaved_change_is_known``). Only changes
strictly before the horizon are promised; the freezes count, for information, unsaved
changes that sit right on it.

How the writer is frozen, without mocking the project: the store is the real
:class:`TinyDBStore`, subclassed so that its journal ``append`` (the writer thread's only
way to the disk for snapshot rounds) stops, when the test asks, before a chosen record of
a chosen append, until the test lets it go. While it waits nothing reaches the disk and
the game keeps ticking and changing the world. The test then reads the clock and the
answer, copies the store directory (what a crash would leave: a killed process loses
nothing it wrote, fsynced or not), lets the writer go, and loads the copy. The freezes
fall inside a round's groups of documents, between them, before its metadata and right
after it, each after a while in which the game waits for the writer (so the dates of the
next round's changes are as tight as they get) or straight after the last freeze.

What is checked at each freeze: every change made before the horizon is in the copy,
every conversation ended before it comes back exactly once after a reload (for a few
freezes), and, so that the check is known to have had something to catch, that the copy
lacked changes the live world had made and held some of a round whose metadata was not on
disk yet ("mid-round"), and that at times the oldest change it lacked sat right on the
horizon. After the run, ``save()`` brings ``unsaved_seconds()`` to 0 and the store holds
every change (nothing the test counts is removed by the pack's rules).
"""

from __future__ import annotations

import random
import shutil
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import esper
import pytest

import npc_memory
from npc_memory.errors import StoreCorruptError
from npc_memory.services import persistence
from npc_memory.store import NpcDocument, StoreContents, TinyDBStore
from npc_memory.store.records import MetaRecord, Record

from .conftest import tick


@pytest.fixture(autouse=True)
def writer_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread captures each round, in groups, as on Python 3.12+ or beside a
    running FrameCollector (the tests stop it between groups)."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)

WORLD = "unsaved"
SEED = 20261201
NPCS = 1200
"""Enough that a round, with nearly every NPC dirty, carries over a thousand documents,
written over many ticks (and, by a writer that appends a round's documents in groups of
a few hundred, in several groups)."""
ROOMS = 8
"""Rooms the NPCs live in, as many in each; one of them sees something every tick."""
PLAYERS = 4
CONVERSERS = 12
"""NPCs (the first ones) that hold the conversations."""
PHASE = 400
"""Ticks of one phase of the village's life: conversations in its first ``TALKING``
ticks, then none."""
TALKING = 60
TALK_EVERY = 8
"""Ticks between two conversations with the players while they talk."""
TRAVELLERS = ("p4", "p5", "p6", "p7")
"""Players who each talk once a phase (``TRAVEL_EVERY`` ticks apart from its start),
leave the world at once and come back ``AWAY`` ticks later: meanwhile the extraction of
their conversation waits for them, saved as pending in the NPC's document and in the
metadata."""
TRAVEL_EVERY = 50
AWAY = 200
TRAVEL_TICKS = range(0, TRAVEL_EVERY * len(TRAVELLERS), TRAVEL_EVERY)
NOTES_PER_TICK = 12
ADJUSTS_PER_TICK = 8
INTERVAL = int(npc_memory.load_pack("village").budgets.snapshot_interval)
"""Game seconds between two snapshot rounds (60), as many ticks."""
MAX_TICKS = 1200
"""Ticks of one game second (``esper.process(1/60)`` at ``time_scale`` 60) at most:
twenty snapshot intervals of the village pack (``snapshot_interval`` 60)."""
FREEZES = 24
"""Freezes wanted (as many land as ``MAX_TICKS`` leaves time for)."""
LANDED_AT_LEAST = 4
"""Freezes whose copy must be judged (a copy that does not load is not). Runs land 6–10
on a 2-core machine: how many depends on the writer's throughput, since ``play`` never
idles."""
ALL = 1 << 30
BEFORE = (0, 0, 0, 1, 40, 300, ALL, ALL, None, None)
"""Records an append hands the journal before the writer stops (``ALL``: all of them,
before the fsync; ``None``: all but a round's metadata)."""
GAPS = (0, 1, 2, 3)
"""Which of the next appends the writer stops in (a round of 1,200 documents and more
makes three of documents, then one of metadata)."""
EXTRA_TICKS = (0, 0, 1, 3, 12, 65)
"""Ticks the game plays while the writer is stopped, before the copy (65: past the next
round's start)."""
MID_ROUND_AT_LEAST = 3
RELOADS = 2
"""Freezes whose copy is also installed and played until its extractions are applied."""
WAIT = 60.0
"""Real seconds either thread waits for the other before the test fails loudly."""
LINE = "You saved my life, thank you friend"
"""A line the rules turn into exactly one memory (with a unique suffix, so no two
conversations leave the same memory: an equal one would reinforce the first)."""


# ---------------------------------------------------------------------- the frozen writer


class GateStore(TinyDBStore):
    """The real TinyDB store; its journal append can be told to stop, in the first
    append numbered ``at`` or later, before its ``before``-th record (after its last
    one, before the fsync, if it has fewer), or with ``before=None`` before the first
    metadata record (a round's end) of an append numbered ``at`` or later; and to wait
    there until released. The writer thread that appends also folds the journal into
    the document files (checkpoints) and writes the audit log, so while it waits no
    file changes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends = 0
        """Journal appends begun (counted on the writer thread)."""
        self.frozen = threading.Event()
        """Set while the writer waits inside an append."""
        self.resumed = threading.Event()
        """Set once the writer has left the wait."""
        self.where = ""
        """Where the writer waited last: the append and the records it had handed on."""
        self.overstayed = False
        """Whether a freeze outlived ``WAIT`` (the writer then went on by itself)."""
        self._release = threading.Event()
        self._plan: tuple[int, int | None] | None = None

    def freeze(self, at: int, before: int | None) -> None:
        self.resumed.clear()
        self._plan = (at, before)

    def release(self) -> None:
        """Let a frozen writer go (and never freeze it again unless told)."""
        self._plan = None
        self._release.set()

    def append(self, records: Iterable[Record]) -> int:
        number = self.appends
        self.appends += 1
        plan = self._plan
        if plan is not None and number >= plan[0]:
            records = self._stopping(records, number, plan[1])
        return super().append(records)

    def _stopping(self, records: Iterable[Record], number: int, before: int | None) -> Iterator[Record]:
        stream = iter(records)
        taken = 0
        while True:
            if taken == before:  # before pulling the next record (pulling captures its document)
                self._wait(number, taken)
            try:
                record = next(stream)
            except StopIteration:
                if before is not None and taken < before:
                    self._wait(number, taken)
                return
            if before is None and isinstance(record, MetaRecord):
                self._wait(number, taken, " (a round's metadata)")
            yield record
            taken += 1

    def _wait(self, number: int, taken: int, what: str = "") -> None:
        if self._plan is None:  # released meanwhile, or a second stop in one append
            return
        self._plan = None
        self.where = f"append {number} before record {taken}{what}"
        self.frozen.set()
        released = self._release.wait(WAIT)
        self._release.clear()
        self.frozen.clear()
        self.overstayed |= not released
        self.resumed.set()


# ---------------------------------------------------------------------- the changing world


@dataclass(frozen=True)
class Change:
    """One change made through the facade, at game time ``at`` (between ticks: the
    clock of the last tick)."""

    at: float
    kind: str
    """"memory" (``what``: its content), "fact" (an observation; ``what``: its content,
    learned by each of ``witnesses``), "relationship" (``version``: the relationship's
    version right after the change) or "conversation" (``what``: its id)."""
    npc: str
    player: str | None = None
    what: str = ""
    version: int = 0
    witnesses: tuple[str, ...] = ()


def npc_key(i: int) -> str:
    return f"n{i % NPCS:04d}"


ARCHETYPES = ("farmer", "merchant", "guard", "innkeeper", "priest", "healer", "bard", "blacksmith")


class Village:
    """The live world and every change made to it. Tick ``t``'s changes and the tick
    itself depend on ``t`` only, so the world is the same however the writer's freezes
    fall."""

    def __init__(self, plugin: npc_memory.MemoryPlugin) -> None:
        self.plugin = plugin
        self.changes: list[Change] = []
        for i in range(NPCS):
            plugin.add_npc(key=npc_key(i), archetype=ARCHETYPES[i % len(ARCHETYPES)], room=f"room{i % ROOMS}")
        for j in range(PLAYERS):
            plugin.add_player(key=f"p{j}", name=f"Player{j}", faction="adventurers", room="room0", consent=True)
        for j, key in enumerate(TRAVELLERS):
            plugin.add_player(key=key, name=f"Traveller{j}", faction="adventurers", room="room0", consent=True)
        self.ticks = 0

    def talk(self, npc: str, player: str) -> None:
        """A conversation the rules turn into one memory, ended (its extraction queued)."""
        plugin, t = self.plugin, self.ticks
        name = plugin.player(player).identity.name
        plugin.say(npc, player, name, "Good morning to you")  # small talk: no memory
        plugin.say(npc, player, name, f"{LINE} (t{t})")
        ended = plugin.end_conversation(npc, player)
        assert ended is not None and ended.status == "queued"
        self.changes.append(Change(plugin.clock.now, "conversation", npc, player, ended.conversation))

    def traveller_talked_within(self, ticks: int) -> bool:
        """Whether a traveller talked (and left) in one of the last ``ticks`` ticks."""
        return any((self.ticks - i) % PHASE in TRAVEL_TICKS for i in range(1, ticks + 1))

    def keep_up(self, store: GateStore, *, metadata: bool = True) -> None:
        """Play ticks waiting for the store after each (``plugin.storage.flush()``) until a round
        began and its documents (appended in groups) are on disk, then, with
        ``metadata``, until its metadata is too."""
        begun = False
        for _ in range(3 * INTERVAL):
            appends = store.appends
            self.play()
            self.plugin.storage.flush()
            if begun and store.appends > appends:
                return
            begun |= store.appends - appends >= 2
            if begun and not metadata:
                return
        raise AssertionError("no snapshot round began and ended in three snapshot intervals")

    def play(self) -> None:
        """Tick ``self.ticks``'s facade calls, then the tick (one game second)."""
        plugin, t, changes = self.plugin, self.ticks, self.changes
        now = plugin.clock.now
        # Memories: locked, so no forgetting, eviction or consolidation ever removes them,
        # and each pair stays far below the pack's caps (300 episodic per NPC and player,
        # 2,000 per NPC): every NPC gets a handful over the run.
        for j in range(NOTES_PER_TICK):
            npc = npc_key(t * NOTES_PER_TICK + j)
            player = None if j % 2 else f"p{j % PLAYERS}"
            content = f"note t{t}j{j}"  # ("tick 100 note 0" reads as a street address: redacted)
            plugin.remember(npc, player, content, importance=0.9, locked=True)
            changes.append(Change(now, "memory", npc, player, content))
        # An observation: every NPC in one room (an eighth of them) learns a fact, so many
        # NPCs are dirty at once, and a round's documents were first changed over a few
        # ticks for each group the writer appends. Facts stay far below the cap of 500 per
        # NPC (one every eight ticks per NPC), have no expiry and unique content (no
        # merging); the tag moves no relationship.
        room, subject = f"room{t % ROOMS}", f"p{t % PLAYERS}"
        content = f"sighting t{t} in {room}"
        witnesses = plugin.observe(room=room, content=content, subject=subject, tags=["sighting"], importance=0.6)
        assert len(witnesses) == NPCS // ROOMS
        changes.append(Change(now, "fact", "", subject, content, witnesses=tuple(witnesses)))
        # Relationships: the version only grows (every change adds one), so a document
        # holds a change when its relationship is at that version or later.
        for j in range(ADJUSTS_PER_TICK):
            npc, player = npc_key(t * 7 + j * 191), f"p{(t + j) % PLAYERS}"
            changed = plugin.adjust_relationship(npc, player, trust=0.01 if (t + j) % 2 else -0.01)
            changes.append(Change(now, "relationship", npc, player, version=changed.version))
        phase = t % PHASE
        if phase < TALKING and phase % TALK_EVERY == 0:
            self.talk(npc_key(t // TALK_EVERY % CONVERSERS), f"p{t // TALK_EVERY // CONVERSERS % PLAYERS}")
        if phase in TRAVEL_TICKS:
            traveller = TRAVELLERS[phase // TRAVEL_EVERY]
            self.talk(npc_key(t // TRAVEL_EVERY % CONVERSERS), traveller)
            plugin.remove(traveller)  # gone: the extraction of the conversation waits for them
        if phase - AWAY in TRAVEL_TICKS:
            plugin.add_player(key=TRAVELLERS[(phase - AWAY) // TRAVEL_EVERY])  # back: it is applied
        tick(WORLD, 1, 1 / 60)
        self.ticks += 1


# ---------------------------------------------------------------------- what a copy holds


@dataclass
class Held:
    """What a store (a copy of one) gives back when loaded."""

    contents: StoreContents
    memories: dict[str, set[str]] = field(default_factory=dict)
    facts: dict[str, set[str]] = field(default_factory=dict)
    extracted: dict[str, set[str]] = field(default_factory=dict)
    """By NPC: conversations its document shows extracted (ids kept, or memories from them)."""
    pending: set[str] = field(default_factory=set)
    """Conversations whose extraction the store keeps pending: in its metadata, or in
    their NPC's document (which a reload queues again)."""

    @classmethod
    def load(cls, path: Path) -> Held:
        store = TinyDBStore(path, checkpoint_on_close=False)
        try:
            held = cls(store.load())
        finally:
            store.close()
        for key, document in held.contents.documents.items():
            if not isinstance(document, NpcDocument):
                continue
            pairs = [document.bank.world, *document.bank.players.values()]
            records = [m for pair in pairs for m in (*pair.episodic, *pair.semantic, *pair.procedural)]
            held.memories[key] = {m.content for m in records}
            held.extracted[key] = set(document.working.extracted) | {
                m.source_conversation for m in records if m.source_conversation is not None
            }
            held.facts[key] = {fact.content for fact in document.knowledge.facts}
            held.pending.update(pending.conversation for pending in document.working.pending)
        if held.contents.meta is not None:
            held.pending.update(job.conversation for job in held.contents.meta.pending_extractions)
        return held

    @property
    def clock(self) -> float:
        meta = self.contents.meta
        return -1.0 if meta is None else meta.clock

    def missing(self, change: Change) -> list[str]:
        """The NPCs whose document lacks ``change`` (each witness for a fact)."""
        if change.kind == "memory":
            return [] if change.what in self.memories.get(change.npc, ()) else [change.npc]
        if change.kind == "fact":
            return [w for w in change.witnesses if change.what not in self.facts.get(w, ())]
        if change.kind == "relationship":
            return [] if self.version(change.npc, change.player) >= change.version else [change.npc]
        assert change.kind == "conversation"
        held = change.what in self.extracted.get(change.npc, ()) or change.what in self.pending
        return [] if held else [change.npc]

    def version(self, npc: str, player: str | None) -> int:
        document = self.contents.documents.get(npc)
        if not isinstance(document, NpcDocument) or player is None:
            return -1
        relationship = document.relationships.by_player.get(player)
        return -1 if relationship is None else relationship.version

    def describe(self, change: Change, npc: str) -> str:
        """What the copy holds where ``change`` should be (for a failure message)."""
        document = self.contents.documents.get(npc)
        if not isinstance(document, NpcDocument):
            return f"no document of {npc}"
        said = f"{npc}'s document saved at game second {document.saved_at:.0f}"
        if change.kind == "memory":
            return f"{said}, {len(self.memories[npc])} memories, not this one"
        if change.kind == "fact":
            return f"{said}, {len(self.facts[npc])} facts, not this one"
        if change.kind == "relationship":
            return f"{said}, relationship with {change.player} at version {self.version(npc, change.player)}"
        recent = [s.conversation for s in document.working.recent.get(change.player or "", [])]
        return (f"{said}; recent conversations {recent}, extracted {sorted(document.working.extracted)[-3:]}, "
                f"not pending in the store ({len(self.pending)} pending)")


# ---------------------------------------------------------------------- one freeze


@dataclass
class Freeze:
    where: str
    now: float
    unsaved: float
    copy: Path
    changes: int
    """How many of the village's changes had been made (all at or before ``now``)."""


@dataclass
class Verdict:
    freeze: Freeze
    violations: list[str]
    missing: int
    """Changes (a fact counts once per witness) the copy lacks: not yet durable."""
    on_horizon: int
    """Of those, changes made exactly at the horizon (not promised: see the module)."""
    past_meta: int
    """Changes the copy holds that were made after the metadata the copy holds: part
    of a round whose end (its metadata) is not on disk yet."""
    promised: int
    """Changes made before the horizon (all of which the copy must hold)."""

    @property
    def mid_round(self) -> bool:
        """The freeze caught a round half written: some of it on disk, some not."""
        return self.past_meta > 0 and self.missing > 0


def judge(freeze: Freeze, held: Held, changes: list[Change]) -> Verdict:
    horizon = freeze.now - freeze.unsaved
    violations: list[str] = []
    missing = on_horizon = past_meta = promised = 0
    for change in changes[: freeze.changes]:
        lacking = held.missing(change)
        count = len(change.witnesses) if change.kind == "fact" else 1
        if change.at < horizon:
            promised += count
            for npc in lacking[:1]:
                violations.append(
                    f"{change.kind} {change.what or ''!r} ({npc} about {change.player}, version {change.version}) "
                    f"made at game second {change.at:.0f} is not in the copy, though now is {freeze.now:.0f} and "
                    f"unsaved_seconds() said {freeze.unsaved:.0f} (horizon {horizon:.0f}); writer frozen at "
                    f"{freeze.where}; the copy's metadata is of game "
                    f"second {held.clock:.0f}; {held.describe(change, npc)}"
                )
        missing += len(lacking)
        on_horizon += len(lacking) if change.at == horizon else 0
        if change.at > held.clock:
            past_meta += count - len(lacking)
    return Verdict(freeze, violations, missing, on_horizon, past_meta, promised)


def applied_once(copy: Path, name: str, changes: list[Change], horizon: float, held: Held) -> list[str]:
    """Install the copy as a restarted game would, bring back the NPCs and players of
    the conversations, play until every extraction left pending is applied, and say
    which conversations were not applied exactly once (those before the horizon or that
    the copy held) or were applied more than once (any): as memories, one per
    conversation, each reinforced (``access_count``) by any later application, since an
    equal memory is never stored twice."""
    conversations = [c for c in changes if c.kind == "conversation"]
    plugin = npc_memory.install(world=name, pack=npc_memory.load_pack("village"), store=copy, seed=SEED,
                                time_scale=60.0, deterministic=True)
    try:
        for npc in sorted({c.npc for c in conversations}):
            plugin.add_npc(key=npc)
        for player in (*(f"p{j}" for j in range(PLAYERS)), *TRAVELLERS):
            plugin.add_player(key=player)
        for _ in range(200):
            if not plugin.extraction.pending():
                break
            tick(name, 1, 1 / 60)
        assert not plugin.extraction.pending(), f"{name}: extractions still pending after 200 ticks"
        counts: dict[str, int] = {}
        for npc in sorted({c.npc for c in conversations}):
            for player in (*(f"p{j}" for j in range(PLAYERS)), *TRAVELLERS):
                for memory in plugin.memories(npc, player):
                    if memory.source_conversation is not None:  # applied again, it would reinforce itself
                        applied = 1 + memory.access_count
                        counts[memory.source_conversation] = counts.get(memory.source_conversation, 0) + applied
    finally:
        npc_memory.uninstall(name, save=False)
        esper.delete_world(name)
    wrong = []
    for c in conversations:
        owed = c.at < horizon or not held.missing(c)
        n = counts.get(c.what, 0)
        if n > 1 or (owed and n != 1):
            wrong.append(f"conversation {c.what} ended at game second {c.at:.0f} (horizon {horizon:.0f}) was applied "
                         f"{n} times after a reload of {copy.name}")
    return wrong


# ---------------------------------------------------------------------- the tests


def install(store: TinyDBStore | Path) -> npc_memory.MemoryPlugin:
    return npc_memory.install(world=WORLD, pack=npc_memory.load_pack("village"), store=store, seed=SEED,
                              time_scale=60.0, deterministic=True)


def test_unsaved_seconds_never_claims_what_a_half_written_round_has_not_saved(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    live = tmp_path / "live.db"
    store = GateStore(live)
    plugin = install(store)
    village = Village(plugin)
    plugin.save()
    freezes: list[Freeze] = []
    verdicts: list[Verdict] = []
    unloadable: list[str] = []
    reload_failures: list[str] = []
    reloads = 0
    try:
        while len(freezes) < FREEZES and village.ticks < MAX_TICKS:
            # Half the time, first a while with a writer that keeps up (a round on disk
            # within the tick it starts), up to the end of a round: the next round's
            # documents then all changed after their last capture, and the dates of their
            # changes are as tight as they get; otherwise the next freeze falls further on
            # in the rounds the last one stopped. Then where to stop the writer: in one of
            # the next appends (each group of a round's documents, its metadata), before
            # its first record, a few records in, after its last (before the fsync) or
            # before a round's metadata (often so while the village talks: the round's
            # documents then show conversations that wait, pending, in those documents
            # and not yet in the metadata); while the game ticks on without waiting for the writer, and for a
            # while longer once it stopped (beyond a snapshot interval, at times), before
            # copying the store.
            gap, before, extra = rng.choice(GAPS), rng.choice(BEFORE), rng.choice(EXTRA_TICKS)
            mode = rng.random()
            if mode < 0.25 and village.ticks % PHASE < TRAVEL_TICKS[-1]:
                # A round whose documents show a traveller's conversation (pending in
                # them, and not yet in the metadata), stopped before that metadata.
                village.keep_up(store, metadata=False)
                while not village.traveller_talked_within(INTERVAL) and village.ticks % PHASE < AWAY:
                    village.keep_up(store, metadata=False)
                gap, before = 0, None
            elif mode < 0.625:
                village.keep_up(store)
            store.freeze(store.appends + gap, before)
            while village.ticks < MAX_TICKS and not store.frozen.is_set():
                village.play()
            if not store.frozen.is_set():
                break
            for _ in range(extra):  # the world goes on changing while the round is half written
                village.play()
            assert store.frozen.is_set()
            now, unsaved = plugin.clock.now, plugin.storage.unsaved_seconds()
            copy = tmp_path / f"copy{len(freezes)}.db"
            freeze = Freeze(store.where, now, unsaved, copy, len(village.changes))
            shutil.copytree(live, copy, ignore=shutil.ignore_patterns("LOCK", "LOCK.owner"))
            store.release()
            assert store.resumed.wait(WAIT), f"the writer did not leave freeze {len(freezes)} within {WAIT} s"
            assert not store.overstayed, f"freeze {len(freezes)} outlived {WAIT} s: the copy is not what a crash leaves"
            freezes.append(freeze)
            try:
                held = Held.load(copy)
            except StoreCorruptError as exc:
                # What a crash would leave does not load: nothing comes back (a finding of
                # its own; ``npc-memory repair`` is no way round it here: it checks each
                # file before replaying the journal, and may set a document back to an
                # older generation that the journal's later changes no longer fit).
                unloadable.append(f"freeze {len(freezes) - 1} (game second {now:.0f}, writer at {freeze.where}): "
                                  f"{exc}")
                shutil.rmtree(copy)
                continue
            verdict = judge(freeze, held, village.changes)
            verdicts.append(verdict)
            if reloads < RELOADS and verdict.mid_round and held.pending:
                reloads += 1
                reload_failures += applied_once(copy, f"reload{reloads}", village.changes[: freeze.changes],
                                                now - unsaved, held)
            shutil.rmtree(copy)
    finally:
        store.release()  # never leave the writer waiting: uninstall saves through it
    for verdict in verdicts:
        freeze = verdict.freeze
        print(f"freeze {freezes.index(freeze)}: {freeze.where}, game second "
              f"{freeze.now:.0f}, unsaved {freeze.unsaved:.0f}; promised {verdict.promised}, missing "
              f"{verdict.missing} ({verdict.on_horizon} on the horizon), held past the metadata "
              f"{verdict.past_meta}{' MID-ROUND' if verdict.mid_round else ''}")
    mid_round = sum(v.mid_round for v in verdicts)
    print(f"{len(freezes)} freezes ({mid_round} mid-round, {reloads} reloaded, {len(unloadable)} whose copy "
          f"did not load), {village.ticks} ticks, {len(village.changes)} changes")
    violations = [v for verdict in verdicts for v in verdict.violations]
    assert not violations, f"{len(violations)} changes before the horizon lost:\n" + "\n".join(violations[:20])
    assert not reload_failures, "\n".join(reload_failures)
    assert len(verdicts) >= LANDED_AT_LEAST, f"only {len(verdicts)} freezes judged in {village.ticks} ticks"
    assert mid_round >= MID_ROUND_AT_LEAST, f"only {mid_round} of {len(verdicts)} freezes caught a round half written"
    assert reloads >= 1, "no freeze that left extractions pending was reloaded"
    assert any(v.on_horizon for v in verdicts), "no freeze found the oldest change it lacked right on the horizon"
    # The checks themselves: once everything is saved, the store holds every change
    # (nothing the test counts is ever removed by the pack's rules).
    plugin.save()
    assert plugin.storage.unsaved_seconds() == 0.0
    npc_memory.uninstall(WORLD)
    held = Held.load(live)
    lost = [(c.kind, c.what, held.missing(c)[:3]) for c in village.changes if held.missing(c)]
    assert not lost, f"{len(lost)} changes missing after save(): {lost[:5]}"
    # Last, as it depends on where the writer's captures fall among the game's changes:
    # every crash leaves a store that loads.
    assert not unloadable, "a crash would leave a store that does not load:\n" + "\n".join(unloadable)


def test_unsaved_seconds_is_zero_after_save_and_then_ages_with_the_clock(tmp_path: Path) -> None:
    plugin = install(tmp_path / "plain.db")
    for i in range(8):
        plugin.add_npc(key=npc_key(i), archetype=ARCHETYPES[i], room="room0")
    plugin.add_player(key="p0", name="Player0", faction="adventurers", room="room0", consent=True)
    tick(WORLD, 5, 1 / 60)
    plugin.save()
    assert plugin.storage.unsaved_seconds() == 0.0
    tick(WORLD, 3, 1 / 60)
    assert plugin.storage.unsaved_seconds() == 0.0  # nothing changed since
    changed_at = plugin.clock.now
    plugin.remember(npc_key(1), "p0", "Player0 paid for the night", importance=0.9, locked=True)
    assert plugin.storage.unsaved_seconds() == 0.0  # made this instant: 0 game seconds old
    ages = []
    for step in range(1, 41):  # within one snapshot interval of the save: no round runs
        if step == 10:
            plugin.adjust_relationship(npc_key(2), "p0", trust=0.05)  # a newer change: the oldest still counts
        tick(WORLD, 1, 1 / 60)
        age = plugin.clock.now - changed_at
        ages.append(plugin.storage.unsaved_seconds())
        # Honest (at least the change's age) and, as documented, early by at most a tick.
        assert age <= ages[-1] <= age + 1.0, (step, age, ages[-1])
    assert ages == sorted(ages) and ages[-1] > ages[0]
    plugin.save()
    assert plugin.storage.unsaved_seconds() == 0.0
    npc_memory.uninstall(WORLD)
    plugin = install(tmp_path / "plain.db")
    plugin.add_npc(key=npc_key(1))
    plugin.add_player(key="p0")
    assert [m.content for m in plugin.memories(npc_key(1), "p0")] == ["Player0 paid for the night"]
    npc_memory.uninstall(WORLD)
