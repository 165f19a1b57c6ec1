"""Snapshot records: consistent captures of a document's components, the patch between
two captures of one document, and the journal records that carry them.

A *capture* is a copy of the containers of an NPC's components (lists and dicts of
frozen records: pointer copies, no encoding) that the writer can read while the game
keeps changing the live components. It is one sequence of C calls (a
``msgspec.convert`` and a ``dict.copy``) that neither releases the GIL nor runs Python
code, so the writer thread itself may make it (:func:`capture_atomically`): no other
thread runs meanwhile, provided no garbage collection runs inside the copy either
(:func:`writer_may_capture`). Without a GIL the thread that changes the components makes it
(:func:`capture_handle`). The writer
copies only the parts of the document (:class:`~npc_memory.store.documents.Part`)
marked changed since the capture it wrote last and shares the others with it, so a
witness that learned one fact costs a copy of its facts, not of its memories.

A *patch* is computed on the writer thread between the capture last written for a key
and a new one. Records are immutable, so a list that changed is described by runs of
the previous list it kept (``start, stop`` index pairs) and the records that are new:
learning one fact out of 500 writes one fact, not 500. Dicts keyed by player carry
the entries set and removed (and their order when it changed), small dicts whole. When
the services named the relationships they set since the capture before
(:meth:`~npc_memory.state.WorldState.mark_relationship`), only those are looked at.
Applying a patch to the document of the base capture gives the new capture's document
exactly (same records, same order).

Journal records (msgpack, tagged by ``type``) carry a log sequence number ``lsn``,
unique and increasing over the life of a store; a patch names the ``base`` lsn it
applies to, so replay can tell a patch already folded into a shard from one still
to apply, and refuses one whose base is missing.
"""

from __future__ import annotations

import functools
import operator
import sys
from array import array
from collections.abc import Mapping, Sequence
from itertools import accumulate, chain, compress, pairwise
from typing import Any, TypeVar

import msgspec

from npc_memory.collector import collection_paused, collector_running
from npc_memory.components import (
    ConversationSummary,
    EpisodicMemory,
    Fact,
    FactionMember,
    Identity,
    KnowledgeBase,
    MemoryBank,
    NpcTraits,
    PairMemories,
    PendingConversation,
    PlayerProfile,
    ProceduralMemory,
    Relationship,
    Relationships,
    SemanticMemory,
    Turn,
    WorkingMemory,
)
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    Document,
    EncodedDocument,
    NpcDocument,
    Part,
    PlayerDocument,
    StoreMeta,
    encode_document,
)

T = TypeVar("T")
V = TypeVar("V")

# ---------------------------------------------------------------------- captures


Triple = tuple[Sequence[EpisodicMemory], Sequence[SemanticMemory], Sequence[ProceduralMemory]]
"""One pair's episodic, semantic and procedural memories."""

_memories = operator.attrgetter("episodic", "semantic", "procedural")


def _lengths(seqs: Sequence[Sequence[Any]], *head: int) -> bytes:
    """``head`` then the length of each of ``seqs``, as signed 64-bit native integers."""
    layout = array("q", head)
    layout.extend(map(len, seqs))  # the array is garbage once its bytes are taken
    return layout.tobytes()


def _cut(items: tuple[Any, ...], lengths: Sequence[int]) -> list[tuple[Any, ...]]:
    cuts = [0, *accumulate(lengths)]
    return [items[a:b] for a, b in pairwise(cuts)]


class BankPart(msgspec.Struct, gc=False):
    """An NPC's memories at one instant: every record in ``items`` — the world's three
    lists, then each pair's three in ``keys`` order — with the lists' lengths in
    ``layout`` (signed 64-bit integers, native order, as bytes: not an object the
    garbage collector sees)."""

    items: tuple[Any, ...]
    keys: tuple[str, ...]
    layout: bytes
    next_id: int
    milestones: dict[str, int]

    def view(self) -> tuple[Triple, dict[str, Triple]]:
        """The world's lists and each pair's (tuples sliced out of ``items``)."""
        slices = _cut(self.items, memoryview(self.layout).cast("q").tolist())
        pairs: dict[str, Triple] = {}
        at = 3
        for player in self.keys:
            pairs[player] = (slices[at], slices[at + 1], slices[at + 2])
            at += 3
        return (slices[0], slices[1], slices[2]), pairs


