"""What players say about themselves, read as attributes (``[knowledge.attributes]``):
which attribute a statement files, the value it gives, and whether the player owned up
to a correction or said that something changed.

Pure functions of the pack's rules and the text; the conversation service decides what
the NPC then believes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npc_memory.content.schema import KnowledgeRules
from npc_memory.rules.text import terms

_SEGMENT = re.compile(r'(?P<who>[^":]+?):\s*"(?P<text>[^"]*)"')
_SENTENCES = re.compile(r"[.!?;]+")
_SENTENCE = re.compile(r"[^.!?;]+[.!?;]*")
_FILLER = frozenset(("aye", "yes", "well", "one", "also", "really", "quite", "ever", "know", "like"))
"""Words of a statement that say nothing of its value, beside the stop words."""


@dataclass(frozen=True)
class Statement:
    """A player's statement about themselves: the ``attribute`` it files (``single``:
    one value at a time), the ``value`` it gives (its content words, lower-case), and
    whether it owns up to a correction (``corrects``) or says something changed
    (``changes``)."""

    attribute: str
    single: bool
    value: frozenset[str]
    corrects: bool
    changes: bool


class AttributeReader:
    """The pack's attributes and markers, compiled once."""

    def __init__(self, rules: KnowledgeRules) -> None:
        self.attributes = [
            (name, attribute.single, re.compile(rf"\b(?:{'|'.join(attribute.cues)})", re.IGNORECASE))
            for name, attribute in rules.attributes.items()
            if attribute.cues
        ]
        self.corrections = any_of(rules.corrections)
        self.changes = any_of(rules.changes)

    def read(self, content: str, player_name: str) -> Statement | None:
        """The statement ``content`` (a memory of what the player said: their words in
        quotes, or a paraphrase naming them) makes about the player, or ``None`` when it
        files no attribute. The first attribute whose cue comes earliest wins."""
        text = spoken(content, player_name)
        found = min(
            ((match.start(), order, name, single, match) for order, (name, single, pattern) in
             enumerate(self.attributes) if (match := pattern.search(text)) is not None),
            default=None,
        )
        if found is None:
            return None
        _, _, name, single, match = found
        return Statement(
            attribute=name,
            single=single,
            value=value_after(text, match.end(), player_name),
            corrects=self.corrections is not None and self.corrections.search(text) is not None,
            changes=self.changes is not None and self.changes.search(text) is not None,
        )

    def names_again(self, content: str, earlier: str, player_name: str, attribute: str) -> bool:
        """Whether a sentence of what the player said in ``content`` that states
        ``attribute`` shares a content word with what they said in ``earlier`` (both
        memories of their words: see :func:`spoken`), names and filler left out."""
        pattern = next((p for name, _, p in self.attributes if name == attribute), None)
        if pattern is None:
            return False
        dropped = set(terms(player_name)) | _FILLER
        stating = [s for s in _SENTENCE.findall(spoken(content, player_name)) if pattern.search(s)]
        words = {t for sentence in stating for t in terms(sentence) if t not in dropped and len(t) > 2}
        return bool(words & set(terms(spoken(earlier, player_name))))


def spoken(content: str, player_name: str) -> str:
    """What the player said in ``content``: their quoted lines in a memory worded by the
    rules ('Quinn told me: "…"', 'Quinn said: "…" Hilda: "…" Quinn: "…"', the NPC's own
    lines left out), or else the memory itself with the player's name read as the
    speaker's "I" ("Quinn grew up in Eastmarch" → "I grew up in Eastmarch")."""
    segments = list(_SEGMENT.finditer(content))
    if segments:
        name = player_name.casefold()
        return " ".join(
            m.group("text") for m in segments
            if name and m.group("who").strip(" (").casefold().startswith(name)
        )
    if not player_name:
        return content
    name = re.escape(player_name)
    text = re.sub(rf"\b{name}'s\b", "my", content, flags=re.IGNORECASE)
    return re.sub(rf"\b{name}\b", "I", text, flags=re.IGNORECASE)


def value_after(text: str, start: int, player_name: str = "") -> frozenset[str]:
    """The terms (:func:`~npc_memory.rules.text.terms`) of the rest of the sentence from
    ``start`` on (of the next sentence when that rest holds none), the player's name and
    filler left out."""
    dropped = set(terms(player_name)) | _FILLER
    for sentence in _SENTENCES.split(text[start:])[:2]:
        words = frozenset(t for t in terms(sentence) if t not in dropped and len(t) > 2)
        if words:
            return words
    return frozenset()


def any_of(patterns: list[str]) -> re.Pattern[str] | None:
    """One case-blind pattern matching any of ``patterns`` at a word start; ``None`` for none."""
    return re.compile(rf"\b(?:{'|'.join(patterns)})", re.IGNORECASE) if patterns else None
