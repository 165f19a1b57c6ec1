"""Learning facts: competing beliefs, expiry, the cap, and what may be gossiped.

Facts compete only as rival claims: the same subject and topic (a fact without a topic
competes with none; the same claim merges), or a claim about a player and the player's
denial of it. The evidence of a fact is its confidence × the weight of its source
(first-hand observation and authored facts weigh most, gossip least); the stronger
evidence is believed, a tie goes to the newer fact. The loser stays, marked as
disbelieved since that moment, why, and in favour of which fact — never deleted.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Container

import msgspec

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components.knowledge import Disbelief, Fact, KnowledgeBase
from npc_memory.content.schema import KnowledgeRules

TOLD_ON: frozenset[Disbelief] = frozenset(("outweighed", "denied"))
"""Why a rumour may stop being believed that its listeners learn from a teller who knows
(:attr:`FactIndex.corrections`): a better-founded rival, or the subject's denial."""


class LearnOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What learning did: the stored fact (``None`` if the origin was already known or
    the claim merged into a held fact, then ``merged``), the fact it displaced as the
    held belief, if any, facts evicted or expired, and whether a merge made the held
    fact worth passing on (``newly_shareable``)."""

    stored: Fact | None
    displaced: Fact | None = None
    removed: tuple[Fact, ...] = ()
    merged: Fact | None = None
    newly_shareable: bool = False


def evidence(fact: Fact, rules: KnowledgeRules) -> float:
    """How strongly ``fact`` is supported: confidence × source weight, in [0, 1]."""
    return fact.confidence * rules.source_weights.get(fact.source, 0.0)


def is_expired(fact: Fact, now: float) -> bool:
    """Whether ``fact`` has expired by game time ``now`` (locked facts never do)."""
    return fact.expires is not None and fact.expires <= now and not fact.locked


FLAGGED = "flagged"
"""The tag of a fact kept from a line the safety screen flagged: never passed on."""


def is_shareable(fact: Fact, rules: KnowledgeRules, now: float) -> bool:
    """Whether an NPC would pass ``fact`` on: believed, not private, not expired,
    important and confident enough, not yet at the hop limit, and not flagged by the
    safety screen."""
    return (
        fact.believed
        and not fact.private
        and FLAGGED not in fact.tags
        and not is_expired(fact, now)
        and fact.importance >= rules.share_min_importance
        and fact.confidence >= rules.share_min_confidence
        and fact.hops < rules.max_hops
    )


MAX_ALIASES = 8
"""Merged origins a fact remembers."""

Claim = tuple[str | None, str | None, str]
"""(subject, topic, content): what a fact says, whoever said it."""


def retention(fact: Fact, rules: KnowledgeRules, now: float, known: Container[str]) -> float:
    """How much a fact is worth keeping: importance × confidence × 0.5^(age / half-life),
    × (1 + subject bonus) when its subject is in ``known`` (players the NPC dealt with)."""
    age_days = max(0.0, now - fact.created) / SECONDS_PER_DAY
    value: float = fact.importance * fact.confidence * 0.5 ** (age_days / rules.fact_half_life_days)
    if fact.subject is not None and fact.subject in known:
        value *= 1.0 + rules.subject_bonus
    return value


class FactIndex:
    """Derived, in-memory lookups over one NPC's knowledge (never persisted): facts by
    id, the origins it knows, its believed fact per (subject, topic) for facts with a
    topic and per claim, the
    earliest expiry, the ids it may gossip (pruned lazily) and each fact's position in
    the list. Kept up to date by :func:`learn`, so learning costs O(1) but for the rare
    expiry or eviction pass.

    ``phase`` (in [0, 1], see :func:`eviction_phase`) places the NPC's first eviction:
    once it holds more than ``keep + phase × (cap − keep)`` facts (``keep`` being
    ``cap × (1 − cap_slack)``), not only past the cap; every later one comes past the
    cap. NPCs that learn the same things (the witnesses in one room) then evict on
    different calls rather than all on one, and stay apart; 1 (the default) waits for
    the cap. It follows from the facts: it applies while no fact has left the NPC (it
    holds as many facts as ids taken: the service hands back the id of a fact never
    held, and only of one), so an index built again (a load, facts replaced) places the
    first eviction where the running one would, and once a fact has gone (evicted,
    expired, forgotten) evictions come past the cap."""

    __slots__ = (
        "by_id", "claims", "corrections", "held", "next_expiry", "origins", "phase", "position", "shareable"
    )

    def __init__(self, kb: KnowledgeBase, rules: KnowledgeRules, now: float, phase: float = 1.0) -> None:
        self.phase: float | None = phase if len(kb.facts) >= kb.next_id - 1 else None
        """Where the first eviction comes; ``None`` once a fact has left (evictions: past
        the cap)."""
        self.by_id: dict[str, Fact] = {}
        self.position: dict[str, int] = {}
        self.origins: set[str] = set()
        self.held: dict[tuple[str | None, str | None], str] = {}
        self.claims: dict[Claim, str] = {}
        self.next_expiry = float("inf")
        self.shareable: list[str] = []
        self.corrections: dict[str, str] = {}
        """For a rival claim the NPC no longer believes, by its origin: the id of the fact
        believed in its place (a listener who still believes the rumour learns it when
        the NPC next gossips with them). Stale entries are dropped when read."""
        self.rebuild(kb, rules, now)

    def rebuild(self, kb: KnowledgeBase, rules: KnowledgeRules, now: float) -> None:
        """Index ``kb`` afresh (after facts left it: a rare, batched event)."""
        self.by_id = {f.id: f for f in kb.facts}
        self.position = {f.id: at for at, f in enumerate(kb.facts)}
        self.origins = {o for f in kb.facts for o in (f.origin, *f.aliases)}
        self.held, self.claims, self.next_expiry = {}, {}, float("inf")
        for fact in kb.facts:
            self.hold(fact)
        self.shareable = [f.id for f in kb.facts if is_shareable(f, rules, now)]
        self.corrections = {
            f.origin: f.displaced_by
            for f in kb.facts
            if f.disbelief in TOLD_ON and f.displaced_by is not None and f.displaced_by in self.by_id
        }

    def remove(self, kb: KnowledgeBase, gone: list[Fact]) -> None:
        """``gone`` has just left ``kb.facts``: the index forgets it in O(facts) (positions
        and ``shareable`` are filtered; the rest is O(len(gone))), and ends as
        :meth:`rebuild` would leave it but for two lazy parts: ``next_expiry`` may stay
        earlier than any fact's expiry (one expiry pass that finds nothing), and stale ids
        stay in ``shareable`` until a draw meets them. Where a removed fact was the held
        belief of its topic or claim, the last believed fact left with that key takes its
        place (learning keeps one believed fact per key, so none does; a loaded list need
        not)."""
        ids = {fact.id for fact in gone}
        topics: set[tuple[str | None, str | None]] = set()
        claims: set[Claim] = set()
        for fact in gone:
            del self.by_id[fact.id]
            self.origins.discard(fact.origin)
            self.origins.difference_update(fact.aliases)
            topic, claim = (fact.subject, fact.topic), (fact.subject, fact.topic, fact.content)
            if self.held.get(topic) == fact.id:
                del self.held[topic]
                topics.add(topic)
            if self.claims.get(claim) == fact.id:
                del self.claims[claim]
                claims.add(claim)
        if topics or claims:  # a held belief went: another fact may believe the same
            for fact in reversed(kb.facts):
                if fact.believed:
                    topic, claim = (fact.subject, fact.topic), (fact.subject, fact.topic, fact.content)
                    if topic in topics:
                        self.held[topic] = fact.id
                        topics.discard(topic)
                    if claim in claims:
                        self.claims[claim] = fact.id
                        claims.discard(claim)
        self.position = {f.id: at for at, f in enumerate(kb.facts)}
        self.shareable = [i for i in self.shareable if i not in ids]

    def hold(self, fact: Fact) -> None:
        """Index ``fact`` as held (as believed, if it is)."""
        if fact.believed:
            if fact.topic is not None:
                self.held[(fact.subject, fact.topic)] = fact.id
            self.claims[(fact.subject, fact.topic, fact.content)] = fact.id
        if fact.expires is not None and not fact.locked:
            self.next_expiry = min(self.next_expiry, fact.expires)

    def release(self, fact: Fact) -> None:
        """``fact`` is no longer the held belief of its topic or claim."""
        if self.held.get((fact.subject, fact.topic)) == fact.id:
            del self.held[(fact.subject, fact.topic)]
        if self.claims.get((fact.subject, fact.topic, fact.content)) == fact.id:
            del self.claims[(fact.subject, fact.topic, fact.content)]

    def replace(self, kb: KnowledgeBase, old: Fact, new: Fact) -> None:
        """Put ``new`` in place of ``old`` in ``kb`` and in the index: O(1) while the
        list changed only through this index, a scan for ``old`` otherwise."""
        facts = kb.facts
        at = self.position.get(old.id, -1)
        if not (0 <= at < len(facts) and facts[at] is old):
            at = next(i for i, f in enumerate(facts) if f is old)
        facts[at] = new
        self.position[new.id] = at
        self.by_id[new.id] = new
        self.release(old)
        self.hold(new)

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


def learn(
    kb: KnowledgeBase,
    fact: Fact,
    rules: KnowledgeRules,
    now: float,
    known: Container[str] = (),
    index: FactIndex | None = None,
    supersede: Disbelief | None = None,
    replaces: str | None = None,
    denial: bool = False,
) -> LearnOutcome:
    """Add ``fact`` (its ``id`` already taken from ``kb``) to ``kb`` and keep ``index``
    (the NPC's :class:`FactIndex`, built afresh when ``None``) up to date.

    With ``supersede`` the new fact takes the place of the believed rival on its topic
    whatever their evidence (a player's newer word about themselves), and of the believed
    fact ``replaces`` names; each is kept as no longer believed for that reason. Without
    it, the fact ``replaces`` names is a rival like one on the same topic: the better
    founded is believed, the other kept as ``outweighed`` (``denied`` when the new fact
    is a ``denial`` of it and wins).

    Nothing happens if ``kb`` already holds a fact of the same origin. The same claim
    (subject, topic, content) already held and believed absorbs the new one (see
    :class:`KnowledgeRules`). Expired facts are cleaned out; the believed fact about the
    same subject and topic (when the new one has a topic) competes with it; past the cap (the first time,
    maybe earlier: see :class:`FactIndex`) the least worth keeping are evicted in one
    batch (authored and locked facts exempt).
    """
    if index is None:
        index = FactIndex(kb, rules, now)
    if fact.origin in index.origins:
        return LearnOutcome(stored=None)
    removed: list[Fact] = []
    if index.next_expiry <= now:  # before any comparison: an expired fact absorbs nothing
        removed = [f for f in kb.facts if is_expired(f, now)]
        kb.facts[:] = [f for f in kb.facts if not is_expired(f, now)]
        index.rebuild(kb, rules, now)
        if removed:
            index.phase = None  # a fact left: as an index built now would have it
    claim_id = index.claims.get((fact.subject, fact.topic, fact.content))
    if claim_id is not None:
        held = index.by_id[claim_id]
        aliases = (*held.aliases, fact.origin)
        merged = msgspec.structs.replace(
            held, confidence=max(held.confidence, fact.confidence), aliases=aliases[-MAX_ALIASES:]
        )
        index.replace(kb, held, merged)
        newly_shareable = is_shareable(merged, rules, now) and not is_shareable(held, rules, now)
        if newly_shareable:  # confident enough to pass on now: the newest news
            index.shareable.append(merged.id)
        index.origins.add(fact.origin)
        index.origins.difference_update(aliases[:-MAX_ALIASES])  # as the fact forgets them
        return LearnOutcome(
            stored=None, merged=merged, removed=tuple(removed), newly_shareable=newly_shareable
        )
    displaced = None
    held_id = None if fact.topic is None else index.held.get((fact.subject, fact.topic))
    if held_id is None and replaces is not None:
        replaced = index.by_id.get(replaces)
        held_id = replaces if replaced is not None and replaced.believed else None
    if held_id is not None:
        held = index.by_id[held_id]
        if supersede is not None or evidence(fact, rules) >= evidence(held, rules):
            displaced = msgspec.structs.replace(
                held,
                believed=False,
                disbelieved_at=now,
                disbelief=supersede or ("denied" if denial else "outweighed"),
                displaced_by=fact.id,
            )
            index.replace(kb, held, displaced)
            if displaced.disbelief in TOLD_ON:
                index.corrections[held.origin] = fact.id
        else:
            fact = msgspec.structs.replace(
                fact, believed=False, disbelieved_at=now, disbelief="outweighed", displaced_by=held.id
            )
            index.corrections[fact.origin] = held.id
    index.position[fact.id] = len(kb.facts)
    kb.facts.append(fact)
    index.by_id[fact.id] = fact
    index.origins.add(fact.origin)
    index.hold(fact)
    if is_shareable(fact, rules, now):
        index.shareable.append(fact.id)
    if len(kb.facts) > _limit(rules, index.phase):
        index.phase = None
        evicted = _evict(kb, rules, now, known)
        if evicted:
            removed += evicted
            index.remove(kb, evicted)
    stored = fact if index.by_id.get(fact.id) is fact else None
    return LearnOutcome(stored=stored, displaced=displaced, removed=tuple(removed))


def withdraw(kb: KnowledgeBase, index: FactIndex, fact: Fact, reason: Disbelief, now: float) -> Fact:
    """Stop believing ``fact`` (held in ``kb``) for ``reason``, with no rival in its
    place (what it came from was taken back); the fact kept as no longer believed."""
    withdrawn = msgspec.structs.replace(fact, believed=False, disbelieved_at=now, disbelief=reason)
    index.replace(kb, fact, withdrawn)
    return withdrawn


def eviction_phase(key: str) -> float:
    """Where in [0, 1) the NPC ``key``'s first eviction comes (see :class:`FactIndex`):
    from its key alone, so the same in every run and after every load."""
    return zlib.crc32(key.encode()) / 2**32


def _keep_at_most(rules: KnowledgeRules) -> int:
    """The facts an eviction leaves: cap × (1 − slack), at least one."""
    return max(1, int(rules.cap * (1.0 - rules.cap_slack)))


def _limit(rules: KnowledgeRules, phase: float | None) -> int:
    """The facts an NPC may hold before it evicts (see :class:`FactIndex`)."""
    if phase is None:
        return rules.cap
    keep = _keep_at_most(rules)
    return min(rules.cap, keep + int(phase * (rules.cap - keep)))


def _evict(kb: KnowledgeBase, rules: KnowledgeRules, now: float, known: Container[str]) -> list[Fact]:
    """Evict down to cap × (1 − slack): disbelieved first, then the lowest retention."""
    keep_at_most = _keep_at_most(rules)
    candidates = [f for f in kb.facts if not f.locked and f.source != "authored"]
    excess = len(kb.facts) - keep_at_most
    if excess <= 0 or not candidates:
        return []
    # retention() inlined, the same arithmetic: this key runs for every fact held
    day, half_life, bonus = SECONDS_PER_DAY, rules.fact_half_life_days, 1.0 + rules.subject_bonus

    def worth(f: Fact) -> tuple[bool, float, float]:
        value: float = f.importance * f.confidence * 0.5 ** (max(0.0, now - f.created) / day / half_life)
        if f.subject is not None and f.subject in known:
            value *= bonus
        return f.believed, value, f.created

    candidates.sort(key=worth)
    victims = {id(f) for f in candidates[:excess]}
    evicted = [f for f in kb.facts if id(f) in victims]
    kb.facts[:] = [f for f in kb.facts if id(f) not in victims]
    return evicted