class WorkingPart(msgspec.Struct, gc=False):
    """An NPC's working memory at one instant: in ``items`` the extracted conversation
    ids, then the pending conversations, then each open conversation's lines, then each
    pair's recent summaries, their players in ``keys`` (open ones first); ``layout``
    holds the number of open conversations, then the lengths."""

    items: tuple[Any, ...]
    keys: tuple[str, ...]
    layout: bytes
    conversations: dict[str, int]

    def view(
        self,
    ) -> tuple[
        tuple[str, ...],
        tuple[PendingConversation, ...],
        dict[str, tuple[Turn, ...]],
        dict[str, tuple[ConversationSummary, ...]],
    ]:
        """The extracted ids, pending conversations, open conversations and recent summaries."""
        layout = memoryview(self.layout).cast("q").tolist()
        opened = layout[0]
        slices = _cut(self.items, layout[1:])
        keys = self.keys
        open_map = dict(zip(keys[:opened], slices[2 : 2 + opened], strict=True))
        recent_map = dict(zip(keys[opened:], slices[2 + opened :], strict=True))
        return slices[0], slices[1], open_map, recent_map


class KnowledgePart(msgspec.Struct, gc=False):
    """An NPC's facts at one instant."""

    facts: tuple[Fact, ...]
    next_id: int


class NpcCapture(msgspec.Struct, gc=False):
    """The state of one NPC's document at one instant, in containers of its own.

    Laid out for the garbage collector, which otherwise dominates the cost of
    snapshots (a capture lives until the next one of its NPC is written): each part of
    the document (:class:`~npc_memory.store.documents.Part`) is one struct that the
    collector never tracks, its records in one tuple beside the player keys and the
    dicts that hold more than records. The collector stops tracking the tuples the
    first time it sees them. A part nothing changed in is the *same object* as in the
    capture before, so a capture costs what changed and comparing two captures skips
    the parts they share. :meth:`view` gives the structure back.
    """

    key: str
    name: str
    faction: str | None
    archetype: str | None
    room: str | None
    traits: NpcTraits
    saved_at: float
    bank: BankPart
    relationships: dict[str, Relationship]
    working: WorkingPart
    knowledge: KnowledgePart
    relationship_players: tuple[str, ...] | None = None
    """The players whose relationship was set since the capture before, in the order
    first set, when known: the patch from that capture then carries their records
    without comparing the others (``None``: compare them all)."""

    def view(self) -> CaptureView:
        """The capture's containers (tuples sliced out of each part's ``items``)."""
        world, pairs = self.bank.view()
        extracted, pending, opened, recent = self.working.view()
        return CaptureView(world, pairs, self.knowledge.facts, extracted, pending, opened, recent)


class CaptureView(msgspec.Struct, gc=False):
    """The containers of an :class:`NpcCapture` (tuples of its records)."""

    world: Triple
    pairs: dict[str, Triple]
    facts: tuple[Fact, ...]
    extracted: tuple[str, ...]
    pending: tuple[PendingConversation, ...]
    open: dict[str, tuple[Turn, ...]]
    recent: dict[str, tuple[ConversationSummary, ...]]


class PlayerCapture(msgspec.Struct, gc=False):
    """The state of one player's document at one instant (all of it immutable)."""

    key: str
    name: str
    faction: str | None
    room: str | None
    profile: PlayerProfile
    saved_at: float


Capture = NpcCapture | PlayerCapture

_NO_INTS: dict[str, int] = {}  # shared by captures of empty dicts: captures are never changed


# What one msgspec.convert call copies out of a live handle: the lists and dicts of the
# components asked for (into tuples and dicts), the records themselves kept, the room
# read from the Location's slot; nothing here runs Python code (the relationships are
# copied beside it, in the same C sequence: see _copy). Made into parts at once.
# The records are typed ``Any``: the live components hold only records of their type,
# and not checking them again spares a look at each (a third of a copy's cost).


class _Pair(msgspec.Struct, gc=False):
    episodic: tuple[Any, ...]
    semantic: tuple[Any, ...]
    procedural: tuple[Any, ...]


class _Bank(msgspec.Struct, gc=False):
    world: _Pair
    players: dict[str, _Pair]
    next_id: int
    milestones: dict[str, int]


