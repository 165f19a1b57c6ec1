"""Snapshot records: consistent captures of a document's components, the patch between
two captures of one document, and the journal records that carry them.

A *capture* is taken on the tick thread: a shallow copy of every container of an
NPC's components (lists and dicts of frozen records: pointer copies, no encoding), so
the writer thread can read it while the game keeps mutating the live components.

A *patch* is computed on the writer thread between the capture last written for a key
and a new one. Records are immutable, so a list that changed is described by runs of
the previous list it kept (``start, stop`` index pairs) and the records that are new:
learning one fact out of 500 writes one fact, not 500. Dicts keyed by player carry
the entries set and removed (and their order when it changed), small dicts whole.
Applying a patch to the document of the base capture gives the new capture's document
exactly (same records, same order).

Journal records (msgpack, tagged by ``type``) carry a log sequence number ``lsn``,
unique and increasing over the life of a store; a patch names the ``base`` lsn it
applies to, so replay can tell a patch already folded into a shard from one still
to apply, and refuses one whose base is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from npc_memory.components import (
    ConversationSummary,
    EpisodicMemory,
    Fact,
    KnowledgeBase,
    MemoryBank,
    NpcTraits,
    PairMemories,
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
    PlayerDocument,
    StoreMeta,
    encode_document,
)

T = TypeVar("T")
V = TypeVar("V")

# ---------------------------------------------------------------------- captures


class NpcCapture(msgspec.Struct):
    """The state of one NPC's document at one instant, in containers of its own
    (which may be shared with other captures of the NPC: captures are never changed)."""

    key: str
    name: str
    faction: str | None
    archetype: str | None
    room: str | None
    traits: NpcTraits
    saved_at: float
    world: PairMemories
    pairs: dict[str, PairMemories]
    next_id: int
    milestones: dict[str, int]
    relationships: dict[str, Relationship]
    working: WorkingMemory
    facts: list[Fact]
    facts_next_id: int


class PlayerCapture(msgspec.Struct):
    """The state of one player's document at one instant (all of it immutable)."""

    key: str
    name: str
    faction: str | None
    room: str | None
    profile: PlayerProfile
    saved_at: float


Capture = NpcCapture | PlayerCapture


def capture_npc(
    key: str,
    name: str,
    faction: str | None,
    archetype: str | None,
    room: str | None,
    traits: NpcTraits,
    bank: MemoryBank,
    relationships: Relationships,
    working: WorkingMemory,
    knowledge: KnowledgeBase,
    saved_at: float,
    last: NpcCapture | None = None,
) -> NpcCapture:
    """Copy the containers of an NPC's components (pointer copies, no encoding).

    Containers equal to those of ``last`` (an earlier capture of this NPC) are taken
    from it instead of copied. Comparing containers of the same records checks
    pointers in C (a pair, a relationship table, the working memory: one call each),
    while a copy builds objects and touches every record's reference count."""
    if last is None:
        return NpcCapture(
            key,
            name,
            faction,
            archetype,
            room,
            traits,
            saved_at,
            _copy_pair(bank.world),
            {p: _copy_pair(v) for p, v in bank.players.items()},
            bank.next_id,
            bank.milestones.copy(),
            relationships.by_player.copy(),
            WorkingMemory(
                open={p: t[:] for p, t in working.open.items()},
                recent={p: s[:] for p, s in working.recent.items()},
                conversations=working.conversations.copy(),
                extracted=working.extracted[:],
            ),
            knowledge.facts[:],
            knowledge.next_id,
        )
    return NpcCapture(
        key,
        name,
        faction,
        archetype,
        room,
        traits,
        saved_at,
        last.world if bank.world == last.world else _copy_pair(bank.world),
        _pairs(bank.players, last.pairs),
        bank.next_id,
        _dict(bank.milestones, last.milestones),
        _dict(relationships.by_player, last.relationships),
        _working(working, last.working),
        _list(knowledge.facts, last.facts),
        knowledge.next_id,
    )


def _copy_pair(pair: PairMemories) -> PairMemories:
    return PairMemories(episodic=pair.episodic[:], semantic=pair.semantic[:], procedural=pair.procedural[:])


def _list(live: list[T], last: list[T]) -> list[T]:
    return last if live == last else live[:]


def _dict(live: dict[str, V], last: dict[str, V]) -> dict[str, V]:
    return last if live == last and list(live) == list(last) else live.copy()


def _lists(live: dict[str, list[V]], last: dict[str, list[V]]) -> dict[str, list[V]]:
    if live == last and list(live) == list(last):
        return last
    return {k: _list(v, last[k]) if k in last else v[:] for k, v in live.items()}


def _pairs(live: dict[str, PairMemories], last: dict[str, PairMemories]) -> dict[str, PairMemories]:
    if live == last and list(live) == list(last):
        return last
    pairs = {}
    for player, pair in live.items():
        old = last.get(player)
        pairs[player] = old if old is not None and old == pair else _copy_pair(pair)
    return pairs


def _working(live: WorkingMemory, last: WorkingMemory) -> WorkingMemory:
    if (
        live == last
        and list(live.open) == list(last.open)
        and list(live.recent) == list(last.recent)
        and list(live.conversations) == list(last.conversations)
    ):
        return last
    return WorkingMemory(
        open=_lists(live.open, last.open),
        recent=_lists(live.recent, last.recent),
        conversations=_dict(live.conversations, last.conversations),
        extracted=_list(live.extracted, last.extracted),
    )


