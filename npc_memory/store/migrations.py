"""Upgrading documents written by older schema versions, one version at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from npc_memory.components.memory import SELF
from npc_memory.components.relationship import Relationship
from npc_memory.content.schema import DEFAULT_THRESHOLDS, Threshold
from npc_memory.rules.knowledge import FLAGGED
from npc_memory.rules.relationships import is_beyond
from npc_memory.store.documents import SCHEMA_VERSION


@dataclass(frozen=True)
class MigrationContext:
    """What migrations may need from the installed content pack."""

    thresholds: tuple[Threshold, ...] = field(default=DEFAULT_THRESHOLDS)


Migration = Callable[[dict[str, Any], MigrationContext], dict[str, Any]]


def _v1_to_v2(document: dict[str, Any], context: MigrationContext) -> dict[str, Any]:
    """Schema 2 records which thresholds stand crossed. Derive it from the stored
    values, so an upgrade does not re-fire events for crossings that already happened."""
    if document.get("kind") == "npc":
        relationships = document.get("relationships", {}).get("by_player", {})
        for key, raw in relationships.items():
            rel = msgspec.convert(raw, type=Relationship)
            raw["active_thresholds"] = [t.name for t in context.thresholds if is_beyond(t, rel)]
            relationships[key] = raw
    return document


def _v2_to_v3(document: dict[str, Any], context: MigrationContext) -> dict[str, Any]:
    """Schema 3 records each memory's ``actor`` and ``source``. What an older memory
    becomes (see :func:`actor_and_source`): about a player, that player's deed
    (``actor``: their key) as it counted before; about the world, by no one known."""
    if document.get("kind") == "npc":
        bank = document.get("bank")
        if isinstance(bank, dict):
            players = bank.get("players")
            pairs = [(None, bank.get("world"))]
            if isinstance(players, dict):
                pairs += list(players.items())
            for key, pair in pairs:
                if isinstance(pair, dict):
                    for kind in ("episodic", "semantic", "procedural"):
                        migrate_memories(pair.get(kind), key)
    return document


def migrate_memories(memories: Any, player: str | None) -> None:
    """Give the schema-2 memory dicts among ``memories`` (a list; other items, such as
    a journal edit's positions, are left alone) of the pair of ``player`` (``None``: the
    world) their ``actor`` and ``source``, in place."""
    if not isinstance(memories, list):
        return
    for memory in memories:
        if isinstance(memory, dict) and "source" not in memory:
            memory["actor"], memory["source"] = actor_and_source(memory, player)


def actor_and_source(memory: dict[str, Any], player: str | None) -> tuple[str | None, str]:
    """The ``actor`` and ``source`` of a schema-2 memory of the pair of ``player``
    (``None``: the world), read from how the plugin's default wording put it:

    - a flagged line kept quoted is what someone said (actor unknown, ``said``);
    - 'I told Alice: "..."' is the NPC's own words (``"self"``, ``said``);
    - 'Alice told me they ...' is the player's claim (``claimed``); 'Alice told me:
      "..."' and 'Alice said: "..."' what they said (``said``);
    - a memory from no conversation and no episodes is the game's own (``authored``);
    - anything else the player's witnessed deed, as it counted before.

    About the world, the actor is unknown (``None``)."""
    raw = memory.get("content")
    content = raw if isinstance(raw, str) else ""
    tags = memory.get("tags")
    if isinstance(tags, list) and FLAGGED in tags:
        return None, "said"
    if content.startswith("I told "):
        return SELF, "said"
    actor = player
    if " told me they " in content:
        return actor, "claimed"
    if ' told me: "' in content or ' said: "' in content:
        return actor, "said"
    if memory.get("source_conversation") is None and not memory.get("source_episodes"):
        return actor, "authored"
    return actor, "witnessed"


def _v3_to_v4(document: dict[str, Any], context: MigrationContext) -> dict[str, Any]:
    """Schema 4: a fact's topic is what the game or the reader named as the thing it is
    a claim about, or none (see :func:`migrate_facts`)."""
    if document.get("kind") == "npc":
        knowledge = document.get("knowledge")
        if isinstance(knowledge, dict):
            migrate_facts(knowledge.get("facts"))
    return document


def migrate_facts(facts: Any) -> None:
    """Give the schema-3 fact dicts among ``facts`` (a list; other items, such as a
    journal edit's positions, are left alone) the topic schema 4 reads, in place.

    Schema 3 gave a fact without a topic its first tag (``"general"`` when untagged),
    and the reader filed what a player said under its first known tag, so distinct
    deeds competed and only one was believed. A topic equal to that default, or on a
    fact from a conversation, becomes none; such a fact that had stopped being believed
    is believed again (it lost only to that default: the same claim merges, never
    competes). A topic the game named otherwise is kept, with what it decided."""
    if not isinstance(facts, list):
        return
    for fact in facts:
        if not isinstance(fact, dict) or "disbelief" in fact:
            continue
        tags = fact.get("tags")
        default = tags[0] if isinstance(tags, list) and tags else "general"
        if fact.get("topic", "general") == default or fact.get("source") == "conversation":
            fact["topic"] = None
            if fact.get("believed") is False:
                fact["believed"], fact["disbelieved_at"] = True, None


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}
"""``MIGRATIONS[n]`` turns a schema-n document into a schema-(n+1) one."""


def migrate_document(document: dict[str, Any], version: int, context: MigrationContext) -> dict[str, Any]:
    """Upgrade a raw ``document`` of schema ``version`` to the current schema."""
    while version < SCHEMA_VERSION:
        document = MIGRATIONS[version](document, context)
        version += 1
    document["v"] = SCHEMA_VERSION
    return document


OLDEST_JOURNAL = 2
"""The oldest schema whose TinyDB journal records are migrated as they are read (older
segments are refused: fold them with the release that wrote them)."""


def migrate_record(record: dict[str, Any], version: int, context: MigrationContext) -> dict[str, Any]:
    """Upgrade a raw TinyDB journal ``record`` (its msgpack decoded to builtins) of
    schema ``version`` (at least :data:`OLDEST_JOURNAL`) to the current schema, in
    place: a whole document (``put``) as :func:`migrate_document` does; a change to an
    NPC (``patch``) by giving the memories and facts it sets what schemas 3 and 4
    record of them."""
    kind = record.get("type")
    if kind == "put":
        data = record.get("data")
        if isinstance(data, bytes | bytearray | memoryview):
            document = msgspec.json.decode(bytes(data))
            if isinstance(document, dict):
                record["data"] = msgspec.json.encode(migrate_document(document, version, context))
    elif kind == "patch":
        if version < 3:
            edits: list[tuple[str | None, Any]] = [(None, record.get("world"))]
            pairs = record.get("pairs")
            if isinstance(pairs, dict):
                edits += list(pairs.items())
            for key, edit in edits:
                if isinstance(edit, dict):
                    for memories in edit.values():
                        migrate_memories(memories, key)
        if version < 4:
            migrate_facts(record.get("facts"))
    return record