class _Working(msgspec.Struct, gc=False):
    open: dict[str, tuple[Any, ...]]
    recent: dict[str, tuple[Any, ...]]
    conversations: dict[str, int]
    extracted: tuple[str, ...]
    pending: tuple[Any, ...]


class _Knowledge(msgspec.Struct, gc=False):
    facts: tuple[Any, ...]
    next_id: int


class _Location(msgspec.Struct, gc=False, rename={"room": "_room"}):
    room: str | None


class _Player(msgspec.Struct, gc=False):
    identity: Identity
    faction: FactionMember
    location: _Location
    profile: PlayerProfile


_HEAD: list[tuple[str, Any]] = [
    ("identity", Identity), ("faction", FactionMember), ("location", _Location), ("traits", NpcTraits)
]
_PARTS: list[tuple[int, str, Any]] = [
    (Part.BANK, "bank", _Bank),
    (Part.WORKING, "working", _Working),
    (Part.KNOWLEDGE, "knowledge", _Knowledge),
]
_NPC_COPIES: list[type[msgspec.Struct]] = [
    msgspec.defstruct(f"_Npc{mask}", [*_HEAD, *((n, t) for bit, n, t in _PARTS if mask & bit)], gc=False)
    for mask in range(Part.ALL + 1)
]
"""For each mask of parts, what one conversion of an NPC's handle takes: its head and
those parts but the relationships (copied beside it, see :func:`_copy`)."""


def _copy(handle: Any, parts: int) -> tuple[Any, dict[str, Relationship] | None]:
    """The conversion of ``handle``'s head and ``parts``, and a copy of its relationships
    when ``parts`` holds them (``None`` otherwise)."""
    if not hasattr(handle, "bank"):
        return msgspec.convert(handle, _Player, from_attributes=True), None
    head = functools.partial(msgspec.convert, handle, _NPC_COPIES[parts], from_attributes=True)
    if not parts & Part.RELATIONSHIPS:
        return head(), None
    # ``dict.copy`` copies the relationships a third as dearly as a conversion (it
    # copies the table instead of inserting entry by entry). Both calls run in one C
    # sequence (``tuple`` draining a ``map``): no Python code runs between them, so,
    # as within one call, no other thread does. The bound ``copy`` is taken before,
    # which holds because a live or stored handle's ``by_player`` dict is changed in
    # place, never replaced (see Relationships).
    copied, relationships = tuple(map(operator.call, (head, handle.relationships.by_player.copy)))
    return copied, relationships


def capture_handle(handle: Any, saved_at: float) -> Capture:
    """Capture a live NPC's or player's handle on the thread that changes it."""
    copied, relationships = _copy(handle, Part.ALL)
    return _flat(copied, relationships, saved_at, None)


def capture_atomically(
    handle: Any, saved_at: float, parts: int = Part.ALL, base: NpcCapture | None = None
) -> Capture:
    """:func:`capture_handle` from another thread than the one that changes the
    components: the copy is one sequence of C calls that neither releases the GIL nor
    runs Python code, so no other thread runs meanwhile and it sees the handle at one
    instant. Only valid where a GIL exists (:func:`gil_enabled`).

    Only where :func:`writer_may_capture` says so: on Python 3.11 a collection may run
    inside the copy (from an allocation) and its finalizers may let another thread
    change what is being copied, so there the copy is made with automatic collection
    held off, which a running :class:`~npc_memory.collector.FrameCollector` has already
    done (and which then keeps it off until the copy ends, should the game stop the
    collector meanwhile). From 3.12 collections wait for the interpreter loop.

    Given ``base`` (an earlier capture of the same NPC) only the ``parts`` marked
    changed since it are copied; the others are taken from ``base`` as they are."""
    if base is None:
        parts = Part.ALL
    if _COLLECTS_IN_ALLOCATIONS:
        with collection_paused():
            copied, relationships = _copy(handle, parts)
    else:
        copied, relationships = _copy(handle, parts)
    return _flat(copied, relationships, saved_at, base)


_COLLECTS_IN_ALLOCATIONS = sys.version_info < (3, 12)
"""Whether CPython runs a garbage collection inside the allocation that makes one due
(up to 3.11), rather than at the interpreter loop's next check (3.12 and later)."""


