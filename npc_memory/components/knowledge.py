"""What an NPC knows or believes: facts with evidence and provenance (KnowledgeBase)."""

from __future__ import annotations

from typing import Literal

import msgspec

from npc_memory.components.bounds import Count, Serial, Unit
from npc_memory.components.memory import MemorySource, Scope

FactCategory = Literal["player_trait", "world_event", "location", "npc_gossip", "faction_intel"]
FactSource = Literal["observation", "conversation", "gossip", "authored"]
Disbelief = Literal["outweighed", "corrected", "changed", "contradicted", "denied"]
"""Why a fact stopped being believed: ``outweighed``, a rival claim on the same topic
came with stronger evidence (or as strong and newer); of what a player said about
themselves (an attribute), ``corrected`` when they owned up to it ("the truth is…"),
``changed`` when they said it changed ("I live by the harbour now"), ``contradicted``
when they said otherwise later without a word about it (an inconsistency the NPC
noticed); ``denied``, a claim about a player that the player denied to the NPC, the
denial being the better founded ("Wasn't me." against a rumour)."""

DISBELIEFS: tuple[Disbelief, ...] = ("outweighed", "corrected", "changed", "contradicted", "denied")

FACT_SOURCE_OF: dict[MemorySource, FactSource] = {
    "witnessed": "observation",
    "said": "conversation",
    "claimed": "conversation",
    "heard": "gossip",
    "authored": "authored",
}
"""How a memory's source reads as a fact's (:data:`FactSource`): what the NPC saw is an
observation, what it was told or claimed to it a conversation, hearsay gossip, and the
game's own word authored."""

FACT_CATEGORIES: tuple[FactCategory, ...] = (
    "player_trait",
    "world_event",
    "location",
    "npc_gossip",
    "faction_intel",
)


class Hop(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One step of a fact's journey: ``teller`` told ``listener`` in ``room`` at game time
    ``at``; ``source`` says how (``gossip``, or for the first hop, which has no teller,
    how the first holder learned it)."""

    teller: str | None
    listener: str
    room: str | None
    at: float
    source: FactSource = "gossip"


class Fact(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A belief held (or once held) by one NPC.

    ``origin`` identifies the claim across NPCs: every gossip copy keeps the origin of
    the first-hand fact. Facts compete only as rival claims about the same thing: the
    same ``subject`` and ``topic`` (a fact without a topic, ``None``, competes with
    none: two thefts are two facts). Of rivals, the one with the strongest evidence is
    ``believed``; the others are kept with the game time they stopped being believed
    (``disbelieved_at``), why (``disbelief``) and the id of the fact believed in their
    place then (``displaced_by``). The same claim (subject, topic and content) heard
    again from another origin merges into the fact (``aliases``). ``chain`` is the provenance,
    first-hand learning first. Times in game seconds; ranges in [0, 1].

    ``attribute`` names what a player said about themselves that the fact files (a
    name of the pack's ``[knowledge.attributes]``: ``origin``, ``trade``…); ``private``
    facts (what a player confided) are never passed on as gossip.

    ``scope`` is the privacy scope (see :data:`~npc_memory.components.memory.Scope`):
    ``player``/``session``/``anon`` for a fact about a player (by their consent and
    anonymity), ``social`` for general knowledge, ``profile`` for the pack's authored
    background; gossip copies keep it (``None`` in facts saved before scopes were
    recorded: read as ``session`` for a fact about a player, else ``social``).
    ``game`` is the game it was learned in; ``cloned_from``/``cloned_at`` mark a copy
    made by ``clone``.
    """

    id: str
    origin: str
    content: str
    category: FactCategory = "world_event"
    subject: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    confidence: Unit = 1.0
    importance: Unit = 0.5
    source: FactSource = "observation"
    source_memory: str | None = None
    hops: Count = 0
    chain: tuple[Hop, ...] = ()
    created: float = 0.0
    expires: float | None = None
    locked: bool = False
    believed: bool = True
    disbelieved_at: float | None = None
    disbelief: Disbelief | None = None
    displaced_by: str | None = None
    attribute: str | None = None
    private: bool = False
    aliases: tuple[str, ...] = ()
    """Origins of the same claim heard since, merged into this fact (at most 8 kept)."""
    scope: Scope | None = None
    game: str | None = None
    cloned_from: str | None = None
    cloned_at: float | None = None


class KnowledgeBase(msgspec.Struct, kw_only=True):
    """Every fact of one NPC, oldest first; ``next_id`` numbers new ones (``f1``, ``f2``…)."""

    facts: list[Fact] = msgspec.field(default_factory=list)
    next_id: Serial = 1
