"""The rule-based extractor: the offline default and the LLM's fallback.

Deterministic and fast. Each line is read clause by clause (:mod:`npc_memory.extraction.
speech`): who said it, who it is about, and whether it tells of something that happened
at all — questions, negations, hypotheticals, hearsay and figures of speech do not.

- **Deeds and acts.** Cue words mark a clause with a tag (theft, heroic, trade, …). A deed
  belongs to the clause's subject: "I stole your purse" said by the NPC is the NPC's own
  confession, "you stole a loaf" said by the NPC is the player's deed, "Bob stole my
  hammer" is neither's. Acts done by speaking (trading, threatening, insulting, confiding)
  belong to the speaker. The player's own account of a deed ("I saved the village") is a
  *claim*. Tags of one actor group into memories (deeds, exchanges, hostility,
  confidences), led by the most important tag; a habit marker ("you always haggle")
  makes a deed or exchange procedural.
- **Facts.** What a speaker tells about themselves (name, origin, family, work, likes,
  plans) is kept in their own words: the player's as semantic memories about the player,
  the NPC's as its own.
- **Gist.** A line that matches no cue but says something (enough words that are not
  small talk) is kept in the speaker's words, with importance from how much it says,
  its names and numbers, its feeling and how new its words are to the conversation; a
  few such lines
  in a row (a stretch of talk on one subject) make one memory. A stretch where the player
  tells of something they did elsewhere ("I slipped the purse under his door") is their
  claim.

What the NPC itself said is kept with ``actor="npc"``: it never counts against or for the
player. A conversation yields at most ``memories_per_line`` × its lines memories (at
least 3, at most ``max_memories``), each at most once. Greetings and small talk yield
nothing.

The tags, cue words, the words that cancel them, the weights and the wording are
content: they come from a pack's ``[extraction]`` section (:class:`~npc_memory.content.
schema.ExtractionRules`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import msgspec

from npc_memory.components.memory import MemoryKind, MemorySource, Valence
from npc_memory.content.schema import ExtractionRules, ExtractionTag, Who
from npc_memory.extraction.model import MAX_CONTENT, Actor, ExtractedMemory, ExtractionJob, Turn
from npc_memory.extraction.speech import (
    AGENTS,
    TO_LISTENER,
    Clause,
    Reader,
    Role,
    agent,
    tells_own_deed,
    told_in_past,
)
from npc_memory.rules.text import STOP_WORDS, terms


@dataclass(frozen=True)
class Cue:
    """A pattern that, said by ``who``, marks a clause with ``tag``. ``stems`` are the
    first three letters of a word each of its alternatives must start with (``None``: an
    alternative may start anywhere), so most clauses are ruled out without the pattern."""

    tag: str
    who: Who
    pattern: re.Pattern[str]
    stems: frozenset[str] | None = None


_GROUP = re.compile(r"^\(\?:([a-z' ?|]+)\)")
_PLAIN = re.compile(r"[a-z']+\??[a-z]*")


def _key(word: str) -> str | None:
    """The first letters (up to three, apostrophes dropped) every match of ``word`` starts
    with, or None if it may start otherwise."""
    plain = _PLAIN.match(word)
    if plain is None:
        return None
    token = plain.group()
    if token.endswith("?") or word[len(token):][:1] in ("?", "*", "{", "(", "[", "\\"):
        token = token[:-1]  # its last letter is optional, or a pattern follows
    token = token.replace("'?", "").replace("'", "").rstrip("?")
    return token[:3] or None


def _stems(words: list[str]) -> frozenset[str] | None:
    """The starts (:func:`_key`) of ``words``, regular expressions of one cue; None when
    one of them may start with anything."""
    found: set[str] = set()
    for word in words:
        word = word.lower()
        group = _GROUP.match(word)
        alternatives = group.group(1).split("|") if group is not None else [word]
        for alternative in alternatives:
            if alternative.startswith("\\d"):
                found.update("0123456789")  # a number: any digit
                continue
            key = _key(alternative)
            if key is None:
                return None
            found.add(key)
    return frozenset(found)


def _names_the_doer(clause: Clause, start: int) -> bool:
    """Whether ``clause`` opens with the name of who does the deed whose cue starts at
    ``start``: a name before the cue (not the cue itself: "Thief!") in a clause of three
    words or more (not a sentence-opening word: "Guard up!", "Swear it.")."""
    name = clause.name
    if name is None or name.lower() in STOP_WORDS or len(_WORD.findall(clause.text.lower())) < 3:
        return False
    at = clause.text.find(name)
    return at >= 0 and at + len(name) <= start


def _source_of(lead: Hit, valence: Valence) -> MemorySource:
    """How the NPC knows the deed ``lead`` tells (of ``valence`` to it): the player's own
    account of a deed is a claim, but of one against the NPC ("I took your apples") an
    admission, and of a good one done for the NPC that it thanked them for, their word taken,
    both in their own words (said); what the player tells of someone else,
    hearsay; the NPC's own words, said; the rest (done in the conversation, or to the
    NPC) witnessed."""
    if lead.actor == "player" and lead.claim:
        against_npc = valence == "negative" and TO_LISTENER.search(lead.clause.text) is not None
        return "said" if against_npc or lead.taken else "claimed"
    if lead.actor == "player":
        return "witnessed"
    if lead.actor == "npc":
        return "said"
    return "heard" if lead.clause.role == "player" else "said"


class Hit(msgspec.Struct, frozen=True, gc=False):
    """A tag found in a clause, credited to ``actor`` (``"player"``, ``"npc"`` or the
    name of a third party); ``claim`` when it is the player's own account of a deed."""

    tag: str
    actor: str
    clause: Clause
    claim: bool
    offer: bool = False
    promised: str | None = None
    """The deed tag the player promised, when this hit is that promise (``promise_tag``)."""
    taken: bool = False
    """The player's claim of a good deed done for the NPC, which the NPC then thanked them
    for: their word, taken (``said``)."""