def writer_may_capture() -> bool:
    """Whether another thread may capture documents with :func:`capture_atomically`
    now, leaving the game's garbage collector as it is: with a GIL, and on Python 3.11
    only while a :class:`~npc_memory.collector.FrameCollector` runs (automatic
    collection off). Otherwise the thread that changes the components captures them
    (:func:`capture_handle`)."""
    return gil_enabled() and (not _COLLECTS_IN_ALLOCATIONS or collector_running())


def _flat(
    copied: Any, relationships: dict[str, Relationship] | None, saved_at: float, base: NpcCapture | None
) -> Capture:
    identity, faction = copied.identity, copied.faction.faction
    if isinstance(copied, _Player):
        room = copied.location.room
        return PlayerCapture(identity.key, identity.name, faction, room, copied.profile, saved_at)
    bank = getattr(copied, "bank", None)
    working = getattr(copied, "working", None)
    knowledge = getattr(copied, "knowledge", None)
    return NpcCapture(
        identity.key,
        identity.name,
        faction,
        copied.traits.archetype,
        copied.location.room,
        copied.traits,
        saved_at,
        _kept(base).bank if bank is None else _bank_part(bank),
        _kept(base).relationships if relationships is None else relationships,
        _kept(base).working if working is None else _working_part(working),
        _kept(base).knowledge if knowledge is None else KnowledgePart(knowledge.facts, knowledge.next_id),
    )


def _kept(base: NpcCapture | None) -> NpcCapture:
    assert base is not None, "a copy of some parts needs the capture that holds the others"
    return base


def _bank_part(bank: Any) -> BankPart:
    world, players = bank.world, bank.players
    seqs: list[Sequence[Any]] = [world.episodic, world.semantic, world.procedural]
    seqs += chain.from_iterable(map(_memories, players.values()))
    return BankPart(
        tuple(chain.from_iterable(seqs)),
        tuple(players),
        _lengths(seqs),
        bank.next_id,
        dict(bank.milestones) if bank.milestones else _NO_INTS,
    )


def _working_part(working: Any) -> WorkingPart:
    opened, recent = working.open, working.recent
    seqs: list[Sequence[Any]] = [working.extracted, working.pending, *opened.values(), *recent.values()]
    return WorkingPart(
        tuple(chain.from_iterable(seqs)),
        (*opened, *recent),
        _lengths(seqs, len(opened)),
        dict(working.conversations) if working.conversations else _NO_INTS,
    )


def _flatten(
    key: str,
    name: str,
    faction: str | None,
    archetype: str | None,
    room: str | None,
    traits: NpcTraits,
    saved_at: float,
    bank: Any,
    relationships: dict[str, Relationship],
    working: Any,
    knowledge: Any,
) -> NpcCapture:
    """A capture of containers that no one changes any more (copies or stored)."""
    return NpcCapture(
        key,
        name,
        faction,
        archetype,
        room,
        traits,
        saved_at,
        _bank_part(bank),
        relationships,
        _working_part(working),
        KnowledgePart(tuple(knowledge.facts), knowledge.next_id),
    )


def gil_enabled() -> bool:
    """Whether this interpreter has a global interpreter lock (free-threaded builds of
    Python 3.13+ may not)."""
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def capture_document(document: Document) -> Capture:
    """A capture of a stored document (one that is not in the live world)."""
    if isinstance(document, PlayerDocument):
        return PlayerCapture(
            document.key, document.name, document.faction, document.room, document.profile, document.saved_at
        )
    return _flatten(
        document.key,
        document.name,
        document.faction,
        document.archetype,
        document.room,
        document.traits,
        document.saved_at,
        document.bank,
        document.relationships.by_player.copy(),
        document.working,
        document.knowledge,
    )


def document_of_capture(capture: Capture) -> Document:
    """The document a capture holds, sharing the capture's records: encode it, never
    change it (its sequences are tuples)."""
    if isinstance(capture, PlayerCapture):
        return PlayerDocument(
            v=SCHEMA_VERSION,
            key=capture.key,
            name=capture.name,
            faction=capture.faction,
            room=capture.room,
            profile=capture.profile,
            saved_at=capture.saved_at,
        )
    c, view = capture, capture.view()
    return NpcDocument(
        v=SCHEMA_VERSION,
        key=c.key,
        name=c.name,
        faction=c.faction,
        archetype=c.archetype,
        room=c.room,
        traits=c.traits,
        bank=MemoryBank(
            world=_pair(view.world),
            players={p: _pair(t) for p, t in view.pairs.items()},
            next_id=c.bank.next_id,
            milestones=c.bank.milestones,
        ),
        relationships=Relationships(by_player=c.relationships),
        working=WorkingMemory(
            open=view.open,  # type: ignore[arg-type]  # tuples encode as lists
            recent=view.recent,  # type: ignore[arg-type]
            conversations=c.working.conversations,
            extracted=view.extracted,  # type: ignore[arg-type]
            pending=view.pending,  # type: ignore[arg-type]
        ),
        knowledge=KnowledgeBase(facts=view.facts, next_id=c.knowledge.next_id),  # type: ignore[arg-type]
        saved_at=c.saved_at,
    )


