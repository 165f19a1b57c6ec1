"""Holding an LLM's memories to the lines they cite.

The model is sent numbered lines and cites, for each memory, the lines it rests on
(``evidence``). Grounding keeps the model's wording, tags and actor, and changes only
what it can show is wrong:

- **Dropped**: no evidence; a cited line that does not exist or was flagged by the
  safety screen; content that shares no content word with its cited lines (or the
  lines they answer), or fewer than :data:`SUPPORTED_SHARE` of its content words;
  content that names a person, place or number said nowhere in the conversation (an
  invention), or an actor who is nobody the conversation names.
- **Refiled as the NPC's own**: a memory that credits the player with a deed whose
  only cited lines are the NPC's own first-person lines ("When I was a lad I stole
  bread"): worded as that line, in the NPC's words, and never counted against the
  player. An NPC line that puts the deed on the player ("you broke my nose") keeps it
  the player's.
- **A claim**: a deed credited to the player from cited lines of the player's with no
  cited line of the NPC's confirming it (a plain statement that thanks the player or
  echoes the account; not a question or a denial), and any memory the model itself
  worded as what the player claims.
- **Hearsay**: a deed every cited line that tells it tells as heard ("I heard you
  saved the mill").
- **Untagged**: a deed whose cited lines are all questions, hypotheticals or figures of
  speech: kept at gist importance, without its deed tags.

The model's actor stands: a memory it files as the NPC's own or a third party's (by
name) is kept as said or as hearsay. Everything else is kept as the model
read it: the rule extractor's clause reader only tells grounding who speaks a line and
in what mood, and never overrules the model's deed or tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from npc_memory.components.memory import MemorySource
from npc_memory.extraction.model import ExtractedMemory, ExtractionJob
from npc_memory.extraction.rules import RuleBasedExtractor
from npc_memory.extraction.speech import NUMBERS, Clause, agent
from npc_memory.rules.text import STOP_WORDS, terms
from npc_memory.safety import is_marked

PLAYER = "player"
"""An extracted memory's ``actor`` for the player."""
NPC = "npc"
"""An extracted memory's ``actor`` for the NPC itself."""

Outcome = Literal["kept", "refiled", "claimed", "heard", "untagged", "dropped"]
OUTCOMES: tuple[Outcome, ...] = ("kept", "refiled", "claimed", "heard", "untagged", "dropped")

SUPPORTED_SHARE = 0.25
"""Share of a memory's content words (names and filler left out) its cited lines, or
the lines they answer, must say: below it, the memory tells mostly what nobody said
("Wren stole a silver candlestick from my stall" resting on "Got any silver to spare?")."""

