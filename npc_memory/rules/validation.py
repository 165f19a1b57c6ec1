"""Checking arguments at the plugin's edge: every failure names the argument and the
problem (``InvalidArgumentError``, or ``PrivacyError`` for scopes)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from npc_memory.components import SCOPES, PlayerHandle, Scope
from npc_memory.components.knowledge import FACT_CATEGORIES
from npc_memory.errors import InvalidArgumentError, PrivacyError

MAX_KEY_CHARS = 128
"""Longest key, name or room."""

MAX_CONTENT_CHARS = 2000
"""Longest memory content, fact content or conversation line."""

MAX_TAG_CHARS = 64
"""Longest tag, for every way a tag enters (the API, the pack, an extractor's output)."""

GAME_ONLY_TAGS = frozenset({"game-only", "game_only"})
"""Memories and facts with these tags are game clues and are never stored."""


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


def check_unit(field: str, value: float) -> None:
    """``value`` must be a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidArgumentError(f"{field} must be a number in [0, 1], got {value!r}")


def check_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags lower-cased and de-duplicated, in order; each non-empty, at most
    :data:`MAX_TAG_CHARS` characters."""
    if isinstance(tags, str):
        raise InvalidArgumentError(f"tags must be a list of strings, not the string {tags!r}")
    if not isinstance(tags, Iterable):
        raise InvalidArgumentError(f"tags must be a list of strings, got {tags!r}")
    seen: dict[str, None] = {}
    for tag in tags:
        seen[check_text("tag", tag, MAX_TAG_CHARS).lower()] = None
    return tuple(seen)


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