def _pair(triple: Triple) -> PairMemories:
    return PairMemories(episodic=triple[0], semantic=triple[1], procedural=triple[2])  # type: ignore[arg-type]


def encode_capture(capture: Capture) -> EncodedDocument:
    """The canonical JSON of a capture's document."""
    return encode_document(document_of_capture(capture))

# ---------------------------------------------------------------------- patches


class PairEdit(msgspec.Struct, omit_defaults=True):
    """Edits of one NPC–player pair's memory lists (``None``: unchanged)."""

    episodic: list[int | EpisodicMemory] | None = None
    semantic: list[int | SemanticMemory] | None = None
    procedural: list[int | ProceduralMemory] | None = None


class NpcPatch(msgspec.Struct, tag="patch", omit_defaults=True, kw_only=True):
    """What changed in an NPC's document since the capture written as ``base``.

    Small fields are always present. A list edit is a sequence of ``start, stop``
    pairs (keep ``base[start:stop]``) and new records, in order. For each dict keyed by
    player: entries set (new or changed, in the new order), keys gone, and the full
    key order when it is not "old keys in place, new keys appended"."""

    lsn: int
    key: str
    base: int
    name: str
    faction: str | None = None
    archetype: str | None = None
    room: str | None = None
    traits: NpcTraits = NpcTraits()
    saved_at: float = 0.0
    world: PairEdit | None = None
    pairs: dict[str, PairEdit] = {}
    pairs_gone: list[str] = []
    pairs_order: list[str] | None = None
    next_id: int | None = None
    milestones: dict[str, int] | None = None
    relationships: dict[str, Relationship] = {}
    relationships_gone: list[str] = []
    relationships_order: list[str] | None = None
    open: dict[str, list[Turn]] = {}
    open_gone: list[str] = []
    open_order: list[str] | None = None
    recent: dict[str, list[ConversationSummary]] = {}
    recent_gone: list[str] = []
    recent_order: list[str] | None = None
    conversations: dict[str, int] | None = None
    extracted: list[int | str] | None = None
    pending: list[int | PendingConversation] | None = None
    facts: list[int | Fact] | None = None
    facts_next_id: int | None = None


ALIGNED_EDITS = 8
"""Records replaced in place up to which a list edit keeps the rest as runs around
them without matching records one by one."""


def list_edit(base: Sequence[T], new: Sequence[T]) -> list[Any] | None:
    """The edit turning ``base`` into ``new`` (``None`` if equal): runs of ``base``
    kept, as ``start, stop`` pairs, and new records, in order. Records replaced in
    place and appended are found in C; otherwise only what lies between the records
    both lists start and end with (the same objects) is matched record by record.
    So appending, replacing or removing a few records costs little whatever the
    length."""
    if new == base:  # identical records compare by identity first: O(n) pointer checks
        return None
    n, m = len(base), len(new)
    k = min(n, m)
    replaced = list(compress(range(k), map(operator.is_not, base, new)))  # in C
    if len(replaced) <= ALIGNED_EDITS:  # the usual case: a few replaced in place, some appended
        ops: list[Any] = []
        at = 0
        for i in replaced:
            if i > at:
                ops += (at, i)
            ops.append(new[i])
            at = i + 1
        if k > at:
            ops += (at, k)
        ops += new[k:]
        return ops
    head = replaced[0]
    tail = 0
    if head < k:
        tail = next(compress(range(k - head), map(operator.is_not, reversed(base), reversed(new))), k - head)
    ops = [0, head] if head else []
    ops += _middle_edit(base, new, head, n - tail, m - tail)
    if tail:
        ops += (n - tail, n)
    return ops


