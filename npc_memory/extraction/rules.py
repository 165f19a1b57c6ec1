"""The rule-based extractor: the offline default and the LLM's fallback.

Deterministic and fast. Cue patterns (with who must say them: the player, the NPC,
or anyone) mark a conversation with tags; a cue preceded by a negation ("I won't
steal") does not count. Tags group into at most three memories — deeds (heroic,
combat, helpful, quest, theft), exchanges (trade, gift), hostility (threat, insult,
betrayal), confidences (secret) and personal facts — each with an importance,
valence and intensity from its tags and the heat of the exchange. A habit marker
("you always haggle", "every week") makes a deed or exchange procedural; personal
facts about the player ("I grew up in Rivermoor") are semantic. Greetings and small
talk match no cue and yield nothing.

The tags, cue words, weights, groups, habit markers and wording are content: they
come from a pack's ``[extraction]`` section (:class:`~npc_memory.content.schema.
ExtractionRules`), whose defaults are the rules described here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npc_memory.components.memory import MemoryKind, Valence
from npc_memory.content.schema import ExtractionRules, ExtractionTag, Who
from npc_memory.extraction.model import MAX_MEMORIES, ExtractedMemory, ExtractionJob, Turn


@dataclass(frozen=True)
class Cue:
    """A pattern that, said by ``who``, marks the conversation with ``tag``."""

    tag: str
    who: Who
    pattern: re.Pattern[str]


def _words(words: list[str]) -> str:
    return "|".join(words)


def _any_of(words: list[str]) -> re.Pattern[str] | None:
    return re.compile(rf"\b(?:{_words(words)})\b", re.IGNORECASE) if words else None


DEFAULT_RULES = ExtractionRules()
"""The built-in tags and cues (what a pack without ``[extraction]`` gets)."""

RULE_TAGS: frozenset[str] = frozenset(DEFAULT_RULES.tags)
"""Every tag the rule-based extractor can produce with the default rules."""


class RuleBasedExtractor:
    """Turns a transcript into 0–3 memories by cue patterns (see module docstring).

    ``rules`` are a pack's ``extraction`` section (None: the built-in rules); their
    patterns are compiled once, here.
    """

    source = "rules"

    def __init__(self, rules: ExtractionRules | None = None) -> None:
        self.rules = DEFAULT_RULES if rules is None else rules
        self.tags: frozenset[str] = frozenset(self.rules.tags)
        """Every tag this extractor can produce."""
        self._tags: dict[str, ExtractionTag] = dict(self.rules.tags)
        self._cues = tuple(
            Cue(tag, cue.who, re.compile(rf"\b(?:{_words(cue.words)})\b", re.IGNORECASE))
            for tag, entry in self.rules.tags.items()
            for cue in entry.cues
        )
        self._groups = tuple(frozenset(tags) for _, tags in self.rules.groups())
        negations = self.rules.negations
        self._negation = (
            re.compile(
                rf"\b(?:{_words(negations)})\W+(?:\w+\W+){{0,{self.rules.negation_reach}}}$",
                re.IGNORECASE,
            )
            if negations
            else None
        )
        self._habit = _any_of(self.rules.habit_markers)
        self._heat = _any_of(self.rules.intensity.heat_words)

    def extract(self, job: ExtractionJob) -> tuple[ExtractedMemory, ...]:
        """The memories worth keeping from ``job``'s conversation (deterministic)."""
        hits = self._hits(job)
        if not hits:
            return ()
        habit = self._habit is not None and any(self._habit.search(turn.text) for turn in job.turns)
        memories = []
        for group in self._groups:
            tags = sorted((t for t in hits if t in group), key=lambda t: (-self._tags[t].importance, t))
            if tags:
                memories.append(self._memory(job, tags, [hits[t] for t in tags], habit))
        memories.sort(key=lambda m: -m.importance)
        return tuple(memories[:MAX_MEMORIES])

    def _hits(self, job: ExtractionJob) -> dict[str, Turn]:
        hits: dict[str, Turn] = {}
        player = job.player_name.lower()
        negation = self._negation
        for turn in job.turns:
            speaker: Who = "player" if turn.speaker.lower() in (player, job.player.lower()) else "npc"
            for cue in self._cues:
                if cue.tag in hits or cue.who not in ("any", speaker):
                    continue
                for match in cue.pattern.finditer(turn.text):
                    if negation is None or not negation.search(turn.text[: match.start()]):
                        hits[cue.tag] = turn
                        break
        return hits

    def _memory(self, job: ExtractionJob, tags: list[str], turns: list[Turn], habit: bool) -> ExtractedMemory:
        rules = self.rules
        primary = self._tags[tags[0]]
        kind: MemoryKind = primary.kind
        if kind == "episodic" and habit and primary.habitual:
            kind = "procedural"
        evidence = turns[0]
        text = " ".join(t.text for t in job.turns)
        weights = rules.intensity
        heat = len(self._heat.findall(text)) if self._heat is not None else 0
        intensity = min(
            1.0,
            weights.base
            + weights.per_exclamation * min(text.count("!"), weights.max_exclamations)
            + weights.per_heat_word * min(heat, weights.max_heat_words),
        )
        boost = weights.importance_boost if intensity > weights.boost_above else 0.0
        importance = min(1.0, primary.importance + boost)
        valences = {self._tags[t].valence for t in tags}
        valence: Valence = "neutral"
        if "negative" in valences or "positive" in valences:
            valence = "negative" if "negative" in valences else "positive"
        limit = rules.quote_limit
        quote = evidence.text if len(evidence.text) <= limit else evidence.text[: limit - 3] + "..."
        content = rules.template.format(
            player=job.player_name,
            habitually=rules.habitually if kind == "procedural" else "",
            label=primary.label,
            speaker=evidence.speaker,
            quote=quote,
        )
        return ExtractedMemory(
            content=content,
            kind=kind,
            tags=tuple(tags),
            importance=round(importance, 3),
            valence=valence,
            intensity=round(intensity, 3),
        )


def summarize(job: ExtractionJob, limit: int = 120) -> str:
    """A one-line summary of a conversation for working memory: who, how long, and the
    player's first line."""
    names = (job.player_name.lower(), job.player.lower())
    player_lines = [t.text for t in job.turns if t.speaker.lower() in names]
    opening = (player_lines or [t.text for t in job.turns] or [""])[0]
    if len(opening) > limit:
        opening = opening[: limit - 3] + "..."
    lines = "1 line" if len(job.turns) == 1 else f"{len(job.turns)} lines"
    return f'Talked with {job.player_name} ({lines}): "{opening}"'