@dataclass
class Reading:
    """A transcript being read, one line per :meth:`RuleBasedExtractor.step`, so that a
    reading can stop at a deadline and resume where it stopped: the clauses and tags
    found so far and the lines worth keeping as gist. ``memories`` is set (and ``done``)
    once every line is read."""

    job: ExtractionJob
    roles: list[Role]
    names: frozenset[str]
    line: int = 0
    """The next line to read."""
    clauses: list[Clause] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    gist: list[tuple[int, float, str]] = field(default_factory=list)
    """(line, importance, statement) of the informative lines read so far."""
    seen: set[str] = field(default_factory=set)
    """The words of the lines read so far (how new a line's words are)."""
    memories: tuple[ExtractedMemory, ...] | None = None

    @property
    def done(self) -> bool:
        """Whether every line is read and ``memories`` is set."""
        return self.memories is not None


def _words(words: list[str]) -> str:
    return "|".join(words)


def _any_of(words: list[str]) -> re.Pattern[str] | None:
    return re.compile(rf"\b(?:{_words(words)})\b", re.IGNORECASE) if words else None


DEFAULT_RULES = ExtractionRules()
"""The built-in tags and cues (what a pack without ``[extraction]`` gets)."""

RULE_TAGS: frozenset[str] = frozenset(DEFAULT_RULES.tags)
"""Every tag the rule-based extractor can produce with the default rules."""

DEAL_REACH = 4
"""Lines before a deal is closed whose trading it closes."""

CACHED_LINES = 4096
"""Readings of lines kept for lines said again."""

_WORD = re.compile(r"[a-z0-9']+")
_NAME_WORD = re.compile(r"[a-z']+")
_SENTENCES = re.compile(r"[^.!?]+(?:[.!?]+|$)")
_OWN_WORD = re.compile(r"\bi (?:told you|said|say)\b", re.IGNORECASE)
"""Speech the speakers report of themselves ("I told you I'd two brothers"): what they tell
of themselves in it is no hearsay."""

_RHETORICAL = re.compile(r"\bwhat i (?:love|like|hate|want|need|miss)\?", re.IGNORECASE)
"""A question the speakers answer themselves ("Y'know what I love? Pipes."): what it
tells of them counts."""

_DOER_NOUN = re.compile(
    r"(?:thie(?:f|ves)|pickpockets?|cutpurses?|robbers?|murderers?|killers?|liars?|traitors?|cowards?)$",
    re.IGNORECASE,
)
_NOUN_ARTICLE = re.compile(r"\b(?:a|an|the|any|every|some)\s+$", re.IGNORECASE)
_COPULA_ARTICLE = re.compile(
    r"(?:\b(?:am|is|are|was|were|be|been|being|not|no|such|but)|'m|'re|'s)\s+(?:a|an|the|any|every|some)\s+$",
    re.IGNORECASE,
)
"""A doer's noun ("thief") after an article names the doer only after a copula ("you're a
thief"): as an object ("I hate a liar worse than a thief", "caught a thief", "like a thief")
it is no deed."""

