"""Content packs: the TOML schema (pydantic), the loader and the bundled packs."""

from npc_memory.content.loader import bundled_packs, load_pack, parse_pack, validate_pack
from npc_memory.content.schema import (
    Archetype,
    Attitude,
    Budgets,
    Faction,
    MemoryRules,
    Pack,
    PrivacyRules,
    RelationshipRules,
    StageLadder,
    Threshold,
    Traits,
)

__all__ = [
    "Archetype",
    "Attitude",
    "Budgets",
    "Faction",
    "MemoryRules",
    "Pack",
    "PrivacyRules",
    "RelationshipRules",
    "StageLadder",
    "Threshold",
    "Traits",
    "bundled_packs",
    "load_pack",
    "parse_pack",
    "validate_pack",
]