def _middle_edit(base: Sequence[T], new: Sequence[T], start: int, base_stop: int, new_stop: int) -> list[Any]:
    """:func:`list_edit` of ``base[start:base_stop]`` into ``new[start:new_stop]``
    (runs numbered in ``base``)."""
    where = {id(base[i]): i for i in range(start, base_stop)}  # base keeps its records alive
    ops: list[Any] = []
    first = stop = -1
    for record in new[start:new_stop]:
        i = where.get(id(record), -1)
        if i >= 0 and i == stop:
            stop += 1
            continue
        if first >= 0:
            ops += (first, stop)
        if i >= 0:
            first, stop = i, i + 1
        else:
            first = stop = -1
            ops.append(record)
    if first >= 0:
        ops += (first, stop)
    return ops


def apply_list_edit(base: Sequence[T], ops: Sequence[Any]) -> list[T]:
    """``base`` with ``ops`` (from :func:`list_edit`) applied; ``ValueError`` if the
    edit does not fit ``base``."""
    out: list[T] = []
    i, count, size = 0, len(ops), len(base)
    while i < count:
        op = ops[i]
        if type(op) is int:
            if i + 1 >= count or type(ops[i + 1]) is not int:
                raise ValueError("a kept run without its end")
            stop = ops[i + 1]
            if not 0 <= op < stop <= size:
                raise ValueError(f"kept run {op}:{stop} outside a list of {size}")
            out += base[op:stop]
            i += 2
        else:
            out.append(op)
            i += 1
    return out


class _DictEdit(msgspec.Struct):
    set: dict[str, Any]
    gone: list[str]
    order: list[str] | None


def dict_edit(base: Mapping[str, V], new: Mapping[str, V]) -> _DictEdit | None:
    """Entries of ``new`` that are new or changed, keys gone, and the key order when
    it differs from "kept keys in place, new keys appended" (``None``: equal)."""
    if base == new:  # values compare by identity first
        return None if list(base) == list(new) else _DictEdit({}, [], list(new))
    old_keys, new_keys = list(base), list(new)
    kept = len(old_keys)
    if new_keys[:kept] == old_keys:  # the usual case: keys in place, maybe some appended
        # values that are other objects (found in C), then those that differ in value
        pairs = zip(old_keys, base.values(), new.values(), strict=False)  # new may be longer
        others = compress(pairs, map(operator.is_not, base.values(), new.values()))
        sets = {k: b for k, a, b in others if a != b}
        for k in new_keys[kept:]:
            sets[k] = new[k]
        return _DictEdit(sets, [], None)
    gone = [k for k in base if k not in new]
    sets = {k: v for k, v in new.items() if k not in base or base[k] != v}
    expected = [k for k in base if k in new] + [k for k in new if k not in base]
    order = list(new)
    return _DictEdit(sets, gone, None if expected == order else order)


def apply_dict_edit(
    target: dict[str, V], sets: Mapping[str, V], gone: Sequence[str], order: Sequence[str] | None
) -> dict[str, V]:
    """``target`` with the edit applied (in place, unless the order changes)."""
    for k in gone:
        if k not in target:
            raise ValueError(f"removes {k!r}, which is not there")
        del target[k]
    target.update(sets)
    if order is not None:
        if len(order) != len(target) or set(order) != target.keys():
            raise ValueError("a key order that does not match the keys")
        return {k: target[k] for k in order}
    return target


_EMPTY: Triple = ((), (), ())


def _pair_edit(old: Triple, new: Triple) -> PairEdit:
    return PairEdit(list_edit(old[0], new[0]), list_edit(old[1], new[1]), list_edit(old[2], new[2]))


