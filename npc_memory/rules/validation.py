"""Checking arguments at the plugin's edge: every failure names the argument and the
problem (``InvalidArgumentError``, or ``PrivacyError`` for scopes)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from npc_memory.clock import MAX_GAME_TIME
from npc_memory.components import (
    MEMORY_SOURCES,
    SCOPES,
    MemorySource,
    PlayerHandle,
    Scope,
    TriggerContext,
)
from npc_memory.components.knowledge import FACT_CATEGORIES
from npc_memory.content.schema import (
    GAME_ONLY_TAGS,
    MAX_CONTENT_CHARS,
    MAX_KEY_CHARS,
    MAX_RECALL_K,
    MAX_TAG_CHARS,
    Limits,
)
from npc_memory.errors import InvalidArgumentError, PrivacyError

__all__ = [
    "GAME_ONLY_TAGS",
    "MAX_CONTENT_CHARS",
    "MAX_KEY_CHARS",
    "MAX_RECALL_K",
    "MAX_TAG_CHARS",
    "check_category",
    "check_flag",
    "check_game_seconds",
    "check_include",
    "check_int",
    "check_key_or_none",
    "check_keys",
    "check_positive",
    "check_query",
    "check_room",
    "check_scope",
    "check_source",
    "check_tags",
    "check_text",
    "check_trigger",
    "check_unit",
]

DEFAULT_LIMITS = Limits()
"""The pack's default ``[limits]``."""


def check_text(field: str, value: str, limit: int) -> str:
    """``value`` stripped; it must be a non-empty string of at most ``limit`` characters."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string, got {value!r}")
    text = value.strip()
    if not text:
        raise InvalidArgumentError(f"{field} must not be empty")
    if len(text) > limit:
        raise InvalidArgumentError(f"{field} is {len(text)} characters; the limit is {limit}")
    return text


def check_room(room: str | None) -> str | None:
    """A room name, or ``None``."""
    return None if room is None else check_text("room", room, MAX_KEY_CHARS)


def check_category(category: str | None) -> None:
    """``category`` must be a fact category (or ``None``)."""
    if category is not None and category not in FACT_CATEGORIES:
        raise InvalidArgumentError(f"category must be one of {', '.join(FACT_CATEGORIES)}, got {category!r}")


def check_positive(field: str, value: float, unit: str = "game seconds") -> None:
    """``value`` must be a positive, finite number (of ``unit``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < math.inf:
        raise InvalidArgumentError(f"{field} must be a positive number of {unit}, got {value!r}")


def check_game_seconds(field: str, value: float) -> float:
    """``value`` must be a positive duration within the clock's range
    (:data:`~npc_memory.clock.MAX_GAME_TIME` game seconds)."""
    check_positive(field, value)
    if value > MAX_GAME_TIME:
        raise InvalidArgumentError(f"{field} must be at most {MAX_GAME_TIME:g} game seconds, got {value!r}")
    return float(value)


def check_int(field: str, value: int, low: int, high: int) -> int:
    """``value`` must be an int in [low, high] (a bool is not an int here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgumentError(f"{field} must be an int from {low} to {high}, got {value!r}")
    return value


def check_flag(field: str, value: bool) -> bool:
    """``value`` must be True or False (not a truthy string or number)."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{field} must be True or False, got {value!r}")
    return value


def check_key_or_none(field: str, value: str | None) -> str | None:
    """A faction, archetype or similar name, or ``None``."""
    return None if value is None else check_text(field, value, MAX_KEY_CHARS)


def check_unit(field: str, value: float) -> float:
    """``value`` must be a number in [0, 1]; returned as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidArgumentError(f"{field} must be a number in [0, 1], got {value!r}")
    return float(value)


def check_query(field: str, value: str, limit: int) -> str:
    """``value`` must be a string (empty allowed) of at most ``limit`` characters."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string, got {value!r}")
    if len(value) > limit:
        raise InvalidArgumentError(
            f"{field} is {len(value)} characters; the limit is {limit} (pack [limits] query_chars)"
        )
    return value


def check_keys(field: str, values: Iterable[str], limit: int) -> tuple[str, ...]:
    """A list (not one string) of at most ``limit`` non-empty strings of at most
    :data:`MAX_KEY_CHARS` characters each, stripped."""
    items = _items(field, values, limit, "")
    return tuple(check_text(f"{field}[{i}]", item, MAX_KEY_CHARS) for i, item in enumerate(items))