_WORD = re.compile(r"[\w']+")
_NAME = re.compile(r"\b[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)?")
_CLAIM_WORDING = re.compile(
    r"\b(?:claims?|claimed|says|boasts?|boasted|insists?|insisted|swears?|swore)\b",
    re.IGNORECASE,
)
_DOUBT = re.compile(
    r"\b(?:keep saying|so you say|you say so|if you say|did you,? now|is that so|likely story|"
    r"sure you did|so you claim|so they say|tell me another)\b",
    re.IGNORECASE,
)
"""What a listener says of an account it does not believe: never a confirmation."""
_GRATITUDE = frozenset(terms("thank thanks grateful owe bless indebted"))
_FILLER = frozenset(terms("remember remembered told tell said say says player npc conversation talked"))
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "dozen": 12, "once": 1, "twice": 2, "first": 1, "second": 2, "third": 3,
}
_NOT_NAMES = frozenset(
    (*STOP_WORDS, *NUMBERS, "i'd", "i'll", "i've", "you'd", "you'll", "you've", "we'd", "we'll", "we've",
     "today", "tonight", "yesterday", "tomorrow", "later", "earlier", "once", "never", "always", "also",
     "still", "yet", "even", "someone", "somebody", "everyone", "nobody", "anyone", "thanks", "thank",
     "yes", "sir", "madam", "mister", "mistress", "lady", "lord", "master", "npc", "player", "god", "gods",
     "one's", "it'll", "that'll", "there's", "here's", "let's", "oh", "ah", "well", "now", "last", "next",
     "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
)
"""Capitalised words that are not names (sentence openers, pronouns, days)."""


@dataclass
class GroundingStats:
    """What grounding did with the LLM's memories: a count per outcome (``kept``,
    ``refiled`` as the NPC's own, ``claimed``, ``heard``, ``untagged``, ``dropped``)
    and per ``"<outcome>: <reason>"`` in ``reasons``."""

    kept: int = 0
    refiled: int = 0
    claimed: int = 0
    heard: int = 0
    untagged: int = 0
    dropped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def restore(self, reasons: dict[str, int]) -> None:
        """Add counts saved by ``"<outcome>: <reason>"`` (a store's metadata) to these."""
        for key, count in reasons.items():
            outcome = key.split(":", 1)[0]
            if outcome in OUTCOMES and isinstance(count, int) and count > 0:
                setattr(self, outcome, getattr(self, outcome) + count)
                self.reasons[key] = self.reasons.get(key, 0) + count

    def as_dict(self) -> dict[str, object]:
        """The counts as plain data (``reasons`` copied)."""
        return {**{o: getattr(self, o) for o in OUTCOMES}, "reasons": dict(self.reasons)}


@dataclass(frozen=True)
class _Transcript:
    """What grounding reads of one job, once for all its memories."""

    clauses: list[Clause]
    roles: list[str]
    by_line: list[list[int]]
    line_words: list[frozenset[str]]
    said: str
    names: frozenset[str]


class Grounding:
    """Checks an LLM's memories against the lines they cite, read with ``rules``'
    clause reader (subject and mood of each clause)."""

    def __init__(self, rules: RuleBasedExtractor) -> None:
        self.rules = rules
        self.stats = GroundingStats()

    def ground(
        self, job: ExtractionJob, memories: tuple[ExtractedMemory, ...]
    ) -> tuple[ExtractedMemory, ...]:
        """``memories`` as the lines of ``job`` they cite support them (see the module)."""
        if not memories:
            return memories
        transcript = self._read(job)
        kept = []
        for memory in memories:
            grounded = self._ground(job, transcript, memory)
            if grounded is not None:
                kept.append(grounded)
        return tuple(kept)

    def _read(self, job: ExtractionJob) -> _Transcript:
        clauses = self.rules.clauses(job)
        by_line: list[list[int]] = [[] for _ in job.turns]
        for index, clause in enumerate(clauses):
            by_line[clause.line].append(index)
        said = " ".join(
            (job.npc_name, job.player_name, job.npc, job.player, job.npc_role, job.room or "",
             *(f"{t.speaker} {t.text}" for t in job.turns))
        ).lower()
        names = frozenset(terms(f"{job.npc_name} {job.player_name} {job.npc} {job.player}"))
        return _Transcript(
            clauses=clauses,
            roles=list(self.rules.roles(job)),
            by_line=by_line,
            line_words=[frozenset(terms(t.text)) for t in job.turns],
            said=said,
            names=names,
        )

    def _ground(
        self, job: ExtractionJob, text: _Transcript, memory: ExtractedMemory
    ) -> ExtractedMemory | None:
        cited = memory.evidence
        if not cited:
            return self._drop("no evidence cited")
        if any(not 0 <= line < len(job.turns) for line in cited):
            return self._drop("cites a line that does not exist")
        if any(is_marked(job.turns[line].text) for line in cited):
            return self._drop("cites a line the safety screen flagged")
        words = frozenset(terms(memory.content)) - text.names - _FILLER
        support = frozenset().union(  # a cited line and the line it answers ("Me." to "Who paid?")
            *(text.line_words[n] for line in cited for n in (line - 1, line) if n >= 0)
        )
        if words and not words & support:
            return self._drop("shares no word with the lines it cites")
        if len(words & support) < SUPPORTED_SHARE * len(words):
            return self._drop("says mostly what the lines it cites do not")
        if unsaid := _unsaid(memory.content, text.said):
            return self._drop(f"names what was never said ({unsaid})")
        actor = self._actor(job, memory.actor)
        if actor not in (PLAYER, NPC) and not re.search(rf"\b{re.escape(actor.casefold())}\b", text.said):
            return self._drop("credits someone nobody in the talk named")
        if actor != PLAYER:
            source: MemorySource = "said" if actor == NPC else "heard"
            return self._keep(msgspec.structs.replace(memory, actor=actor, source=source))
        return self._credit(job, text, memory, words)

    def _credit(
        self, job: ExtractionJob, text: _Transcript, memory: ExtractedMemory, words: frozenset[str]
    ) -> ExtractedMemory | None:
        """A memory the model credits to the player, checked against the roles and moods
        of its cited lines only: the model's reading of who did what stands unless the
        lines show it wrong."""
        known = self.rules.rules.tags  # a confidence is told, not done: no deed
        deeds = [t for t in memory.tags if t in known and known[t].act != "fact" and not known[t].private]
        if not deeds:
            return self._keep(msgspec.structs.replace(memory, source="said"))
        cited = sorted(set(memory.evidence))
        candidates = [i for line in cited for i in text.by_line[line]]
        if candidates and all(self._idle(text.clauses[i]) for i in candidates):
            return self._untag(memory, deeds)  # told only as a question, a wish, a figure of speech
        telling = [i for i in candidates if words & frozenset(terms(text.clauses[i].text))]
        if telling and all(text.clauses[i].hearsay for i in telling):
            return self._count("heard", "the cited line tells it as hearsay", memory, "heard")
        named = [text.clauses[i] for i in telling if _told_of_someone(text.clauses[i])]
        if telling and len(named) == len(telling):  # "Bob stole my hammer", said by the player: Bob's
            return self._someone_elses(job, memory, named[0])
        if _CLAIM_WORDING.search(memory.content):
            return self._count("claimed", "worded as the player's claim", memory, "claimed")
        if all(text.roles[line] != "player" for line in cited):
            own = self._own_story(job, text, telling or candidates, words)
            if own is not None:
                return self._refile(job, memory, own)
            return self._keep(msgspec.structs.replace(memory, source="witnessed"))
        if self._done(deeds) and not self._confirmed(text, memory, words):
            return self._count("claimed", "only the player's own account", memory, "claimed")
        return self._keep(msgspec.structs.replace(memory, source="witnessed"))

    def _own_story(
        self, job: ExtractionJob, text: _Transcript, clauses: list[int], words: frozenset[str]
    ) -> int | None:
        """The line of the NPC's that tells, in the first person, the deed a memory cites
        only the NPC's lines for ("When I was a lad I stole bread"), if that is all they
        tell; ``None`` when a cited line puts the deed on the player ("you broke my nose",
        or the player named)."""
        first: int | None = None
        for index in clauses:
            clause = text.clauses[index]
            if clause.role != "npc":
                continue
            subject = _subject(clause, words)
            if subject == "second" or _names_player(job, clause):
                return None
            if subject == "first" and first is None:
                first = clause.line
        return first

    def _confirmed(self, text: _Transcript, memory: ExtractedMemory, words: frozenset[str]) -> bool:
        """Whether the NPC bears out a deed the player tells: a cited line of the NPC's
        that is neither a denial nor doubt ("So it is. Good eye.", not "So you keep
        saying."), or, when the model cites only the
        player's lines, a plain statement of the NPC's anywhere in the talk (not a
        question, a wish or a denial) that echoes two of the memory's content words
        (thanks alone do not say for what)."""
        cited_npc = [line for line in memory.evidence if text.roles[line] == "npc"]
        if cited_npc:
            return any(
                not self.rules.negated(text.clauses[i]) and not _DOUBT.search(text.clauses[i].text)
                for line in cited_npc
                for i in text.by_line[line]
            )
        echo = min(2, len(words))
        for clause in text.clauses:
            if clause.role != "npc" or self._idle(clause) or self.rules.negated(clause):
                continue
            said = frozenset(terms(clause.text))
            if len(said & words) >= echo:
                return True
        return False

    def _done(self, tags: list[str]) -> bool:
        """Whether ``tags`` tell of a deed done somewhere (not only of a speech act, done
        by saying it)."""
        return any(self.rules.act(t) == "deed" for t in tags)

    def _idle(self, clause: Clause) -> bool:
        """Whether ``clause`` tells of nothing that happened: a question, a hypothetical
        or a figure of speech (hearsay is told, and filed as heard)."""
        return clause.question or clause.hypothetical or clause.figure

    def _actor(self, job: ExtractionJob, actor: str) -> str:
        """The model's ``actor`` as an extracted memory's: :data:`PLAYER`, :data:`NPC`,
        or a third party's name as the model gave it (the model knows names, not the
        game's keys: applying the memory looks the name up)."""
        folded = actor.strip().casefold()
        if folded in ("", PLAYER, job.player.casefold(), job.player_name.casefold()):
            return PLAYER
        if folded in (NPC, job.npc.casefold(), job.npc_name.casefold()):
            return NPC
        return actor.strip()

    def _someone_elses(self, job: ExtractionJob, memory: ExtractedMemory, clause: Clause) -> ExtractedMemory:
        """A deed the model credits to the player that the player's cited lines tell of
        someone named: that person's, heard from the player, in the player's words."""
        assert clause.name is not None
        self._tally("refiled", "someone else's deed credited to the player")
        return msgspec.structs.replace(
            memory, content=self.rules.in_words(job, clause.line), kind="episodic", actor=clause.name,
            source="heard",
        )

    def _refile(self, job: ExtractionJob, memory: ExtractedMemory, line: int) -> ExtractedMemory:
        self._tally("refiled", "the NPC's own deed credited to the player")
        return msgspec.structs.replace(
            memory, content=self.rules.in_words(job, line), kind="episodic", actor=NPC, source="said"
        )

    def _untag(self, memory: ExtractedMemory, deeds: list[str]) -> ExtractedMemory:
        self._tally("untagged", "the cited lines tell of no deed (a question, a wish or a denial)")
        gist = min(memory.importance, self.rules.rules.gist_importance)
        tags = tuple(t for t in memory.tags if t not in deeds)
        return msgspec.structs.replace(memory, tags=tags, importance=gist, valence="neutral", source="said")

    def _keep(self, memory: ExtractedMemory) -> ExtractedMemory:
        self.stats.kept += 1
        return memory

    def _count(
        self, outcome: Outcome, reason: str, memory: ExtractedMemory, source: MemorySource
    ) -> ExtractedMemory:
        self._tally(outcome, reason)
        return msgspec.structs.replace(memory, source=source)

    def _drop(self, reason: str) -> ExtractedMemory | None:
        self._tally("dropped", reason.split(" (")[0])
        return None

    def _tally(self, outcome: Outcome, reason: str) -> None:
        setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)
        key = f"{outcome}: {reason}"
        self.stats.reasons[key] = self.stats.reasons.get(key, 0) + 1