def diff(base_capture: NpcCapture, new_capture: NpcCapture, *, lsn: int, base_lsn: int) -> NpcPatch | None:
    """The patch from ``base_capture`` to ``new_capture`` (two captures of one NPC), or
    ``None`` if nothing persisted changed (``saved_at`` aside). Parts the two captures
    share (the same object) are not compared: the cost follows what changed."""
    base, new = base_capture, new_capture
    patch = NpcPatch(
        lsn=lsn,
        key=new.key,
        base=base_lsn,
        name=new.name,
        faction=new.faction,
        archetype=new.archetype,
        room=new.room,
        traits=new.traits,
        saved_at=new.saved_at,
    )
    changed = (base.name, base.faction, base.archetype, base.room, base.traits) != (
        new.name,
        new.faction,
        new.archetype,
        new.room,
        new.traits,
    )
    if base.bank is not new.bank:
        changed |= _diff_bank(base.bank, new.bank, patch)
    if base.relationships is not new.relationships:
        relationships = _relationships_edit(base.relationships, new.relationships, new.relationship_players)
        if relationships is not None:
            patch.relationships = relationships.set
            patch.relationships_gone, patch.relationships_order = relationships.gone, relationships.order
            changed = True
    if base.working is not new.working:
        changed |= _diff_working(base.working, new.working, patch)
    if base.knowledge is not new.knowledge:
        old_kb, new_kb = base.knowledge, new.knowledge
        patch.facts = list_edit(old_kb.facts, new_kb.facts)
        if old_kb.next_id != new_kb.next_id:
            patch.facts_next_id = new_kb.next_id
        changed |= patch.facts is not None or patch.facts_next_id is not None
    return patch if changed else None


def _relationships_edit(
    base: dict[str, Relationship], new: dict[str, Relationship], players: tuple[str, ...] | None
) -> _DictEdit | None:
    """:func:`dict_edit` of two captures' relationships; given the players whose
    relationship was set in between (nothing removed), only theirs are looked at: each
    is replaced in place or, new, appended in the order first set, as in ``new``."""
    if players is None or not all(map(new.__contains__, players)):
        return dict_edit(base, new)
    sets = {p: new[p] for p in players if base.get(p) is not new[p]}
    return _DictEdit(sets, [], None) if sets else None


def _diff_bank(base: BankPart, new: BankPart, patch: NpcPatch) -> bool:
    """Put the edits from ``base`` to ``new`` into ``patch``; whether there were any."""
    changed = False
    if not (base.items == new.items and base.keys == new.keys and base.layout == new.layout):
        (old_world, old_pairs), (new_world, new_pairs) = base.view(), new.view()
        if old_world != new_world:
            patch.world = _pair_edit(old_world, new_world)
            changed = True
        pairs = dict_edit(old_pairs, new_pairs)
        if pairs is not None:
            patch.pairs = {p: _pair_edit(old_pairs.get(p, _EMPTY), v) for p, v in pairs.set.items()}
            patch.pairs_gone, patch.pairs_order = pairs.gone, pairs.order
            changed = True
    if base.next_id != new.next_id:
        patch.next_id = new.next_id
        changed = True
    patch.milestones = _whole_dict(base.milestones, new.milestones)
    return changed or patch.milestones is not None


def _diff_working(base: WorkingPart, new: WorkingPart, patch: NpcPatch) -> bool:
    """Put the edits from ``base`` to ``new`` into ``patch``; whether there were any."""
    changed = False
    if not (base.items == new.items and base.keys == new.keys and base.layout == new.layout):
        (old_extracted, old_pending, old_open, old_recent) = base.view()
        (new_extracted, new_pending, new_open, new_recent) = new.view()
        patch.extracted = list_edit(old_extracted, new_extracted)
        patch.pending = list_edit(old_pending, new_pending)
        opened = dict_edit(old_open, new_open)
        if opened is not None:
            patch.open = {k: list(v) for k, v in opened.set.items()}
            patch.open_gone, patch.open_order = opened.gone, opened.order
        recent = dict_edit(old_recent, new_recent)
        if recent is not None:
            patch.recent = {k: list(v) for k, v in recent.set.items()}
            patch.recent_gone, patch.recent_order = recent.gone, recent.order
        changed = any(edit is not None for edit in (patch.extracted, patch.pending, opened, recent))
    patch.conversations = _whole_dict(base.conversations, new.conversations)
    return changed or patch.conversations is not None


def _whole_dict(base: dict[str, int], new: dict[str, int]) -> dict[str, int] | None:
    return None if base == new and list(base) == list(new) else new


def _apply_pair(pair: PairMemories, edit: PairEdit) -> None:
    if edit.episodic is not None:
        pair.episodic = apply_list_edit(pair.episodic, edit.episodic)
    if edit.semantic is not None:
        pair.semantic = apply_list_edit(pair.semantic, edit.semantic)
    if edit.procedural is not None:
        pair.procedural = apply_list_edit(pair.procedural, edit.procedural)


