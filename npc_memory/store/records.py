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

import gc
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import msgspec

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


class PairState(msgspec.Struct, gc=False):
    """One NPC–player pair's memories, captured."""

    episodic: tuple[EpisodicMemory, ...] = ()
    semantic: tuple[SemanticMemory, ...] = ()
    procedural: tuple[ProceduralMemory, ...] = ()


class BankState(msgspec.Struct, gc=False):
    """A :class:`~npc_memory.components.MemoryBank`, captured."""

    world: PairState
    players: dict[str, PairState]
    next_id: int
    milestones: dict[str, int]


class RelationshipsState(msgspec.Struct, gc=False):
    """A :class:`~npc_memory.components.Relationships`, captured."""

    by_player: dict[str, Relationship]


class WorkingState(msgspec.Struct, gc=False):
    """A :class:`~npc_memory.components.WorkingMemory`, captured."""

    open: dict[str, tuple[Turn, ...]]
    recent: dict[str, tuple[ConversationSummary, ...]]
    conversations: dict[str, int]
    extracted: tuple[str, ...]


class KnowledgeState(msgspec.Struct, gc=False):
    """A :class:`~npc_memory.components.KnowledgeBase`, captured."""

    facts: tuple[Fact, ...]
    next_id: int


class LocationState(msgspec.Struct, gc=False, rename={"room": "_room"}):
    """A :class:`~npc_memory.components.Location`, captured (read from its slot, so
    capturing runs no Python code)."""

    room: str | None = None


class NpcCapture(msgspec.Struct, gc=False, kw_only=True):
    """The state of one NPC's document at one instant, in containers of its own.

    Made by one ``msgspec.convert`` call over the NPC's handle (:func:`capture_npc`):
    C code that copies every list and dict of the components into tuples and dicts
    and keeps the frozen records themselves. No structs here are tracked by the
    garbage collector and the tuples stop being tracked once it has seen them, so a
    capture that lives until the next one is written costs collections little. A
    capture takes part in no reference cycle and is never changed once made (but for
    ``saved_at`` and ``archetype``, set right after)."""

    identity: Identity
    faction: FactionMember
    location: LocationState
    traits: NpcTraits
    bank: BankState
    relationships: RelationshipsState
    working: WorkingState
    knowledge: KnowledgeState
    archetype: str | None = None
    saved_at: float = 0.0

    @property
    def key(self) -> str:
        """The NPC's key."""
        return self.identity.key


class PlayerCapture(msgspec.Struct, gc=False, kw_only=True):
    """The state of one player's document at one instant."""

    identity: Identity
    faction: FactionMember
    location: LocationState
    profile: PlayerProfile
    saved_at: float = 0.0

    @property
    def key(self) -> str:
        """The player's key."""
        return self.identity.key


Capture = NpcCapture | PlayerCapture


def capture_handle(handle: Any, saved_at: float) -> Capture:
    """Capture a live NPC's or player's handle (one C call; see :func:`capture_atomically`)."""
    captured: Capture
    if hasattr(handle, "bank"):
        captured = msgspec.convert(handle, NpcCapture, from_attributes=True)
        captured.archetype = captured.traits.archetype
    else:
        captured = msgspec.convert(handle, PlayerCapture, from_attributes=True)
    captured.saved_at = saved_at
    return captured


