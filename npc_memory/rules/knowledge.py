"""Learning facts: competing beliefs, expiry, the cap, and what may be gossiped.

Facts about the same subject and topic compete. The evidence of a fact is its
confidence × the weight of its source (first-hand observation and authored facts
weigh most, gossip least); the stronger evidence is believed, a tie goes to the newer
fact. The loser stays, marked as disbelieved since that moment — never deleted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Container

import msgspec

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components.knowledge import Fact, KnowledgeBase
from npc_memory.content.schema import KnowledgeRules


class LearnOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What learning did: the stored fact (``None`` if the origin was already known or
    the claim merged into a held fact, then ``merged``), the fact it displaced as the
    held belief, if any, and facts evicted or expired."""

    stored: Fact | None
    displaced: Fact | None = None
    removed: tuple[Fact, ...] = ()
    merged: Fact | None = None


def evidence(fact: Fact, rules: KnowledgeRules) -> float:
    """How strongly ``fact`` is supported: confidence × source weight, in [0, 1]."""
    return fact.confidence * rules.source_weights.get(fact.source, 0.0)


def is_expired(fact: Fact, now: float) -> bool:
    """Whether ``fact`` has expired by game time ``now`` (locked facts never do)."""
    return fact.expires is not None and fact.expires <= now and not fact.locked


def is_shareable(fact: Fact, rules: KnowledgeRules, now: float) -> bool:
    """Whether an NPC would pass ``fact`` on: believed, not expired, important and
    confident enough, and not yet at the hop limit."""
    return (
        fact.believed
        and not is_expired(fact, now)
        and fact.importance >= rules.share_min_importance
        and fact.confidence >= rules.share_min_confidence
        and fact.hops < rules.max_hops
    )


MAX_ALIASES = 8
"""Merged origins a fact remembers."""


def retention(fact: Fact, rules: KnowledgeRules, now: float, known: Container[str]) -> float:
    """How much a fact is worth keeping: importance × confidence × 0.5^(age / half-life),
    × (1 + subject bonus) when its subject is in ``known`` (players the NPC dealt with)."""
    age_days = max(0.0, now - fact.created) / SECONDS_PER_DAY
    value: float = fact.importance * fact.confidence * 0.5 ** (age_days / rules.fact_half_life_days)
    if fact.subject is not None and fact.subject in known:
        value *= 1.0 + rules.subject_bonus
    return value


def learn(
    kb: KnowledgeBase, fact: Fact, rules: KnowledgeRules, now: float, known: Container[str] = ()
) -> LearnOutcome:
    """Add ``fact`` (its ``id`` already taken from ``kb``) to ``kb``.

    Nothing happens if ``kb`` already holds a fact of the same origin. The same claim
    (subject, topic, content) already held and believed absorbs the new one (see
    :class:`KnowledgeRules`). Expired facts are cleaned out; the believed fact about the
    same subject and topic competes with the new one; past the cap the least worth
    keeping are evicted in one batch (authored and locked facts exempt).
    """
    claim = (fact.subject, fact.topic, fact.content)
    for index, held in enumerate(kb.facts):
        if held.origin == fact.origin or fact.origin in held.aliases:
            return LearnOutcome(stored=None)
        if held.believed and (held.subject, held.topic, held.content) == claim:
            merged = msgspec.structs.replace(
                held,
                confidence=max(held.confidence, fact.confidence),
                aliases=(*held.aliases, fact.origin)[-MAX_ALIASES:],
            )
            kb.facts[index] = merged
            return LearnOutcome(stored=None, merged=merged)
    removed = [f for f in kb.facts if is_expired(f, now)]
    if removed:
        kb.facts[:] = [f for f in kb.facts if not is_expired(f, now)]
    displaced = None
    for index, held in enumerate(kb.facts):
        if held.believed and held.subject == fact.subject and held.topic == fact.topic:
            if evidence(fact, rules) >= evidence(held, rules):
                displaced = msgspec.structs.replace(held, believed=False, disbelieved_at=now)
                kb.facts[index] = displaced
            else:
                fact = msgspec.structs.replace(fact, believed=False, disbelieved_at=now)
            break
    kb.facts.append(fact)
    if len(kb.facts) > rules.cap:
        removed += _evict(kb, rules, now, known)
    stored = fact if any(f is fact for f in kb.facts) else None
    return LearnOutcome(stored=stored, displaced=displaced, removed=tuple(removed))


def _evict(kb: KnowledgeBase, rules: KnowledgeRules, now: float, known: Container[str]) -> list[Fact]:
    """Evict down to cap × (1 − slack): disbelieved first, then the lowest retention."""
    keep_at_most = max(1, int(rules.cap * (1.0 - rules.cap_slack)))
    candidates = [f for f in kb.facts if not f.locked and f.source != "authored"]
    excess = len(kb.facts) - keep_at_most
    if excess <= 0 or not candidates:
        return []
    candidates.sort(key=lambda f: (f.believed, retention(f, rules, now, known), f.created))
    victims = {id(f) for f in candidates[:excess]}
    evicted = [f for f in kb.facts if id(f) in victims]
    kb.facts[:] = [f for f in kb.facts if id(f) not in victims]
    return evicted


class FactIndex:
    """Derived, in-memory lookups over one NPC's knowledge (never persisted): facts by
    id, the origins it knows, and the ids it may gossip (pruned lazily)."""

    __slots__ = ("by_id", "origins", "shareable")

    def __init__(self, kb: KnowledgeBase, rules: KnowledgeRules, now: float) -> None:
        self.by_id = {f.id: f for f in kb.facts}
        self.origins = {o for f in kb.facts for o in (f.origin, *f.aliases)}
        self.shareable = [f.id for f in kb.facts if is_shareable(f, rules, now)]

    def record(self, outcome: LearnOutcome, rules: KnowledgeRules, now: float) -> None:
        """Bring the index up to date after :func:`learn`."""
        for fact in outcome.removed:
            self.by_id.pop(fact.id, None)
            self.origins.difference_update((fact.origin, *fact.aliases))
        if outcome.displaced is not None:
            self.by_id[outcome.displaced.id] = outcome.displaced
        if outcome.merged is not None:
            self.by_id[outcome.merged.id] = outcome.merged
            self.origins.update(outcome.merged.aliases)
        if outcome.stored is not None:
            self.by_id[outcome.stored.id] = outcome.stored
            self.origins.add(outcome.stored.origin)
            if is_shareable(outcome.stored, rules, now):
                self.shareable.append(outcome.stored.id)

    def has_news(self, rules: KnowledgeRules, now: float) -> bool:
        """Whether the NPC has something to pass on: the newest shareable id is still
        shareable (stale ones at the end are dropped; O(1) amortised — stale ids deeper
        in the list are dropped when a draw meets them)."""
        by_id, shareable = self.by_id, self.shareable
        while shareable:
            fact = by_id.get(shareable[-1])
            if fact is not None and is_shareable(fact, rules, now):
                return True
            shareable.pop()
        return False

    def drop(self, fact_id: str) -> None:
        """Forget ``fact_id`` as shareable (a draw found it stale)."""
        with contextlib.suppress(ValueError):
            self.shareable.remove(fact_id)
