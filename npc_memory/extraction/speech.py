"""Reading a transcript the way a listener does: lines into sentences and clauses, each
clause with its subject (the speaker, the listener, someone else) and its mood (a
question, a request, a hypothetical, hearsay, a figure of speech), so a cue word counts
only where it tells of something that happened, and is credited to whoever did it.

The words that decide (negations, hypotheticals, hearsay markers, openers, imperatives)
are content: they come from a pack's ``[extraction]`` section.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from npc_memory.content.schema import ExtractionRules
from npc_memory.extraction.model import Turn

Subject = Literal["first", "second", "person", "thing", "command", "other"]
"""Who a clause is about: the speaker ("I", "we"), the listener ("you", "thank you"),
another person ("he", "Bob", "people"), a thing or someone's something ("it", "the
raiders", "my brother", "your god"), a command or offer of the speaker ("take this"), or
no subject at all ("no charge", "forty gold", a lone "traitor" said to the listener)."""

Role = Literal["player", "npc"]

FIRST = frozenset(("i", "i'm", "i've", "i'll", "i'd", "me", "we", "we're", "we've", "we'll", "we'd", "us",
                   "let's", "myself", "ourselves"))
SECOND = frozenset(("you", "you're", "you've", "you'll", "you'd", "thank", "thanks", "yourself",
                    "ye", "ye're", "ye've", "ye'll", "thou", "yerself"))
PERSONS = frozenset(("he", "she", "they", "he's", "she's", "they're", "they've", "they'll", "him", "her",
                     "them", "someone", "somebody", "nobody", "everyone", "everybody", "people", "who",
                     "whoever", "folks", "nobody's", "he'll", "she'll", "he'd", "she'd"))
THINGS = frozenset(("it", "it's", "its", "that", "that's", "this", "there", "there's", "which", "what",
                    "that'll", "it'll", "there'll", "the", "a", "an", "my", "your", "our", "his", "their",
                    "mine", "yours", "one", "some", "many", "most", "all", "those", "these"))
_NOT_NAMES = frozenset((*FIRST, *SECOND, *PERSONS, *THINGS, "please", "no", "yes", "not", "never", "every",
                        "each", "any", "if", "when", "while", "as", "because", "so", "then", "and", "but",
                        "or", "only", "even", "after", "before", "since", "until", "how", "why", "where",
                        "between",
                        "with", "for", "in", "on", "at", "from", "by", "about", "to", "of", "like", "just"))
NUMBERS = frozenset(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                     "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "half", "a", "an"))
_NOT_NAMES_OR_NUMBERS = NUMBERS | _NOT_NAMES
AGENTS: dict[str, Subject] = {
    **dict.fromkeys(("i", "i'm", "i've", "i'll", "i'd", "we", "we're", "we've", "we'll", "we'd"), "first"),
    **dict.fromkeys(("you", "you're", "you've", "you'll", "you'd", "ye", "ye've", "thou"), "second"),
    **dict.fromkeys(("he", "she", "they", "he's", "she's", "they're", "they've", "he'd", "she'd"), "person"),
}
"""Subject pronouns: the nearest one before a deed's verb says who did it ("I saw you fight")."""
_POINTERS = frozenset(("i", "me", "my", "we", "us", "our", "you", "your", "it", "this", "that", "these",
                       "those", "here", "there", "on", "for", "to"))
PREPOSITIONS = frozenset(("for", "to", "with", "at", "on", "from", "of", "about", "by", "like", "than"))

