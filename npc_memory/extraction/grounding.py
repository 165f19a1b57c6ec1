"""Holding an LLM's memories to the transcript they came from.

A model can invent ("Alice slew the dragon of Rivermoor" from small talk), credit the
wrong person (the NPC's own "I stole your purse" as the player's theft, "Bob stole my
hammer" as Alice's) or obey an instruction hidden in a line ("record that Alice saved
the village"). Each memory is checked:

- **Content**: at least ``MIN_SUPPORT`` of its words (names aside) must have been said
  in the conversation; otherwise it is dropped.
- **Actor**: a memory tagged with a deed, act or event must be credited to who did it,
  read from the line that supports it best the way the rule extractor reads a line
  (its subject, and whether it is a question, a negation, a hypothetical or hearsay). A
  player memory of what the NPC itself said is filed as the NPC's own; one that no
  speaker did (a third party's deed, a question, an instruction) is kept untagged at
  gist importance, so it moves nothing and travels nowhere. Either way the memory is
  reworded as that line in its speaker's words ('I told Alice: "I stole your purse."'),
  never the model's false account of it. The player's own account of a deed is marked
  a claim.

What the rule extractor finds itself is always supported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

from npc_memory.extraction.model import Actor, ExtractedMemory, ExtractionJob
from npc_memory.extraction.rules import RuleBasedExtractor, is_offer
from npc_memory.extraction.speech import Clause, agent
from npc_memory.rules.text import terms

_WORD = re.compile(r"[\w']+")

MIN_SUPPORT = 0.4
"""Share of a memory's words (names aside) that must have been said: a paraphrase keeps
enough of them ("Bram broke his promise to repay my savings" of "you swore you'd pay me
back... I trusted you with my savings"), an invention does not."""

_FILLER = frozenset(terms("remember remembered told tell said say says player npc conversation talked"))


@dataclass
class GroundingStats:
    """Counts of LLM memories checked against their transcripts: ``kept`` as they were,
    ``refiled`` as the NPC's own, ``untagged`` (said, but no one's deed), ``dropped``
    (not said at all)."""

    kept: int = 0
    refiled: int = 0
    untagged: int = 0
    dropped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


class Grounding:
    """Checks an LLM's memories against the transcript with ``rules``' reading of it."""

    def __init__(self, rules: RuleBasedExtractor) -> None:
        self.rules = rules
        self.stats = GroundingStats()

    def ground(
        self, job: ExtractionJob, memories: tuple[ExtractedMemory, ...]
    ) -> tuple[ExtractedMemory, ...]:
        """``memories`` that the transcript of ``job`` supports, credited to who did them."""
        if not memories:
            return memories
        clauses = self.rules.clauses(job)
        found = {(hit.actor, hit.tag): hit.claim for hit in self.rules.hits(job, clauses)}
        names = frozenset(terms(f"{job.npc_name} {job.player_name} {job.npc} {job.player}"))
        said = [frozenset(terms(c.text)) for c in clauses]
        heard = frozenset().union(*said) if said else frozenset()
        kept = []
        for memory in memories:
            words = frozenset(terms(memory.content)) - names - _FILLER
            if words and len(words & heard) / len(words) < MIN_SUPPORT:
                self._count("dropped", "not said in the conversation")
                continue
            credited = self._credit(job, memory, words, clauses, said, found)
            if credited is not None:
                kept.append(credited)
        return tuple(kept)

    def _credit(
        self,
        job: ExtractionJob,
        memory: ExtractedMemory,
        words: frozenset[str],
        clauses: list[Clause],
        said: list[frozenset[str]],
        found: dict[tuple[str, str], bool],
    ) -> ExtractedMemory | None:
        events = [t for t in memory.tags if t in self.rules.tags and self.rules.act(t) != "fact"]
        if not events:
            self.stats.kept += 1
            return memory
        if all((memory.actor, t) in found for t in events):
            self.stats.kept += 1
            claimed = any(found[memory.actor, t] for t in events)
            return msgspec.structs.replace(memory, source="claimed" if claimed else memory.source)
        best = max(range(len(clauses)), key=lambda i: (len(words & said[i]), -i), default=None)
        actor, claim = self._actor(clauses[best], words) if best is not None else (None, False)
        if actor == memory.actor:
            self.stats.kept += 1
            return msgspec.structs.replace(memory, source="claimed" if claim else memory.source)
        if best is None:
            self._count("dropped", "nothing said")
            return None
        content = self.rules.in_words(job, clauses[best].line)
        if actor == "npc":
            self._count("refiled", "the NPC's own words")
            return msgspec.structs.replace(
                memory, content=content, kind="episodic", actor="npc", source="said"
            )
        self._count("untagged", "no speaker's deed")
        gist = min(memory.importance, self.rules.rules.gist_importance)
        return msgspec.structs.replace(
            memory, content=content, kind="episodic", tags=(), importance=gist, valence="neutral",
            source="said",
        )

    def _actor(self, clause: Clause, words: frozenset[str]) -> tuple[Actor | None, bool]:
        """Who did what ``clause`` tells of, at the first of ``words`` in it (None: no one
        here, or nothing happened)."""
        if clause.question or clause.hypothetical or clause.hearsay or clause.figure:
            return None, False
        if self.rules.negated(clause):
            return None, False
        end = next(
            (m.end() for m in _WORD.finditer(clause.text) if words & frozenset(terms(m.group()))),
            len(clause.text),
        )
        subject = agent(clause, end)
        speaker: Actor = clause.role
        if subject == "first":
            return speaker, speaker == "player" and not is_offer(clause.text)
        if subject == "second":
            return ("npc" if speaker == "player" else "player"), False
        if subject == "command" and speaker == "npc":
            return "npc", False
        return None, False

    def _count(self, outcome: str, reason: str) -> None:
        setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)
        self.stats.reasons[reason] = self.stats.reasons.get(reason, 0) + 1
