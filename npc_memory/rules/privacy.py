"""Privacy rules as pure functions: which scope a fact has, whether a text names
someone, which records a clone may copy, what retention lets go, and the pseudonym
that stands for a player in the audit log."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from npc_memory.components import Fact, Memory, PlayerProfile, Scope
from npc_memory.rules.validation import GAME_ONLY_TAGS

CLONE_CATEGORIES: tuple[str, ...] = ("profile", "social", "knowledge")
"""What ``clone`` may copy: the NPC's ``profile`` and ``social`` world memories, and
its general ``knowledge`` (facts about no player)."""

CLONABLE_FACT_SCOPES: frozenset[Scope] = frozenset({"social", "profile"})
PURGED_AT_GAME_END: frozenset[Scope] = frozenset({"session", "anon"})
"""Scopes that live only as long as their game."""


def scope_for_player(profile: PlayerProfile) -> Scope:
    """The narrowest scope of what is remembered about a player: ``player`` with their
    consent, ``anon`` for an anonymous participant, ``session`` otherwise."""
    if profile.anonymous:
        return "anon"
    return "player" if profile.consent else "session"


def fact_scope(fact: Fact) -> Scope:
    """A fact's scope; facts saved before scopes were recorded read as ``session``
    when about a player, else ``social``."""
    if fact.scope is not None:
        return fact.scope
    return "session" if fact.category == "player_trait" else "social"


def mention_pattern(needles: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive pattern finding any of ``needles`` as a whole word (``None``
    when there is nothing to look for)."""
    words = sorted({n.strip() for n in needles if n and n.strip()}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)", re.IGNORECASE)


def mentions(pattern: re.Pattern[str] | None, *texts: str | None) -> bool:
    """Whether any of ``texts`` contains a match of ``pattern``."""
    return pattern is not None and any(t is not None and pattern.search(t) for t in texts)


def redact(pattern: re.Pattern[str] | None, text: str, replacement: str = "someone") -> str:
    """``text`` with every match of ``pattern`` replaced."""
    return text if pattern is None else pattern.sub(replacement, text)


def fact_mentions(pattern: re.Pattern[str] | None, fact: Fact) -> bool:
    """Whether a fact names someone ``pattern`` finds anywhere: content, subject,
    origin, aliases, source memory or tags."""
    texts = (fact.content, fact.subject, fact.origin, fact.source_memory, *fact.aliases, *fact.tags)
    return mentions(pattern, *texts)


def memory_mentions(pattern: re.Pattern[str] | None, memory: Memory) -> bool:
    """Whether a memory names someone ``pattern`` finds (content, tags, pattern, source,
    or its actor or teller: a memory of a player's deed, or told by them, is theirs
    wherever it is filed)."""
    extra = getattr(memory, "pattern", None)
    return mentions(
        pattern, memory.content, memory.source_conversation, extra, memory.actor, memory.teller, *memory.tags
    )


def sensitive(tags: Iterable[str], sensitive_tags: Iterable[str]) -> bool:
    """Whether ``tags`` mark an item as sensitive or as a game clue."""
    marked = GAME_ONLY_TAGS | set(sensitive_tags)
    return any(tag in marked for tag in tags)


def memory_clonable(memory: Memory, sensitive_tags: Iterable[str]) -> str | None:
    """Why ``clone`` must skip a world memory, or ``None`` if it may copy it."""
    if memory.scope not in ("profile", "social"):
        return f"scope {memory.scope}"
    if memory.safety != "clean":
        return f"safety {memory.safety}"
    if sensitive(memory.tags, sensitive_tags):
        return "sensitive"
    return None


def fact_clonable(fact: Fact, sensitive_tags: Iterable[str]) -> str | None:
    """Why ``clone`` must skip a fact, or ``None`` if it may copy it."""
    scope = fact_scope(fact)
    if scope not in CLONABLE_FACT_SCOPES:
        return f"scope {scope}"
    if fact.category == "player_trait":
        return "about a player"
    if not fact.believed:
        return "no longer believed"
    if sensitive(fact.tags, sensitive_tags):
        return "sensitive"
    return None


def retention_cutoffs(retention_days: dict[Scope, float], now: float) -> dict[Scope, float]:
    """Per scope with a retention limit, the game time before which an item made is
    past it (an item of a scope not listed never is)."""
    return {scope: now - days * 86_400.0 for scope, days in retention_days.items()}


def pseudonym(salt: bytes, key: str) -> str:
    """The stable pseudonym of a player key under a store's audit ``salt``: ``p-`` and
    16 hex digits of a keyed BLAKE2b hash (the key cannot be read back from it)."""
    return "p-" + hashlib.blake2b(key.encode("utf-8"), key=salt[:64], digest_size=8).hexdigest()