def check_tags(tags: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> tuple[str, ...]:
    """Tags lower-cased and de-duplicated, in order: at most ``limits.tags_per_memory``
    given, each non-empty and at most ``limits.tag_chars`` characters."""
    items = _items("tags", tags, limits.tags_per_memory, " (pack [limits] tags_per_memory)")
    seen: dict[str, None] = {}
    for tag in items:
        seen[check_text("tag", tag, limits.tag_chars).lower()] = None
    return tuple(seen)


def _items(field: str, values: Iterable[Any], limit: int, where: str) -> list[Any]:
    """The first items of ``values`` (a list, tuple or other iterable, not a string),
    refused once there are more than ``limit``: a huge iterable is never read whole."""
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError(f"{field} must be a list of strings, not the string {values!r}")
    if not isinstance(values, Iterable) or isinstance(values, dict):
        raise InvalidArgumentError(f"{field} must be a list of strings, got {values!r}")
    items: list[Any] = []
    for value in values:
        if len(items) == limit:
            raise InvalidArgumentError(f"{field}: more than {limit} given; the limit is {limit}{where}")
        items.append(value)
    return items


def check_trigger(trigger: TriggerContext | None, limits: Limits = DEFAULT_LIMITS) -> TriggerContext | None:
    """A procedural memory's trigger: a :class:`TriggerContext` whose fields are names
    (strings of at most :data:`MAX_KEY_CHARS` characters, or ``None``) and tags."""
    if trigger is None:
        return None
    if not isinstance(trigger, TriggerContext):
        raise InvalidArgumentError(f"trigger must be a TriggerContext, got {trigger!r}")
    names = {
        name: check_key_or_none(f"trigger.{name}", getattr(trigger, name))
        for name in ("location_type", "interaction_type", "time_of_day")
    }
    tags = check_tags(trigger.present_entity_tags, limits)
    return TriggerContext(**names, present_entity_tags=tags)


def check_scope(scope: Scope | None, player: PlayerHandle | None) -> Scope:
    """The scope a memory about ``player`` (``None``: the world) gets: ``scope`` if the
    privacy model allows it, else :class:`PrivacyError`; the narrowest that fits by default."""
    if scope is not None and scope not in SCOPES:
        raise InvalidArgumentError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if player is None:
        if scope in ("player", "anon"):
            raise PrivacyError(f"a world-scoped memory cannot have scope {scope!r}")
        return scope or "session"
    who = player.identity.key
    if player.profile.anonymous:
        if scope not in (None, "anon"):
            raise PrivacyError(f"player {who!r} is anonymous: only 'anon' memories are allowed")
        return "anon"
    if scope == "anon":
        raise PrivacyError(f"player {who!r} is identified; 'anon' is for anonymous participants")
    if scope == "profile":
        raise PrivacyError("'profile' memories are the NPC's own authored traits, not about a player")
    if scope in ("player", "social") and not player.profile.consent:
        raise PrivacyError(f"player {who!r} has not consented to {scope!r}-scoped memories")
    if scope is None:
        return "player" if player.profile.consent else "session"
    return scope


COUNTABLE_EXTRAS: tuple[MemorySource, ...] = ("claimed", "heard")
"""The sources a query may ask to count beside a player's own deeds and words."""


def check_include(include: Iterable[MemorySource]) -> frozenset[MemorySource]:
    """``include`` of a memory query or rule: any of ``"claimed"`` and ``"heard"``."""
    if isinstance(include, str):
        raise InvalidArgumentError(f"include must be a list of sources, got the string {include!r}")
    try:
        wanted = frozenset(include)
    except TypeError:
        raise InvalidArgumentError(f"include must be a list of sources, got {include!r}") from None
    if unknown := sorted(map(repr, wanted.difference(COUNTABLE_EXTRAS))):
        raise InvalidArgumentError(
            f"include takes {' and '.join(map(repr, COUNTABLE_EXTRAS))}, got {', '.join(unknown)}"
        )
    return wanted


def check_source(source: MemorySource) -> MemorySource:
    """A memory's ``source``: one of :data:`~npc_memory.components.MEMORY_SOURCES`."""
    if source not in MEMORY_SOURCES:
        raise InvalidArgumentError(f"source must be one of {', '.join(MEMORY_SOURCES)}, got {source!r}")
    return source
