"""A player denying what is said of them: which lines of a conversation deny something
(the pack's ``[knowledge] denials``: "Wasn't me.", "I never stole that purse"), and which
claim the NPC holds about the player each answers.

A denial answers a claim when the line, or the NPC's line just before it (what a bare
"Wasn't me." answers), shares a content word with the claim or holds a cue of one of
its tags ("stole" for ``theft``). Names do not count: the player's name is in every
claim about them. Each line denies one claim, the best matched (the newest of equals);
a question ("You think I stole it?") denies nothing. Pure functions of the pack's rules
and the text; the knowledge service makes the denial a rival of the claim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from npc_memory.components import Fact, Turn
from npc_memory.content.schema import ExtractionTag, KnowledgeRules
from npc_memory.rules.attributes import any_of
from npc_memory.rules.text import terms

_SENTENCE = re.compile(r"[^.!?]*[.!?]*")
DENIAL_ORIGIN = "denied:"
"""How the origin of a fact that is a player's denial starts."""


@dataclass(frozen=True)
class Denial:
    """Line ``line`` (its ``text``) of a conversation denies ``claim``, a believed fact
    about the player."""

    line: int
    text: str
    claim: Fact


class DenialReader:
    """The pack's denial markers and its tags' cues, compiled once."""

    def __init__(self, rules: KnowledgeRules, tags: Mapping[str, ExtractionTag]) -> None:
        self.denials = any_of(rules.denials)
        self.cues = {
            name: pattern
            for name, tag in tags.items()
            if (pattern := any_of([word for cue in tag.cues for word in cue.words])) is not None
        }

    def read(self, turns: Sequence[Turn], speakers: Sequence[str], names: Sequence[str],
             held: Callable[[], Sequence[Fact]]) -> list[Denial]:
        """The denials among ``turns`` of the lines said by one of ``speakers`` (the
        player's name and key), each with the claim it answers of those ``held`` returns
        (believed facts about the player, oldest first; asked only once a line denies
        something); ``names`` (the player's and the NPC's) are no evidence. At most one
        denial per claim: the first line that denies it."""
        if self.denials is None:
            return []
        said_by = {s.casefold() for s in speakers}
        skip = {t for name in names for t in terms(name)}
        claims: Sequence[Fact] | None = None
        claim_terms: list[set[str]] = []
        found: list[Denial] = []
        denied: set[str] = set()
        for n, turn in enumerate(turns):
            if turn.speaker.casefold() not in said_by or not self._denies(turn.text):
                continue
            if claims is None:
                claims = held()
                claim_terms = [set(terms(c.content)) - skip for c in claims]
            before = turns[n - 1].text if n and turns[n - 1].speaker.casefold() not in said_by else ""
            own, asked = set(terms(turn.text)) - skip, set(terms(before)) - skip
            best, best_score = None, 0
            for claim, words in zip(claims, claim_terms, strict=True):
                if claim.id in denied:
                    continue
                score = 2 * (len(own & words) + self._cued(claim, turn.text))
                score += len(asked & words) + self._cued(claim, before)
                if score >= best_score and score > 0:
                    best, best_score = claim, score
            if best is not None:
                denied.add(best.id)
                found.append(Denial(n, turn.text, best))
        return found

    def _denies(self, text: str) -> bool:
        assert self.denials is not None
        return any(
            self.denials.search(sentence) and not sentence.endswith("?")
            for sentence in map(str.strip, _SENTENCE.findall(text))
            if sentence
        )

    def _cued(self, claim: Fact, text: str) -> int:
        return int(bool(text) and any(
            (pattern := self.cues.get(tag)) is not None and pattern.search(text) for tag in claim.tags
        ))