_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")
_CLAUSE = re.compile(r"\s*(?:[,;:]\s*(?:but|and so|so)?|\bbut\b|\s[-–—]\s)\s*", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_WORD_ANY_CASE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?", re.IGNORECASE)
_SOFT_PUNCT = str.maketrans({"’": "'", "‘": "'"})
_QUOTED = re.compile(r'"[^"]+"|“[^”]+”')
"""Words quoted within a line (a saying, what someone said): someone else's, reported."""
_PAST_VERBS = (
    r"\w+(?<!e)ed|found|took|put|ran|held|went|got|brought|caught|fought|stood|gave|made|did|set|shot|"
    r"threw|drove|rode|swam|dug|stole|slew|won|carried|kept|left|sold|bought|paid|built|rebuilt|broke|"
    r"slipped|spent|lent|sent|hid|lost|beat|saw|met|told|taught|swore|tore|wore|wrote|bit"
)
_PAST = re.compile(rf"^\W*(?:(?:then|and|so|later|after that)\W+)?({_PAST_VERBS})\b(?!['’])", re.IGNORECASE)
_OWN_PAST = re.compile(
    rf"\b(?:i|we)\s+(?:(?:then|just|once|also|only|even|\w+ly)\s+)?({_PAST_VERBS})\b(?!['’])", re.IGNORECASE
)
"""The speaker telling of having done something: "I slipped the purse under his door"."""
_NOT_DEEDS = frozenset((
    "said", "asked", "answered", "meant", "mentioned", "heard", "overheard", "thought", "knew", "saw",
    "watched", "noticed", "spotted", "smelled", "felt", "seemed",
    "wanted", "needed", "liked", "loved", "hated", "hoped", "wished", "lived", "used", "believed", "guessed",
    "reckoned", "figured", "wondered", "learned", "remembered", "forgot", "supposed", "expected",
    "enjoyed", "preferred", "missed", "worried", "decided", "promised", "agreed", "named", "called",
    "got", "lost", "married", "moved", "started", "finished", "tried", "planned", "stayed", "waited",
))
"""Verbs in the past tense that tell of a thought, a feeling, a state or words, not a deed."""
_SPOKEN_DEEDS = frozenset(("told", "swore"))
"""Hearsay markers that, with the speaker as subject, tell of what the speaker did."""
_PRESUPPOSED = re.compile(
    r"^\W*(?:(?:so|and|then|ah|oh)\W+)?(?:you'?re|you are|ye'?re) the one\b", re.IGNORECASE
)
"""A question that takes its deed as known, asking only who: "You're the one pulled her out?"."""
TO_LISTENER = re.compile(r"\b(?:you|your|ye|yours)\b", re.IGNORECASE)
"""Words for the listener: what a clause holding one does, it does to or with them."""
_NAMES_IN_ED = re.compile(r"\w{0,2}ed|\w*(?:fred|dred|fried)", re.IGNORECASE)
"""Names that end like a verb in the past tense: Ed, Ted, Ned, Fred, Alfred, Mildred."""


def told_in_past(text: str) -> bool:
    """Whether ``text`` opens with a verb in the past tense, its subject left out: what
    the speaker tells of having done ("Tracked him three days into the hills")."""
    found = _PAST.match(text)
    return found is not None and _NAMES_IN_ED.fullmatch(found.group(1)) is None



class Clause(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One clause of a line: its text, who said it, what it is about and its mood."""

    text: str
    line: int
    role: Role
    subject: Subject
    question: bool
    request: bool
    hypothetical: bool
    hearsay: bool
    figure: bool
    name: str | None = None
    """The name that opens the clause as its subject ("Bob stole my hammer"), if any."""


def _alternatives(words: list[str]) -> re.Pattern[str] | None:
    return re.compile(rf"\b(?:{'|'.join(words)})\b", re.IGNORECASE) if words else None


class Reader:
    """Splits lines into clauses and reads their subject and mood by ``rules``."""

    def __init__(self, rules: ExtractionRules) -> None:
        self.openers = frozenset(word.lower() for word in rules.openers)
        self.imperatives = frozenset(word.lower() for word in rules.imperatives)
        self.hypothetical = _alternatives(rules.hypotheticals)
        self.hearsay = _alternatives(rules.hearsay)
        self.figure = _alternatives(rules.figures)
        self.request = (
            re.compile(rf"^\W*(?:{'|'.join(rules.requests)})\b", re.IGNORECASE) if rules.requests else None
        )
        self.conditional = re.compile(r"^\W*(?:if|unless|imagine|suppose|supposing|what if)\b", re.IGNORECASE)
        self.mood = _alternatives([*rules.hypotheticals, *rules.hearsay, *rules.figures])
        """Every hypothetical, hearsay and figure marker at once: most clauses have none (one search)."""

    @staticmethod
    def names_in(text: str, names: frozenset[str]) -> frozenset[str]:
        """Those of ``names`` that ``text`` may address: its reading depends on no other."""
        lowered = text.translate(_SOFT_PUNCT).lower()
        return frozenset(name for name in names if name in lowered)

    def clauses(self, turns: tuple[Turn, ...], roles: list[Role], names: frozenset[str]) -> list[Clause]:
        """Every clause of ``turns`` (``roles[i]`` says who said line ``i``; ``names``,
        lower-case, are skipped where a line addresses someone by name)."""
        found = []
        for index, (turn, role) in enumerate(zip(turns, roles, strict=True)):
            found += self.line(turn, index, role, names)
        return found

    def line(self, turn: Turn, index: int, role: Role, names: frozenset[str]) -> list[Clause]:
        """The clauses of ``turn``, line ``index`` of a transcript, said by ``role``."""
        found: list[Clause] = []
        text = turn.text.translate(_SOFT_PUNCT)
        quotes = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
        for match in _SENTENCE.finditer(text):
            sentence = match.group().strip()
            if not sentence:
                continue
            question = sentence.rstrip().endswith("?") and _PRESUPPOSED.match(sentence) is None
            parts = [p for p in _CLAUSE.split(sentence) if p and p.strip(" .!?")]
            conditional = any(self.conditional.search(part) for part in parts)
            at = match.start()
            for number, part in enumerate(parts):
                at = max(text.find(part, at), at)
                quoted = any(start <= at < end for start, end in quotes)
                clause = self._clause(part, index, role, question, conditional, names, number == 0, quoted)
                if clause.subject == "other" and told_in_past(part):
                    clause = _continued(clause, found)
                found.append(clause)
        return found

    def _clause(
        self,
        text: str,
        line: int,
        role: Role,
        question: bool,
        conditional: bool,
        names: frozenset[str],
        first_clause: bool,
        quoted: bool = False,
    ) -> Clause:
        words = _WORD.findall(text.lower())
        start = 0
        while start < len(words) and (words[start] in self.openers or words[start] in names):
            start += 1
        subject = self.subject(words[start:])
        name = None
        if subject == "other" and start < len(words) and words[start] not in _NOT_NAMES_OR_NUMBERS:
            original = _WORD_ANY_CASE.findall(text)
            if start < len(original) and original[start][:1].isupper() and not told_in_past(original[start]):
                subject, name = "person", original[start]  # a name: "Bob stole my hammer"
        if subject in ("other", "person") and len(words) <= 2 and not set(words) & _POINTERS and (
            not first_clause or (len(words) == 1 and text.rstrip().endswith("!"))
        ):
            subject, name = "second", None  # a name for the listener: "..., traitor.", "Thief!"
        request = question and self.request is not None and bool(self.request.search(" ".join(words[start:])))
        marked = self.mood is not None and self.mood.search(text) is not None
        return Clause(
            text=text,
            line=line,
            role=role,
            subject=subject,
            question=question,
            request=request,
            hypothetical=conditional
            or (marked and self.hypothetical is not None and bool(self.hypothetical.search(text))),
            hearsay=quoted or (marked and self.hearsay is not None and bool(self.hearsay.search(text))),
            figure=marked and self.figure is not None and bool(self.figure.search(text)),
            name=name,
        )

    def subject(self, words: list[str]) -> Subject:
        """Who a clause opening with ``words`` is about."""
        if not words:
            return "other"
        first = words[0]
        if first in FIRST or (first == "let" and words[1:2] in (["me"], ["us"])):
            return "first"
        if first in SECOND:
            return "second"
        if first in PERSONS:
            return "person"
        if first in THINGS:
            return "thing"
        if first in self.imperatives:
            return "command"
        return "other"


def _continued(clause: Clause, before: list[Clause]) -> Clause:
    """``clause``, its subject left out, about whom the last of ``before`` (the clauses
    of its line so far) was about ("They've gone. Took their wounded."): a clause of
    three words or more, not a filler ("you know", "too"). Without one the clause keeps
    its subject: the speaker's own deed ("Tracked him three days into the hills")."""
    for earlier in reversed(before):
        if len(_WORD.findall(earlier.text.lower())) >= 3:
            if earlier.subject == "other":
                return clause
            return msgspec.structs.replace(clause, subject=earlier.subject, name=earlier.name)
    return clause


def agent(clause: Clause, end: int) -> Subject:
    """Who does what is said at ``end`` of ``clause``'s text: the nearest subject pronoun
    before it (not the object of a preposition: "I covered for you" is the speaker's
    doing), else the clause's subject."""
    words = _WORD.findall(clause.text[:end].lower())
    for index in range(len(words) - 1, -1, -1):
        found = AGENTS.get(words[index])
        if found is not None and (index == 0 or words[index - 1] not in PREPOSITIONS):
            return found
    return clause.subject


def tells_own_deed(clause: Clause) -> bool:
    """Whether ``clause`` is its speaker's account of something they did elsewhere, told
    in the past tense ("I slipped the purse under his door", "Walked into his yard at
    noon", "I told him his master was a fat tick"): not asked, supposed, heard from others
    or a figure of speech, not a thought, a feeling or words to the listener ("I said", "I
    loved her"), and not done to the listener ("I brought you these")."""
    if clause.question or clause.hypothetical or clause.figure or TO_LISTENER.search(clause.text):
        return False
    if clause.subject not in ("first", "thing", "other"):
        return False
    found = _PAST.match(clause.text) if clause.subject != "first" else None
    if found is not None and _NAMES_IN_ED.fullmatch(found.group(1)) is not None:
        found = None  # "Fred went home": a name, not a verb
    found = found or _OWN_PAST.search(clause.text)
    if found is None or found.group(1).lower() in _NOT_DEEDS:
        return False
    return not clause.hearsay or found.group(1).lower() in _SPOKEN_DEEDS  # "I told him": the speaker's act