def capture_document(document: Document) -> Capture:
    """A capture of a stored document (one that is not in the live world)."""
    if isinstance(document, PlayerDocument):
        return PlayerCapture(
            document.key, document.name, document.faction, document.room, document.profile, document.saved_at
        )
    return capture_npc(
        document.key,
        document.name,
        document.faction,
        document.archetype,
        document.room,
        document.traits,
        document.bank,
        document.relationships,
        document.working,
        document.knowledge,
        document.saved_at,
    )


def document_of_capture(capture: Capture) -> Document:
    """The document a capture holds, sharing the capture's containers: encode it,
    never change it."""
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
    c = capture
    return NpcDocument(
        v=SCHEMA_VERSION,
        key=c.key,
        name=c.name,
        faction=c.faction,
        archetype=c.archetype,
        room=c.room,
        traits=c.traits,
        bank=MemoryBank(world=c.world, players=c.pairs, next_id=c.next_id, milestones=c.milestones),
        relationships=Relationships(by_player=c.relationships),
        working=c.working,
        knowledge=KnowledgeBase(facts=c.facts, next_id=c.facts_next_id),
        saved_at=c.saved_at,
    )


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
    facts: list[int | Fact] | None = None
    facts_next_id: int | None = None


def list_edit(base: list[T], new: list[T]) -> list[Any] | None:
    """The edit turning ``base`` into ``new`` (``None`` if equal): runs of ``base``
    kept, as ``start, stop`` pairs, and new records, in order."""
    if new == base:  # identical records compare by identity first: O(n) pointer checks
        return None
    n = len(base)
    if n and len(new) >= n and new[:n] == base:  # the common case: appended
        return [0, n, *new[n:]]
    where = {id(record): i for i, record in enumerate(base)}  # base keeps its records alive
    ops: list[Any] = []
    start = stop = -1
    for record in new:
        i = where.get(id(record), -1)
        if i >= 0 and i == stop:
            stop += 1
            continue
        if start >= 0:
            ops += (start, stop)
        if i >= 0:
            start, stop = i, i + 1
        else:
            start = stop = -1
            ops.append(record)
    if start >= 0:
        ops += (start, stop)
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


_EMPTY = PairMemories()


def _pair_edit(old: PairMemories, new: PairMemories) -> PairEdit:
    return PairEdit(
        list_edit(old.episodic, new.episodic),
        list_edit(old.semantic, new.semantic),
        list_edit(old.procedural, new.procedural),
    )


def diff(base: NpcCapture, new: NpcCapture, *, lsn: int, base_lsn: int) -> NpcPatch | None:
    """The patch from ``base`` to ``new`` (two captures of one NPC), or ``None`` if
    nothing persisted changed (``saved_at`` aside)."""
    world = None if base.world == new.world else _pair_edit(base.world, new.world)
    pairs = dict_edit(base.pairs, new.pairs)
    relationships = dict_edit(base.relationships, new.relationships)
    old, now = base.working, new.working
    open_ = dict_edit(old.open, now.open)
    recent = dict_edit(old.recent, now.recent)
    conversations = _whole_dict(old.conversations, now.conversations)
    milestones = _whole_dict(base.milestones, new.milestones)
    extracted = list_edit(old.extracted, now.extracted)
    facts = list_edit(base.facts, new.facts)
    head_same = (base.name, base.faction, base.archetype, base.room, base.traits) == (
        new.name,
        new.faction,
        new.archetype,
        new.room,
        new.traits,
    )
    if (
        head_same
        and world is None
        and pairs is None
        and relationships is None
        and open_ is None
        and recent is None
        and conversations is None
        and milestones is None
        and extracted is None
        and facts is None
        and base.next_id == new.next_id
        and base.facts_next_id == new.facts_next_id
    ):
        return None
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
        world=world,
        next_id=None if base.next_id == new.next_id else new.next_id,
        milestones=milestones,
        conversations=conversations,
        extracted=extracted,
        facts=facts,
        facts_next_id=None if base.facts_next_id == new.facts_next_id else new.facts_next_id,
    )
    if pairs is not None:
        patch.pairs = {p: _pair_edit(base.pairs.get(p, _EMPTY), v) for p, v in pairs.set.items()}
        patch.pairs_gone, patch.pairs_order = pairs.gone, pairs.order
    if relationships is not None:
        patch.relationships = relationships.set
        patch.relationships_gone, patch.relationships_order = relationships.gone, relationships.order
    if open_ is not None:
        patch.open, patch.open_gone, patch.open_order = open_.set, open_.gone, open_.order
    if recent is not None:
        patch.recent, patch.recent_gone, patch.recent_order = recent.set, recent.gone, recent.order
    return patch


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
    "Capture",
    "Delete",
    "MetaRecord",
    "NpcCapture",
    "NpcPatch",
    "PairEdit",
    "PlayerCapture",
    "Put",
    "Record",
    "RecordHead",
    "SegmentHeader",
    "apply_list_edit",
    "apply_patch",
    "capture_document",
    "capture_npc",
    "diff",
    "document_of_capture",
    "encode_capture",
    "list_edit",
]
