"""A player taking back what they said before: which lines of a conversation do it, and
which memory of the player's earlier words or claims each takes back.

A player line takes something back when it refers back to what they said (one of the
pack's ``[knowledge] back_references``: "I said Dunmere…", "Forget what I said about…",
"I did say that.") and it, or the player's next line, owns up: one of ``corrections``
("the truth is", "that was the ale talking": ``corrected``), of ``changes`` ("change of
plan": ``changed``; a bare "now" is too common to count), or a sentence that starts
with one of ``retractions`` ("I don't.", "I didn't kill him.": ``corrected``) and is
short or shares a word with the rest of the line that referred back.

What it takes back is the memory, of those ``held`` that were said before the line (in
an earlier conversation, or earlier in this one), that shares the most content words
with those lines and with the NPC's line just before (what "I did say that." answers):
a word counts twice in a sentence that refers back, or in an NPC line that recalls what
the player said (one of ``reminders``: "You said you had no kin"), else once, and at
least 2 are needed; of a memory of this conversation only the words of the sentence
that refers back count ("Well, I said I killed it."). Names and words of saying or
owning up ("said", "told", "true") are no evidence. Each line takes back one memory at
most, each memory is taken back once (the newest of equals). Pure functions of the
pack's rules and the text; the knowledge service marks the memory and withdraws what it
gave the NPC to believe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from npc_memory.components import Memory, Retraction, Turn
from npc_memory.content.schema import KnowledgeRules
from npc_memory.rules.attributes import any_of
from npc_memory.rules.text import terms

_SENTENCE = re.compile(r"[^.!?;]*[.!?;]*")
SAYING = frozenset(terms(
    "say said says saying tell told telling mean meant talk talking word words true truth honest lie lied"
    " really actually"
))
"""Terms of saying something and of owning up, which back-references and corrections
hold: no evidence of what was taken back."""
MIN_EVIDENCE = 2
"""The least evidence (see :meth:`RetractionReader._evidence`) for a memory to be taken
back: a word of a sentence that refers back, or two of the lines around it."""
SHORT_SENTENCE_WORDS = 4
"""A sentence of ``retractions`` this short ("I don't.") owns up to whatever the line
before it referred back to."""


@dataclass(frozen=True)
class TakenBack:
    """Line ``line`` of a conversation (its ``text``) takes back ``memory`` (``reason``:
    :data:`~npc_memory.components.Retraction`)."""

    line: int
    text: str
    memory: Memory
    reason: Retraction


class RetractionReader:
    """The pack's back-references and markers of owning up, compiled once."""

    def __init__(self, rules: KnowledgeRules) -> None:
        self.references = any_of(rules.back_references)
        self.reminders = any_of(rules.reminders)
        self.corrections = any_of(rules.corrections)
        self.changes = any_of([p for p in rules.changes if not re.fullmatch(p, "now", re.IGNORECASE)])
        self.retractions = (
            re.compile(rf"(?:{'|'.join(rules.retractions)})\b", re.IGNORECASE) if rules.retractions else None
        )

    def read(
        self, turns: Sequence[Turn], speakers: Sequence[str], names: Sequence[str],
        held: Callable[[], Sequence[tuple[Memory, int]]],
    ) -> list[TakenBack]:  # fmt: skip
        """What the lines said by one of ``speakers`` (the player's name and key) among
        ``turns`` take back, of the memories ``held`` returns (the player's earlier words
        and claims, oldest first, each with the line of ``turns`` it was said at, or -1
        for one of an earlier conversation; asked only once a line takes something back):
        a line takes back only what was said before it. ``names`` (the player's and the
        NPC's) are no evidence."""
        if self.references is None:
            return []
        said_by = {s.casefold() for s in speakers}
        mine = [n for n, turn in enumerate(turns) if turn.speaker.casefold() in said_by]
        skip = {t for name in names for t in terms(name)} | SAYING
        memories: Sequence[tuple[Memory, int]] | None = None
        memory_terms: list[set[str]] = []
        found: list[TakenBack] = []
        taken: set[str] = set()
        for i, n in enumerate(mine):
            text = turns[n].text
            if not self.references.search(text):
                continue
            lines = [text]
            reason = self._owns_up(text, text)
            if reason is None and i + 1 < len(mine):
                lines.append(turns[mine[i + 1]].text)
                reason = self._owns_up(lines[1], text)
            if reason is None:
                continue
            if memories is None:
                memories = held()
                memory_terms = [set(terms(m.content)) - skip for m, _ in memories]
            before = turns[n - 1].text if n and turns[n - 1].speaker.casefold() not in said_by else ""
            weights = self._evidence(lines, before, skip)
            referring = {  # what this talk said is taken back only on the words that refer to it
                t for sentence in _sentences(text) if self.references.search(sentence)
                for t in terms(sentence)
            } - skip
            best, best_score = None, MIN_EVIDENCE
            for (memory, at), words in zip(memories, memory_terms, strict=True):
                if at >= 0:
                    words = words & referring
                score = sum(weights.get(word, 0) for word in words)
                if score >= best_score and at < n and memory.id not in taken:
                    best, best_score = memory, score
            if best is not None:
                taken.add(best.id)
                found.append(TakenBack(n, text, best, reason))
        return found

    def _evidence(self, lines: list[str], before: str, skip: set[str]) -> dict[str, int]:
        """How much each word of the player's ``lines`` (the one that referred back
        first) and of the NPC's line ``before`` tells which memory they take back: 2 in
        a sentence that refers back or in an NPC line that recalls what the player said
        (one of ``reminders``: "You said you had no kin"), else 1."""
        assert self.references is not None
        weights: dict[str, int] = {}

        def add(text: str, weight: int) -> None:
            for word in terms(text):
                if word not in skip and weights.get(word, 0) < weight:
                    weights[word] = weight

        for sentence in _sentences(lines[0]):
            add(sentence, 2 if self.references.search(sentence) else 1)
        for line in lines[1:]:
            add(line, 1)
        if before:
            add(before, 2 if self.reminders is not None and self.reminders.search(before) else 1)
        return weights

    def _owns_up(self, text: str, reference: str) -> Retraction | None:
        """Whether ``text`` owns up to what ``reference`` (a line that referred back)
        said before, and how. A marker that starts with the back-reference itself ("I
        told you …. I…") is no owning up."""
        assert self.references is not None
        referring = {m.start() for m in self.references.finditer(text)}
        for pattern, reason in ((self.corrections, "corrected"), (self.changes, "changed")):
            for found in pattern.finditer(text) if pattern is not None else ():
                if found.start() not in referring:
                    return cast(Retraction, reason)
        if self.retractions is None:
            return None
        sentences = _sentences(reference)
        for sentence in _sentences(text):
            if sentence.endswith("?") or not self.retractions.match(sentence):
                continue
            if len(sentence.split()) <= SHORT_SENTENCE_WORDS:
                return "corrected"
            referred = {t for other in sentences if other != sentence for t in terms(other)} - SAYING
            if set(terms(sentence)) & referred:
                return "corrected"
        return None


def _sentences(text: str) -> list[str]:
    return [s for s in map(str.strip, _SENTENCE.findall(text)) if s]
