"""Upgrading documents written by older schema versions, one version at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from npc_memory.components.relationship import Relationship
from npc_memory.content.schema import DEFAULT_THRESHOLDS, Threshold
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


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}
"""``MIGRATIONS[n]`` turns a schema-n document into a schema-(n+1) one."""


def migrate_document(document: dict[str, Any], version: int, context: MigrationContext) -> dict[str, Any]:
    """Upgrade a raw ``document`` of schema ``version`` to the current schema."""
    while version < SCHEMA_VERSION:
        document = MIGRATIONS[version](document, context)
        version += 1
    document["v"] = SCHEMA_VERSION
    return document