_OFFER = re.compile(r"\b(?:i'?ll|we'?ll|will|let me|let us|let's|going to|gonna|can|shall)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred)\b")
_PRICE = re.compile(
    r"^\W*(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
    r"|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|a hundred)"
    r"(?:[- ]\w+)?\b(?:\W*$| (?:for|and|with|apiece|each|the|a|it is)\b)",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+")


class RuleBasedExtractor:
    """Turns a transcript into memories by reading its clauses (see module docstring).

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
            Cue(tag, cue.who, re.compile(rf"\b(?:{_words(cue.words)})\b", re.IGNORECASE), _stems(cue.words))
            for tag, entry in self.rules.tags.items()
            for cue in entry.cues
        )
        self._cues_of: dict[str, tuple[Cue, ...]] = {
            role: tuple(cue for cue in self._cues if cue.who in ("any", role)) for role in ("player", "npc")
        }
        """The cues each role's clauses are read for, in order."""
        self._groups = {tag: entry.group or tag for tag, entry in self.rules.tags.items()}
        self._group_order = {group: i for i, (group, _) in enumerate(self.rules.groups())}
        negations = self.rules.negations
        self._negation = (
            re.compile(
                rf"\b(?:{_words(negations)})\W+(?:[\w']+\W+){{0,{self.rules.negation_reach}}}$",
                re.IGNORECASE,
            )
            if negations
            else None
        )
        self._negation_word = _any_of(negations)
        self._habit = _any_of(self.rules.habit_markers)
        self._personal_question = _any_of(self.rules.personal_questions)
        self._deal = _any_of(self.rules.deal_markers)
        self._harm = _any_of(self.rules.harm_to_npc)
        self._gratitude = _any_of(self.rules.gratitude)
        self._deal_tags = frozenset(self.rules.deal_tags)
        self._told_tag = next((t for t, e in self._tags.items() if e.act == "fact" and t == "personal"), None)
        """The tag of what a player tells of themselves unprompted by a cue (see :meth:`_told`)."""
        self._heat = _any_of(self.rules.intensity.heat_words)
        self._emotion = _any_of(self.rules.emotion_words)
        self._small_talk = frozenset(terms(" ".join(self.rules.small_talk))) | STOP_WORDS
        self._reader = Reader(self.rules)
        # A line's reading depends on its text, who said it and the names it addresses
        # alone: lines said again (greetings, an NPC's scripted lines) are read once.
        self._line = functools.lru_cache(maxsize=CACHED_LINES)(self._line_uncached)
        self._said = functools.lru_cache(maxsize=CACHED_LINES)(self._said_uncached)

    # ------------------------------------------------------------------ reading

    def act(self, tag: str) -> str:
        """Whose doing ``tag`` reveals: "deed", "speech" or "fact" (unknown tags: "deed")."""
        entry = self._tags.get(tag)
        return entry.act if entry is not None else "deed"

    def negated(self, clause: Clause) -> bool:
        """Whether ``clause`` holds a negation anywhere."""
        return self._negation_word is not None and self._negation_word.search(clause.text) is not None

    def roles(self, job: ExtractionJob) -> list[Role]:
        """Who said each line of ``job``: the player (by name or key) or the NPC."""
        player = (job.player_name.lower(), job.player.lower())
        return ["player" if turn.speaker.lower() in player else "npc" for turn in job.turns]

    def clauses(self, job: ExtractionJob) -> list[Clause]:
        """The clauses of ``job``'s transcript, read for subject and mood."""
        return self._reader.clauses(job.turns, self.roles(job), _names(job))

    def hits(self, job: ExtractionJob, clauses: list[Clause] | None = None) -> list[Hit]:
        """Every tag found in ``job``'s clauses, in order, with who it is credited to."""
        return self._hits(self.clauses(job) if clauses is None else clauses, _first_names(job))

    def _hits(self, clauses: Sequence[Clause], speakers: tuple[str, str] = ("", "")) -> list[Hit]:
        found = []
        for clause in clauses:
            starts = {w[:n] for w in _WORD.findall(clause.text.lower().replace("'", "")) for n in (1, 2, 3)}
            for cue in self._cues_of[clause.role]:
                if cue.stems is not None and not cue.stems & starts:
                    continue
                hit = self._hit(cue, clause, speakers)
                if hit is not None:
                    found.append(hit)
        return found

    def _hit(self, cue: Cue, clause: Clause, speakers: tuple[str, str] = ("", "")) -> Hit | None:
        entry = self._tags[cue.tag]
        act = entry.act
        hearsay = clause.hearsay and not (act == "fact" and _OWN_WORD.search(clause.text) is not None)
        question = clause.question and not (act == "fact" and _RHETORICAL.search(clause.text) is not None)
        if hearsay or (question and not (act == "speech" and clause.request)):
            return None
        hypothetical = clause.hypothetical and not clause.request and not entry.conditional
        if act != "fact" and (clause.figure or hypothetical):
            return None
        for match in cue.pattern.finditer(clause.text):
            before = clause.text[: match.start()]
            if act != "fact" and self._negation is not None and self._negation.search(before):
                continue
            if (
                _DOER_NOUN.search(match.group())
                and _NOUN_ARTICLE.search(before)
                and not _COPULA_ARTICLE.search(before)
            ):
                continue  # the noun is an object, not who the clause says did it
            start, end, praise = match.start(), match.end(), cue.who == "npc"
            doer = _doer_end(clause.text, start, end)
            return self._credit(cue.tag, act, clause, doer, start, entry.claimable, speakers, end, praise)
        return None

    @staticmethod
    def _credit(
        tag: str,
        act: str,
        clause: Clause,
        end: int,
        start: int = 0,
        claimable: bool = True,
        speakers: tuple[str, str] = ("", ""),
        cue_end: int | None = None,
        praise: bool = False,
    ) -> Hit | None:
        """Who ``clause``'s ``tag`` is credited to (its doer is the nearest subject before
        ``end``, see :func:`_doer_end`); ``speakers`` are the first names of the player and
        the NPC, lower-case: a clause opening with one as its subject is that one's deed
        ("Mallory saved the village." said by Mallory is her own account, a claim).
        ``praise``: the cue is one only the NPC says of the player's deed ("Good eye."),
        the listener's when the clause names no doer."""
        speaker: Actor = clause.role
        listener: Actor = "npc" if speaker == "player" else "player"
        if act == "fact":
            return Hit(tag, speaker, clause, claim=False)
        if act == "speech":  # the speaker's, unless said of someone else ("he threatened me")
            someone = clause.name is None or _names_the_doer(clause, start)
            if clause.subject == "person" and someone:
                return None
            told = speaker == "player" and _REPORTED.search(clause.text[:start]) is not None
            return Hit(tag, speaker, clause, claim=told)  # "I called the reeve a fool": told of, a claim
        subject = agent(clause, end)
        own, other = speakers if speaker == "player" else speakers[::-1]
        opening = _opening_name(clause.text) if subject in ("command", "other") else ""
        if opening and opening in (own, other):
            subject = "first" if opening == own else "second"  # "Mallory saved the village."
        name = clause.name
        if subject == "person" and name is not None and clause.text.find(name) + len(name) > start:
            subject = "other"  # the capitalised word opening the clause is the cue, not a name: "Sharp eyes."
        if subject == "person" and _names_the_doer(clause, start):  # "Bob stole my hammer": Bob's deed
            assert clause.name is not None
            return Hit(tag, clause.name, clause, claim=False)
        seen = not claimable and TO_LISTENER.search(clause.text) is not None
        if subject == "first":  # an account of a deed is a claim; an offer made here is not
            offer = is_offer(clause.text[: max(end, cue_end or 0)])
            claim = speaker == "player" and not seen and not offer
            return Hit(tag, speaker, clause, claim=claim, offer=offer)
        if subject == "second":
            return Hit(tag, listener, clause, claim=False)
        if subject in ("command", "other"):
            if praise:
                return Hit(tag, listener, clause, claim=False)
            if speaker == "player" and not seen and told_in_past(clause.text):
                return Hit(tag, speaker, clause, claim=True)  # "Tracked him three days ...": the "I" left out
            return Hit(tag, speaker, clause, claim=False)
        if subject == "thing" and seen:
            return Hit(tag, speaker, clause, claim=False)  # an act seen as it is done: "..., a gift for you."
        return None

    # ------------------------------------------------------------------ memories

    def extract(self, job: ExtractionJob) -> tuple[ExtractedMemory, ...]:
        """The memories worth keeping from ``job``'s conversation (deterministic)."""
        reading = self.read(job)
        while not self.step(reading):
            pass
        return reading.memories or ()

    def read(self, job: ExtractionJob) -> Reading:
        """Start reading ``job``'s transcript: :meth:`step` reads it a line at a time."""
        return Reading(job, self.roles(job), _names(job))

    def step(self, reading: Reading) -> bool:
        """Read the next line of ``reading`` (its clauses, their tags and whether it says
        something worth keeping), or, after the last line, turn what was read into its
        memories. Returns whether the reading is done; the memories are the same however
        the steps are spread over time."""
        if reading.memories is not None:
            return True
        job = reading.job
        if reading.line >= len(job.turns):
            reading.memories = self._memories(reading)
            return True
        line = reading.line
        turn, role = job.turns[line], reading.roles[line]
        names = self._reader.names_in(turn.text, reading.names)
        player, npc = _first_names(job)
        clauses, hits = self._line(
            turn.text, role, names, player if player in names else "", npc if npc in names else ""
        )
        if line:  # read as a first line: numbered here
            numbered = {id(c): msgspec.structs.replace(c, line=line) for c in clauses}
            clauses = tuple(numbered.values())
            hits = tuple(msgspec.structs.replace(h, clause=numbered[id(h.clause)]) for h in hits)
        reading.clauses += clauses
        reading.hits += hits
        scored = self._score(job, line, reading.seen)
        if scored is not None:
            reading.gist.append(scored)
        reading.line += 1
        return False

    def _memories(self, reading: Reading) -> tuple[ExtractedMemory, ...]:
        """The memories of a transcript read to its end."""
        job, hits = reading.job, reading.hits
        if not job.turns:
            return ()
        events: dict[tuple[str, str], list[Hit]] = {}
        facts: dict[int, Hit] = {}
        hits = self._exchanges(reading, hits)
        thanked = self._thanked(reading)
        if thanked is not None:
            hits = self._thanks(reading, hits, thanked)
        promise = self.rules.promise_tag
        deed_lines = {h.clause.line for h in hits if self._tags[h.tag].act != "fact"}
        hostile = {id(h.clause) for h in hits if self._tags[h.tag].valence == "negative"}
        for hit in hits:
            promised = hit.offer and hit.actor == "player" and self._tags[hit.tag].act == "deed"
            if promised and id(hit.clause) in hostile:
                continue  # "I'll gut you": a threat, not a deed promised
            if promise is not None and promised:
                hit = msgspec.structs.replace(hit, tag=promise, promised=hit.tag)  # a task taken on
            if self._tags[hit.tag].act == "fact":
                if hit.actor == "player" or hit.clause.line not in deed_lines:  # (the NPC's deed, not a fact)
                    facts.setdefault(hit.clause.line, hit)
                continue
            group = events.setdefault((hit.actor, self._groups[hit.tag]), [])
            if all(h.tag != hit.tag for h in group):
                group.append(hit)
        done = {hit.tag for hit in hits if hit.actor == "player" and hit.promised is None and not hit.offer}
        kept_promise: set[int] = set()  # lines of deeds promised and then done: the deed's
        for key, group in list(events.items()):
            kept_promise.update(hit.clause.line for hit in group if hit.promised in done)
            group[:] = [hit for hit in group if hit.promised not in done]
            if not group:
                del events[key]
        deeds = {hit.clause.line for group in events.values() for hit in group}
        for line, clause in self._told(reading):
            if line not in deeds:
                facts.setdefault(line, Hit(self._told_tag or "", "player", clause, claim=False))
        for actor, name in list(events):
            if actor == "npc" and ("player", name) in events:
                del events[actor, name]  # one exchange, one task: remembered as the player's part
        text = " ".join(turn.text for turn in job.turns)
        order = self._group_order
        ordered = sorted(events.items(), key=lambda item: (item[0][0] != "player", order[item[0][1]]))
        memories = sorted(
            (self._event(job, hits_of_group, text) for _, hits_of_group in ordered),
            key=lambda m: (m.actor != "player", -m.importance),
        )
        used = {h.clause.line for group in events.values() for h in group} | kept_promise
        by_player_first = sorted(facts.items(), key=lambda item: item[1].actor != "player")
        memories += [self._fact(job, line, hit) for line, hit in by_player_first]
        used |= facts.keys()
        told = {
            c.line
            for c in reading.clauses
            if c.role == "player" and tells_own_deed(c) and not self.negated(c)
        }
        gist = [item for item in reading.gist if item[0] not in used]
        memories += self._gist(job, reading.roles, gist, told)
        limit = min(self.rules.max_memories, max(3, round(len(job.turns) * self.rules.memories_per_line)))
        kept: list[ExtractedMemory] = []
        seen: set[str] = set()
        for memory in memories:
            if memory.content not in seen:
                seen.add(memory.content)
                kept.append(memory)
        return tuple(kept[:limit])

    def _exchanges(self, reading: Reading, hits: list[Hit]) -> list[Hit]:
        """``hits`` with trading read as exchanges: trading is one only when a deal closes
        it (see :meth:`_dealt`) or a habit marker says it is routine ("as usual"), and then
        it was done with the player, whoever named the price; a deal closed after prices
        were named ("Thirty for the pair." "Done.") is one even where no trading word was
        said. Other trading talk is no exchange."""
        if not self._deal_tags:
            return hits
        closed = self._dealt(reading.clauses)
        window = range(closed - DEAL_REACH, closed + 1) if closed is not None else range(0)
        habit = self._habit
        kept = [
            h for h in hits
            if h.tag not in self._deal_tags or h.clause.line in window
            or (habit is not None and habit.search(reading.job.turns[h.clause.line].text) is not None)
        ]
        traded = [
            msgspec.structs.replace(h, actor="player", claim=False) for h in kept if h.tag in self._deal_tags
        ]
        if closed is not None and not traded:
            priced = any(  # a price named as haggling does: "Thirty for the pair." "Eleven."
                _PRICE.match(clause.text) is not None for clause in reading.clauses if clause.line in window
            )
            first = next((c for c in reading.clauses if c.line == closed), None)
            if priced and first is not None:
                traded = [Hit(self.rules.deal_tags[0], "player", first, claim=False)]
        return [h for h in kept if h.tag not in self._deal_tags] + traded

    def _thanked(self, reading: Reading) -> int | None:
        """The first line where the NPC thanks the player (one of ``gratitude``) for what
        they said or did before it, not in a question nor after a negation ("Don't thank
        me yet")."""
        if self._gratitude is None:
            return None
        for line, turn in enumerate(reading.job.turns):
            if reading.roles[line] != "npc" or "player" not in reading.roles[:line]:
                continue  # (thanks for something the player said or did here)
            for found in self._gratitude.finditer(turn.text):
                sentence = next(
                    (s for s in _SENTENCES.finditer(turn.text) if s.start() <= found.start() < s.end()), None
                )
                if sentence is None or sentence.group().rstrip().endswith("?"):
                    continue
                before = turn.text[sentence.start() : found.start()]
                if self._negation is None or not self._negation.search(before):
                    return line
        return None

    def _thanks(self, reading: Reading, hits: list[Hit], line: int) -> list[Hit]:
        """``hits`` with the NPC's thanks on line ``line`` read: the player's claims of a
        good deed done for the NPC before it are taken; with no deed or act of the player
        found at all, the thanks are for one, under ``gratitude_tag``."""
        tags = self._tags
        taken = {
            id(h) for h in hits
            if h.actor == "player" and h.claim and h.clause.line < line and tags[h.tag].valence == "positive"
            and TO_LISTENER.search(reading.job.turns[h.clause.line].text) is not None
        }  # fmt: skip
        if taken:
            return [msgspec.structs.replace(h, taken=True) if id(h) in taken else h for h in hits]
        tag = self.rules.gratitude_tag
        if tag is None or any(h.actor == "player" and tags[h.tag].act != "fact" for h in hits):
            return hits
        clause = next((c for c in reading.clauses if c.line == line), None)
        return hits if clause is None else [*hits, Hit(tag, "player", clause, claim=False)]

    def _dealt(self, clauses: Sequence[Clause]) -> int | None:
        """The last line of the talk with a clause that closes an exchange (one of
        ``deal_markers``, neither asked, hypothetical nor negated before it), if any."""
        if self._deal is None:
            return None
        last = None
        for clause in clauses:
            if clause.question or clause.hypothetical or clause.hearsay:
                continue
            text = clause.text.strip().rstrip(".!?,;: ")  # (a marker may have to end the clause)
            found = self._deal.search(text)
            if found is None:
                continue
            if self._negation is None or not self._negation.search(text[: found.start()]):
                last = clause.line
        return last

    def _told(self, reading: Reading) -> list[tuple[int, Clause]]:
        """(line, its first clause) of the player's lines that tell of themselves without
        a cue: an answer to one of the NPC's personal questions, or a line saying their
        own name ("Tobiah Drew. But nobody calls me that.", "I'm Quinn, from Dunmere."),
        when it states something (where they are from is enough)."""
        if self._told_tag is None:
            return []
        job, roles = reading.job, reading.roles
        first: dict[int, Clause] = {}
        for clause in reading.clauses:
            first.setdefault(clause.line, clause)
        own_name = _own_name(job.player_name)
        name_terms = set(terms(job.player_name))
        found = []
        for line, turn in enumerate(job.turns):
            if roles[line] != "player" or line not in first:
                continue
            asked = (
                line > 0 and roles[line - 1] == "npc" and self._personal_question is not None
                and self._personal_question.search(job.turns[line - 1].text) is not None
            )
            named = own_name is not None and own_name.search(turn.text) is not None
            if not (asked or named):
                continue
            _, words, asks_only, _, _ = self._said(turn.text)
            said = [w for w in words if w not in name_terms]
            place = any(  # "I'm Quinn, from Dunmere": a name of a place (of stems: the word's start)
                re.search(rf"\b(?:from|of|in|at|near) {re.escape(w.capitalize())}", turn.text) for w in said
            )
            if len(said) >= (1 if asked or place else 2) and not asks_only:  # more than a greeting
                found.append((line, first[line]))
        return found

    def in_words(self, job: ExtractionJob, line: int) -> str:
        """Line ``line`` of ``job`` as a memory in its speaker's words: what the NPC told
        the player, or what the player said."""
        turn = job.turns[line]
        actor: Actor = self.roles(job)[line]
        return self._words(job, actor, turn.speaker, self._quote(turn.text), self.rules.gist_template)

    def _quote(self, text: str) -> str:
        limit = self.rules.quote_limit
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    @staticmethod
    def _statement(text: str) -> str:
        """Line ``text`` without its questions (what it states), or the whole line."""
        sentences: dict[str, None] = {}
        for sentence in _SENTENCES.findall(text):
            if not sentence.strip() or sentence.rstrip().endswith("?"):
                continue
            sentences[sentence.strip()] = None
        return " ".join(sentences) or text

    def _words(self, job: ExtractionJob, actor: str, speaker: str, quote: str, template: str) -> str:
        """``quote`` worded by ``template``, or as what the NPC told the player when the NPC
        said it; a deed of the NPC that the player spoke of reads as what the player said."""
        npc_said = speaker.lower() not in (job.player_name.lower(), job.player.lower())
        if npc_said:
            template = self.rules.npc_template
        elif actor == "npc":
            template = self.rules.gist_template
        content = template.format(player=job.player_name, speaker=speaker, quote=quote)
        return content[:MAX_CONTENT]

    def _event(self, job: ExtractionJob, group: list[Hit], text: str) -> ExtractedMemory:
        rules = self.rules
        group = sorted(group, key=lambda h: (-self._tags[h.tag].importance, h.tag))
        lead = group[0]
        primary = self._tags[lead.tag]
        evidence: Turn = job.turns[lead.clause.line]
        kind: MemoryKind = primary.kind if lead.actor == "player" else "episodic"
        habit = self._habit is not None and bool(self._habit.search(evidence.text))
        if kind == "episodic" and habit and primary.habitual and lead.actor == "player":
            kind = "procedural"
        intensity = self._intensity(text)
        boost = rules.intensity.importance_boost if intensity > rules.intensity.boost_above else 0.0
        importance = min(1.0, primary.importance + boost)
        valences = {self._tags[h.tag].valence for h in group}
        harm = self._harm
        if lead.actor == "player" and harm is not None and any(harm.search(h.clause.text) for h in group):
            valences.add("negative")  # a fight against the NPC itself ("you swung at me")
        valence: Valence = "neutral"
        if "negative" in valences or "positive" in valences:
            valence = "negative" if "negative" in valences else "positive"
        quote = self._quote(evidence.text)
        if lead.actor == "npc":
            content = self._words(job, "npc", evidence.speaker, quote, rules.npc_template)
        elif lead.actor != "player":  # someone else's deed, in the words of who told it
            content = self._words(job, lead.actor, evidence.speaker, quote, rules.gist_template)
        else:
            template = rules.template
            if lead.claim or lead.offer:
                template = rules.claim_template if lead.claim else rules.offer_template
            content = template.format(
                player=job.player_name,
                habitually=rules.habitually if kind == "procedural" else "",
                label=primary.label,
                speaker=evidence.speaker,
                quote=quote,
            )[:MAX_CONTENT]
        return ExtractedMemory(
            content=content,
            kind=kind,
            tags=tuple(h.tag for h in group),
            importance=round(importance, 3),
            valence=valence,
            intensity=round(intensity, 3),
            actor=lead.actor,
            source=_source_of(lead, valence),
            evidence=tuple(sorted({h.clause.line for h in group})),
        )

    def _fact(self, job: ExtractionJob, line: int, hit: Hit) -> ExtractedMemory:
        turn = job.turns[line]
        quote = self._quote(turn.text)
        importance = min(1.0, self._tags[hit.tag].importance + 0.2 * self._specificity(turn.text))
        return ExtractedMemory(
            content=self._words(job, hit.actor, turn.speaker, quote, self.rules.fact_template),
            kind="semantic" if hit.actor == "player" else "episodic",
            tags=(hit.tag,),
            importance=round(importance, 3),
            valence="neutral",
            intensity=round(self._intensity(turn.text), 3),
            actor=hit.actor,
            source="said",
            evidence=(line,),
        )

    def _score(self, job: ExtractionJob, line: int, seen: set[str]) -> tuple[int, float, str] | None:
        """(line, importance, statement) if line ``line`` says something worth keeping as
        gist (``seen``: the words of the lines before it, updated with this one's)."""
        rules = self.rules
        statement, words, asks_only, emotion, specificity = self._said(job.turns[line].text)
        novel = [t for t in words if t not in seen]
        seen.update(words)
        if asks_only or len(set(words)) < rules.gist_min_terms:
            return None
        novelty = len(set(novel)) / max(1, len(set(words)))
        importance = min(
            0.8,
            rules.gist_importance
            + 0.3 * min(1.0, len(set(words)) / 12)  # how much it says
            + 0.15 * specificity
            + 0.15 * emotion
            + 0.1 * novelty,
        )
        return line, importance, statement

    def _said_uncached(self, text: str) -> tuple[str, tuple[str, ...], bool, float, float]:
        """What line ``text`` states (see :meth:`_statement`), its words that are not small
        talk, whether it only asks, and its feeling and specificity."""
        statement = self._statement(text)
        words = tuple(t for t in terms(statement) if t not in self._small_talk and len(t) > 2)
        asks_only = statement == text and "?" in text[-2:]
        feeling = len(self._emotion.findall(statement)) if self._emotion is not None else 0
        return statement, words, asks_only, min(1.0, feeling / 2), self._specificity(statement)

    def _line_uncached(
        self, text: str, role: Role, names: frozenset[str], player: str = "", npc: str = ""
    ) -> tuple[tuple[Clause, ...], tuple[Hit, ...]]:
        """The clauses of ``text`` said by ``role`` as a transcript's first line (``names``:
        the names it may address, see :meth:`Reader.names_in`; ``player``, ``npc``: their
        first names, lower-case, when the line holds them), and their tags."""
        clauses = self._reader.line(Turn("", text), 0, role, names)
        return tuple(clauses), tuple(self._hits(clauses, (player, npc)))

    def _gist(
        self,
        job: ExtractionJob,
        roles: list[Role],
        scored: list[tuple[int, float, str]],
        told: Collection[int] = (),
    ) -> list[ExtractedMemory]:
        """Stretches of talk that say something without matching a cue, weightiest
        first: runs of up to ``gist_lines`` informative lines (``scored``, see
        :meth:`_score`), each in its speaker's words. A run holding one of ``told`` (lines
        where the player tells of something they did elsewhere, see
        :func:`~npc_memory.extraction.speech.tells_own_deed`) is the player's claim."""
        rules = self.rules
        runs: list[list[tuple[int, float, str]]] = []
        for item in scored:
            run = runs[-1] if runs else None
            if run is not None and item[0] == run[-1][0] + 1 and len(run) < rules.gist_lines:
                run.append(item)
            else:
                runs.append([item])
        found: list[tuple[float, int, ExtractedMemory]] = []
        for run in runs:
            lead = max(run, key=lambda item: item[1])
            actor: Actor = roles[lead[0]]
            speaker = job.turns[run[0][0]].speaker
            quote = '" '.join(
                statement if n == 0 else f'{job.turns[line].speaker}: "{statement}'
                for n, (line, _, statement) in enumerate(run)
            )
            claim = any(line in told for line, _, _ in run)
            memory = ExtractedMemory(
                content=self._words(job, roles[run[0][0]], speaker, self._quote(quote), rules.gist_template),
                kind="episodic",
                tags=(),
                importance=round(lead[1], 3),
                valence="neutral",
                intensity=round(max(self._intensity(statement) for _, _, statement in run), 3),
                actor="player" if claim else actor,
                source="claimed" if claim else "said",
                evidence=tuple(line for line, _, _ in run),
            )
            found.append((lead[1], -run[0][0], memory))
        found.sort(key=lambda item: (-item[0], -item[1]))
        return [memory for _, _, memory in found]

    def _specificity(self, text: str) -> float:
        """Names and numbers in ``text``, in [0, 1]."""
        return min(1.0, (len(_NAME.findall(text)) + len(_NUMBER.findall(text.lower()))) / 2)

    def _intensity(self, text: str) -> float:
        weights = self.rules.intensity
        heat = len(self._heat.findall(text)) if self._heat is not None else 0
        return min(
            1.0,
            weights.base
            + weights.per_exclamation * min(text.count("!"), weights.max_exclamations)
            + weights.per_heat_word * min(heat, weights.max_heat_words),
        )


_REPORTED = re.compile(
    r"\bi (?:\w+ )?(?:called|told|said to|cursed|named|shouted at|yelled at|swore at|threatened|warned)\b",
    re.IGNORECASE,
)
"""Words of a speaker telling what they said before ("I called the reeve a fool"): what
they said then is their account of it, not said to the listener now."""
_OPENING_NAME = re.compile(r"^\W*([A-Z][\w']*)\b(?!\s*,)")


def _opening_name(text: str) -> str:
    """The capitalised word ``text`` opens with, lower-case, unless it addresses the
    listener ("Alice, take this"); "" for none."""
    found = _OPENING_NAME.match(text)
    return found.group(1).lower() if found is not None else ""


def _doer_end(text: str, start: int, end: int) -> int:
    """Where to look back from for who does the deed of the cue at ``text[start:end]``:
    past the first subject pronoun the cue itself holds ("i brought you", "medicine you
    brought"; not the one it ends on: "gut you"), else its start (the nearest before it)."""
    words = list(_WORD.finditer(text.lower(), start, end))
    for word in words[:-1]:  # a pronoun the cue ends on is its object ("gut you")
        if word.group() in AGENTS:
            return word.end()
    return start


def _first_names(job: ExtractionJob) -> tuple[str, str]:
    """The first words of the player's and the NPC's names, lower-case."""
    player = _NAME_WORD.search(job.player_name.lower())
    npc = _NAME_WORD.search(job.npc_name.lower())
    return (player.group() if player else "", npc.group() if npc else "")


def _names(job: ExtractionJob) -> frozenset[str]:
    """The words of the NPC's and the player's names, lower-case (skipped where a line
    addresses someone by name)."""
    return frozenset(
        word for name in (job.npc_name, job.player_name) for word in _NAME_WORD.findall(name.lower())
    )


@functools.lru_cache(maxsize=256)
def _own_name(name: str) -> re.Pattern[str] | None:
    """The first word of the player's ``name``, capitalised, as a word of a line."""
    first = _NAME_WORD.search(name.lower())
    return None if first is None else re.compile(rf"\b{re.escape(first.group().capitalize())}\b")


def is_offer(text: str) -> bool:
    """Whether ``text`` offers or promises rather than tells ("I'll help", "let me")."""
    return _OFFER.search(text) is not None


def summarize(job: ExtractionJob, limit: int = 120, owns_up: re.Pattern[str] | None = None) -> str:
    """A one-line summary of a conversation for working memory: who, how long, and the
    player's first line; or, when a later line of theirs owns up to something
    (``owns_up``, the pack's ``[knowledge] corrections``), the last such line."""
    names = (job.player_name.lower(), job.player.lower())
    player_lines = [t.text for t in job.turns if t.speaker.lower() in names]
    opening = (player_lines or [t.text for t in job.turns] or [""])[0]
    if owns_up is not None:
        opening = next((line for line in reversed(player_lines[1:]) if owns_up.search(line)), opening)
    if len(opening) > limit:
        opening = opening[: limit - 3] + "..."
    lines = "1 line" if len(job.turns) == 1 else f"{len(job.turns)} lines"
    return f'Talked with {job.player_name} ({lines}): "{opening}"'