def _subject(clause: Clause, words: frozenset[str]) -> str:
    """Who does what ``clause`` tells, at the first of ``words`` in it."""
    end = next(
        (m.end() for m in _WORD.finditer(clause.text) if words & frozenset(terms(m.group()))),
        len(clause.text),
    )
    return agent(clause, end)


def _told_of_someone(clause: Clause) -> bool:
    """Whether ``clause`` is the player's and opens with the name of someone else as who
    did what it tells ("Bob stole my hammer yesterday"; not "Could you..." or "Thief!")."""
    name = clause.name
    return (
        clause.role == "player"
        and clause.subject == "person"
        and name is not None
        and name.casefold() not in STOP_WORDS
        and len(_WORD.findall(clause.text)) >= 3
    )


def _names_player(job: ExtractionJob, clause: Clause) -> bool:
    """Whether ``clause`` names the player (self-praise in the third person)."""
    lowered = clause.text.casefold()
    return job.player_name.casefold() in lowered or job.player.casefold() in lowered


def _unsaid(content: str, said: str) -> str | None:
    """The first name or number in ``content`` said nowhere in the conversation
    (``said``: its lines, names, role and room, lower-cased), if any. A name of several
    capitalised words is said when its last word is ("the Quiet Hand" of "the Hand's
    price"; not "Mother Wickham")."""
    for match in _NAME.finditer(content):
        words = [
            w.removesuffix("'s").removesuffix("'").strip("-") for w in match.group().split()
        ]
        words = [w for w in words if len(w) >= 2 and w.casefold() not in _NOT_NAMES]
        if not words:
            continue
        if not re.search(rf"\b{re.escape(words[-1].casefold())}", said):
            return words[-1]
    for match in _DIGITS.finditer(content):
        number = match.group()
        if number in said:
            continue
        value = float(number.replace(",", ""))
        if not any(v == value and re.search(rf"\b{w}\b", said) for w, v in _NUMBER_WORDS.items()):
            return number
    return None
