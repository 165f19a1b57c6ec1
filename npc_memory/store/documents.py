"""What a store holds: one document per NPC and per player, store metadata, and
audit entries. Documents are msgspec Structs; their JSON is the stable on-disk form.

Each document carries the schema version ``v`` it was written with (required: a
document without one is from schema 1), so an older document is migrated on load
(see :mod:`npc_memory.store.migrations`).
"""

from __future__ import annotations

import base64
import random
from array import array
from typing import Any

import msgspec

from npc_memory.components import (
    KnowledgeBase,
    MemoryBank,
    NpcTraits,
    PlayerProfile,
    Relationships,
    WorkingMemory,
)
from npc_memory.components.jobs import ExtractionJob

SCHEMA_VERSION = 4
"""Current schema version of documents and store metadata.

History: 1 — relationships had no record of which thresholds stood crossed;
2 — ``Relationship.active_thresholds`` (threshold events fire once per crossing, also
across restarts); 3 — every memory records its ``actor`` and ``source`` (who did it,
and how the NPC knows: :func:`npc_memory.store.migrations.actor_and_source` says what
older memories become, in documents, exports and a TinyDB journal alike); 4 — a fact
competes only with rival claims about the topic the game or reader named (distinct deeds
are distinct facts), and one no longer believed says why and in favour of which fact
(:func:`npc_memory.store.migrations.migrate_facts` says what older facts become). Fields
added since with defaults need no migration: a document written before them reads
with the default (memories' and facts' ``game`` is then ``None``, a fact's ``scope``
``None``: see :func:`npc_memory.rules.privacy.fact_scope`; a memory's ``retracted``
``None``: nothing the player took back).
"""


class NpcDocument(msgspec.Struct, kw_only=True, tag="npc", tag_field="kind"):
    """Everything persisted about one NPC. Who it is and where it stands are restored
    from the host's ``add_npc`` call (these saved values fill in what the call omits);
    what it lived through (memories, relationships) from here. ``saved_at`` in game seconds."""

    v: int
    key: str
    name: str
    faction: str | None = None
    archetype: str | None = None
    room: str | None = None
    traits: NpcTraits = msgspec.field(default_factory=NpcTraits)
    bank: MemoryBank = msgspec.field(default_factory=MemoryBank)
    relationships: Relationships = msgspec.field(default_factory=Relationships)
    working: WorkingMemory = msgspec.field(default_factory=WorkingMemory)
    knowledge: KnowledgeBase = msgspec.field(default_factory=KnowledgeBase)
    saved_at: float = 0.0


class Part:
    """The parts of an NPC's document a change can touch, as bits of a mask: a
    snapshot copies and compares only the parts marked since the key was last written
    (who it is and where it stands are always taken). Marking more parts than changed
    is always safe; marking fewer loses the change."""

    BANK = 1
    """Memories (the world's and each player's), their next id, milestones."""
    RELATIONSHIPS = 2
    """How the NPC regards each player."""
    WORKING = 4
    """Open conversations, recent summaries, conversation counts, extracted ids."""
    KNOWLEDGE = 8
    """Facts and their next id."""
    ALL = 15


class PlayerDocument(msgspec.Struct, kw_only=True, tag="player", tag_field="kind"):
    """Everything persisted about one player (consent and anonymity among it)."""

    v: int
    key: str
    name: str
    faction: str | None = None
    room: str | None = None
    profile: PlayerProfile = msgspec.field(default_factory=PlayerProfile)
    saved_at: float = 0.0


Document = NpcDocument | PlayerDocument
"""A stored document, tagged by ``kind`` ("npc" or "player")."""


class StoreMeta(msgspec.Struct, kw_only=True):
    """Store-wide state: schema version, world, pack, game clock (game seconds), the
    state of the game's random generator (``rng_state``: base64 of its 625 32-bit words;
    ``rng_gauss``: its cached gaussian, if any) and of gossip's (``gossip_rng_state``,
    ``gossip_rng_gauss``; ``None`` in a store saved before gossip had its own: it
    restarts from the seed), the number of completed snapshots, and
    the extraction jobs not yet applied (restored into the queue on load), and what
    grounding did with an LLM's memories over the store's life (``grounding``: counts
    by ``"<outcome>: <reason>"``, see :mod:`npc_memory.extraction.grounding`)."""

    schema_version: int = SCHEMA_VERSION
    world: str = ""
    pack: str = ""
    seed: int = 0
    clock: float = 0.0
    rng_state: str | None = None
    rng_gauss: float | None = None
    gossip_rng_state: str | None = None
    gossip_rng_gauss: float | None = None
    snapshots: int = 0
    pending_extractions: list[ExtractionJob] = msgspec.field(default_factory=list)
    grounding: dict[str, int] = msgspec.field(default_factory=dict)


def pack_rng_state(rng: random.Random) -> tuple[str, float | None]:
    """The state of ``rng`` as (base64 words, cached gaussian)."""
    version, words, gauss = rng.getstate()
    if version != 3:
        raise ValueError(f"unsupported random generator state version {version}")
    return base64.b64encode(array("I", words).tobytes()).decode("ascii"), gauss


def unpack_rng_state(rng: random.Random, state: str, gauss: float | None) -> None:
    """Restore ``rng`` to a state made by :func:`pack_rng_state`."""
    words = array("I")
    words.frombytes(base64.b64decode(state, validate=True))
    rng.setstate((3, tuple(words), gauss))


class AuditEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One line of the append-only audit log: what was done (``action``), to what
    (``target``: an NPC key, a store path, or a player's pseudonym, never a forgotten
    player's key or name), by whom (``actor``, as the caller named itself), when (game
    seconds and wall-clock UTC ISO time), how many items it touched (``counts``), and
    any details."""

    action: str
    target: str = ""
    game_time: float = 0.0
    wall_time: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    actor: str = ""
    counts: dict[str, int] = msgspec.field(default_factory=dict)


class EncodedDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A document already encoded as its canonical JSON (``data``), ready for the
    store's writer without touching live components."""

    key: str
    kind: str
    data: bytes


_encoder = msgspec.json.Encoder()


def encode_document(document: Document) -> EncodedDocument:
    """Encode ``document`` to its canonical JSON."""
    kind = "npc" if isinstance(document, NpcDocument) else "player"
    return EncodedDocument(key=document.key, kind=kind, data=_encoder.encode(document))
