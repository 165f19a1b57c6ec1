"""Relevance-ranked recall: BM25 over a pair's memories, combined with salience.

score = relevance_weight × relevance + (1 − relevance_weight) × salience, where
relevance is the memory's BM25 score for the query (content terms, tags counted
twice) divided by the best score among the candidates, in [0, 1]. With no query
terms, recall is by salience alone. A different scorer (for instance embeddings)
plugs in behind :class:`Scorer`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from npc_memory.components.memory import Memory
from npc_memory.context.text import terms


class Scorer(Protocol):
    """Scores documents (term counts) against query terms: higher is more relevant."""

    def score(self, query: Sequence[str], documents: Sequence[Counter[str]]) -> list[float]: ...


class Terms(Counter[str]):
    """Term counts of one document, with their total (``length``) computed once, and
    the text they were counted from (``content``)."""

    length: int = 0
    content: str = ""


class BM25:
    """Okapi BM25 with ``k1`` and ``b``; document frequencies from the candidates."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b

    def score(self, query: Sequence[str], documents: Sequence[Counter[str]]) -> list[float]:
        n = len(documents)
        if not n or not query:
            return [0.0] * n
        lengths = [d.length if isinstance(d, Terms) else sum(d.values()) for d in documents]
        average = sum(lengths) / n or 1.0
        unique = set(query)
        frequency = dict.fromkeys(unique, 0)
        for document in documents:
            for term in unique:
                if term in document:
                    frequency[term] += 1
        idf = {t: math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if df else 0.0 for t, df in frequency.items()}
        unique = {t for t in unique if frequency[t]}
        k1, b = self.k1, self.b
        scores = []
        for document, length in zip(documents, lengths, strict=True):
            norm = k1 * (1.0 - b + b * length / average)
            total = 0.0
            for term in unique:
                tf = document.get(term)
                if tf:
                    total += idf[term] * tf * (k1 + 1.0) / (tf + norm)
            scores.append(total)
        return scores


class TermCache:
    """Term counts of memory contents and tags, computed once per record (records are
    immutable: an id's content never changes). Bounded; cleared when full."""

    def __init__(self, limit: int = 500_000) -> None:
        self.limit = limit
        self._cache: dict[str, dict[str, Terms]] = {}
        self._size = 0

    def of_all(self, owner: str, memories: Sequence[Memory]) -> list[Terms]:
        """The term counts of each of ``memories`` held by NPC ``owner``."""
        cache = self._cache.get(owner)
        if cache is None:
            cache = self._cache[owner] = {}
        out = []
        for memory in memories:
            counts = cache.get(memory.id)
            if counts is not None and counts.content != memory.content:
                counts = None  # the id was reused (an NPC forgotten and added again)
            if counts is None:
                if self._size >= self.limit:
                    self._cache.clear()
                    self._size = 0
                    cache = self._cache[owner] = {}
                counts = Terms(terms(memory.content))
                for tag in memory.tags:
                    counts.update(terms(tag) * 2)
                counts.length = sum(counts.values())
                counts.content = memory.content
                cache[memory.id] = counts
                self._size += 1
            out.append(counts)
        return out


def rank(
    memories: Sequence[Memory],
    saliences: Sequence[float],
    documents: Sequence[Counter[str]],
    query: Sequence[str],
    scorer: Scorer,
    relevance_weight: float,
) -> list[tuple[float, Memory]]:
    """(score, memory) pairs, best first (ties: newest first)."""
    raw = scorer.score(query, documents)
    best = max(raw, default=0.0)
    weight = relevance_weight if best > 0.0 else 0.0
    scored = [
        (weight * (r / best if best else 0.0) + (1.0 - weight) * s, m.created, i)
        for i, (r, s, m) in enumerate(zip(raw, saliences, memories, strict=True))
    ]
    scored.sort(reverse=True)
    return [(score, memories[i]) for score, _, i in scored]