def apply_patch(document: NpcDocument, patch: NpcPatch) -> None:
    """Apply ``patch`` to ``document`` (the document of its base), in place.
    ``ValueError`` if it does not fit."""
    document.name, document.faction, document.archetype = patch.name, patch.faction, patch.archetype
    document.room, document.traits, document.saved_at = patch.room, patch.traits, patch.saved_at
    bank = document.bank
    if patch.world is not None:
        _apply_pair(bank.world, patch.world)
    if patch.pairs or patch.pairs_gone or patch.pairs_order is not None:
        players = bank.players
        for player in patch.pairs_gone:
            if player not in players:
                raise ValueError(f"removes the memories of {player!r}, which are not there")
            del players[player]
        for player, edit in patch.pairs.items():
            pair = players.get(player)
            if pair is None:
                pair = players[player] = PairMemories()
            _apply_pair(pair, edit)
        bank.players = apply_dict_edit(players, {}, (), patch.pairs_order)
    if patch.next_id is not None:
        bank.next_id = patch.next_id
    if patch.milestones is not None:
        bank.milestones = patch.milestones
    rels = document.relationships
    rels.by_player = apply_dict_edit(
        rels.by_player, patch.relationships, patch.relationships_gone, patch.relationships_order
    )
    working = document.working
    working.open = apply_dict_edit(working.open, patch.open, patch.open_gone, patch.open_order)
    working.recent = apply_dict_edit(working.recent, patch.recent, patch.recent_gone, patch.recent_order)
    if patch.conversations is not None:
        working.conversations = patch.conversations
    if patch.extracted is not None:
        working.extracted = apply_list_edit(working.extracted, patch.extracted)
    if patch.pending is not None:
        working.pending = apply_list_edit(working.pending, patch.pending)
    knowledge = document.knowledge
    if patch.facts is not None:
        knowledge.facts = apply_list_edit(knowledge.facts, patch.facts)
    if patch.facts_next_id is not None:
        knowledge.next_id = patch.facts_next_id


# ---------------------------------------------------------------------- journal records


class SegmentHeader(msgspec.Struct, tag="segment", kw_only=True):
    """First record of every journal segment."""

    schema_version: int = SCHEMA_VERSION


class Put(msgspec.Struct, tag="put", kw_only=True):
    """A whole document (its canonical JSON, as a shard holds it)."""

    lsn: int
    key: str
    kind: str
    data: bytes


class Delete(msgspec.Struct, tag="delete", kw_only=True):
    """The document of ``key`` is gone."""

    lsn: int
    key: str


class MetaRecord(msgspec.Struct, tag="meta", kw_only=True):
    """The store metadata as of this point (ends a snapshot round or a save)."""

    lsn: int
    meta: StoreMeta


Record = SegmentHeader | Put | NpcPatch | Delete | MetaRecord
"""Any journal record (a tagged union on ``type``)."""


class HeadOnly(msgspec.Struct, kw_only=True):
    lsn: int = 0
    key: str = ""


class PutHead(HeadOnly, tag="put"):
    pass


class PatchHead(HeadOnly, tag="patch"):
    base: int = 0


class DeleteHead(HeadOnly, tag="delete"):
    pass


class MetaHead(HeadOnly, tag="meta"):
    pass


class SegmentHead(HeadOnly, tag="segment"):
    schema_version: int = SCHEMA_VERSION


RecordHead = PutHead | PatchHead | DeleteHead | MetaHead | SegmentHead
"""A record's type, lsn and key only (the rest is skipped while decoding)."""

record_encoder = msgspec.msgpack.Encoder()
record_decoder = msgspec.msgpack.Decoder(Record)
head_decoder = msgspec.msgpack.Decoder(RecordHead)
document_decoder = msgspec.json.Decoder(Document)


__all__ = [
    "BankPart",
    "Capture",
    "Delete",
    "KnowledgePart",
    "MetaRecord",
    "NpcCapture",
    "NpcPatch",
    "PairEdit",
    "PlayerCapture",
    "Put",
    "Record",
    "RecordHead",
    "SegmentHeader",
    "WorkingPart",
    "apply_list_edit",
    "apply_patch",
    "capture_atomically",
    "capture_document",
    "capture_handle",
    "diff",
    "document_of_capture",
    "encode_capture",
    "gil_enabled",
    "list_edit",
    "writer_may_capture",
]