def capture_atomically(handle: Any, saved_at: float) -> Capture:
    """:func:`capture_handle` from a thread other than the one that changes the
    components: with the garbage collector paused, the capture is one C call that
    neither releases the GIL nor runs Python code, so no other thread runs meanwhile
    and it sees the handle at one instant. Only valid where a GIL exists
    (:func:`gil_enabled`)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()  # a collection could run finalizers: Python code, a thread switch
    try:
        if hasattr(handle, "bank"):
            captured: Capture = msgspec.convert(handle, NpcCapture, from_attributes=True)
        else:
            captured = msgspec.convert(handle, PlayerCapture, from_attributes=True)
    finally:
        if paused:
            gc.enable()
    if isinstance(captured, NpcCapture):
        captured.archetype = captured.traits.archetype
    captured.saved_at = saved_at
    return captured


def gil_enabled() -> bool:
    """Whether this interpreter has a global interpreter lock (free-threaded builds of
    Python 3.13+ may not)."""
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def capture_document(document: Document) -> Capture:
    """A capture of a stored document (one that is not in the live world)."""
    identity = Identity(key=document.key, name=document.name)
    location = LocationState(document.room)
    if isinstance(document, PlayerDocument):
        return PlayerCapture(
            identity=identity,
            faction=FactionMember(faction=document.faction),
            location=location,
            profile=document.profile,
            saved_at=document.saved_at,
        )
    return NpcCapture(
        identity=identity,
        faction=FactionMember(faction=document.faction),
        location=location,
        traits=document.traits,
        bank=msgspec.convert(document.bank, BankState, from_attributes=True),
        relationships=msgspec.convert(document.relationships, RelationshipsState, from_attributes=True),
        working=msgspec.convert(document.working, WorkingState, from_attributes=True),
        knowledge=msgspec.convert(document.knowledge, KnowledgeState, from_attributes=True),
        archetype=document.archetype,
        saved_at=document.saved_at,
    )


def document_of_capture(capture: Capture) -> Document:
    """The document a capture holds, sharing the capture's records: encode it, never
    change it (its sequences are tuples)."""
    c = capture
    if isinstance(c, PlayerCapture):
        return PlayerDocument(
            v=SCHEMA_VERSION,
            key=c.identity.key,
            name=c.identity.name,
            faction=c.faction.faction,
            room=c.location.room,
            profile=c.profile,
            saved_at=c.saved_at,
        )
    bank, working = c.bank, c.working
    return NpcDocument(
        v=SCHEMA_VERSION,
        key=c.identity.key,
        name=c.identity.name,
        faction=c.faction.faction,
        archetype=c.archetype,
        room=c.location.room,
        traits=c.traits,
        bank=MemoryBank(
            world=_pair(bank.world),
            players={p: _pair(v) for p, v in bank.players.items()},
            next_id=bank.next_id,
            milestones=bank.milestones,
        ),
        relationships=Relationships(by_player=c.relationships.by_player),
        working=WorkingMemory(
            open=working.open,  # type: ignore[arg-type]  # tuples encode as lists
            recent=working.recent,  # type: ignore[arg-type]
            conversations=working.conversations,
            extracted=working.extracted,  # type: ignore[arg-type]
        ),
        knowledge=KnowledgeBase(facts=c.knowledge.facts, next_id=c.knowledge.next_id),  # type: ignore[arg-type]
        saved_at=c.saved_at,
    )


def _pair(pair: PairState) -> PairMemories:
    return PairMemories(
        episodic=pair.episodic,  # type: ignore[arg-type]
        semantic=pair.semantic,  # type: ignore[arg-type]
        procedural=pair.procedural,  # type: ignore[arg-type]
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


def list_edit(base: Sequence[T], new: Sequence[T]) -> list[Any] | None:
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


_EMPTY = PairState()


def _pair_edit(old: PairState, new: PairState) -> PairEdit:
    return PairEdit(
        list_edit(old.episodic, new.episodic),
        list_edit(old.semantic, new.semantic),
        list_edit(old.procedural, new.procedural),
    )


def diff(base: NpcCapture, new: NpcCapture, *, lsn: int, base_lsn: int) -> NpcPatch | None:
    """The patch from ``base`` to ``new`` (two captures of one NPC), or ``None`` if
    nothing persisted changed (``saved_at`` aside)."""
    old_bank, bank = base.bank, new.bank
    world = None if old_bank.world == bank.world else _pair_edit(old_bank.world, bank.world)
    pairs = dict_edit(old_bank.players, bank.players)
    milestones = _whole_dict(old_bank.milestones, bank.milestones)
    relationships = dict_edit(base.relationships.by_player, new.relationships.by_player)
    old_working, working = base.working, new.working
    open_ = dict_edit(old_working.open, working.open)
    recent = dict_edit(old_working.recent, working.recent)
    conversations = _whole_dict(old_working.conversations, working.conversations)
    extracted = list_edit(old_working.extracted, working.extracted)
    facts = list_edit(base.knowledge.facts, new.knowledge.facts)
    head = (new.identity.name, new.faction.faction, new.archetype, new.location.room, new.traits)
    if (
        head == (base.identity.name, base.faction.faction, base.archetype, base.location.room, base.traits)
        and world is None
        and pairs is None
        and relationships is None
        and open_ is None
        and recent is None
        and conversations is None
        and milestones is None
        and extracted is None
        and facts is None
        and old_bank.next_id == bank.next_id
        and base.knowledge.next_id == new.knowledge.next_id
    ):
        return None
    patch = NpcPatch(
        lsn=lsn,
        key=new.identity.key,
        base=base_lsn,
        name=new.identity.name,
        faction=new.faction.faction,
        archetype=new.archetype,
        room=new.location.room,
        traits=new.traits,
        saved_at=new.saved_at,
        world=world,
        next_id=None if old_bank.next_id == bank.next_id else bank.next_id,
        milestones=milestones,
        conversations=conversations,
        extracted=extracted,
        facts=facts,
        facts_next_id=None if base.knowledge.next_id == new.knowledge.next_id else new.knowledge.next_id,
    )
    if pairs is not None:
        patch.pairs = {p: _pair_edit(old_bank.players.get(p, _EMPTY), v) for p, v in pairs.set.items()}
        patch.pairs_gone, patch.pairs_order = pairs.gone, pairs.order
    if relationships is not None:
        patch.relationships = relationships.set
        patch.relationships_gone, patch.relationships_order = relationships.gone, relationships.order
    if open_ is not None:
        patch.open = {k: list(v) for k, v in open_.set.items()}
        patch.open_gone, patch.open_order = open_.gone, open_.order
    if recent is not None:
        patch.recent = {k: list(v) for k, v in recent.set.items()}
        patch.recent_gone, patch.recent_order = recent.gone, recent.order
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
    "capture_atomically",
    "capture_document",
    "capture_handle",
    "diff",
    "document_of_capture",
    "encode_capture",
    "list_edit",
]
