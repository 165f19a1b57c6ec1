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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from npc_memory.components.memory import MemoryKind, Valence
from npc_memory.extraction.model import MAX_MEMORIES, ExtractedMemory, ExtractionJob, Turn

Who = Literal["player", "npc", "any"]


@dataclass(frozen=True)
class Cue:
    """A pattern that, said by ``who``, marks the conversation with ``tag``."""

    tag: str
    who: Who
    pattern: re.Pattern[str]


def _cue(tag: str, who: Who, words: str) -> Cue:
    return Cue(tag, who, re.compile(rf"\b(?:{words})\b", re.IGNORECASE))


CUES: tuple[Cue, ...] = (
    _cue("trade", "any", r"buy|buys|bought|sell|sells|sold|price|prices|haggl\w*|bargain\w*|purchas\w*|"
         r"how much|for sale|paid|pay|pays|do i owe|cost|costs|a deal|\d+ (?:gold|silver|copper)|"
         r"(?:two|three|five|eight|ten|twelve|fifteen|twenty|thirty|forty|fifty) (?:gold|silver|copper)"),
    _cue("helpful", "player", r"let me help|i'?ll help|i can help|i will help|happy to help|i fixed|"
         r"i repaired|i patched|i'?ll carry|i brought you|of course, i'?m heading"),
    _cue("helpful", "npc", r"thank you for the help|thanks for the help|thank you for your help|you helped|"
         r"you fixed|you repaired|you brought|medicine you brought|my back thanks you"),
    _cue("heroic", "any", r"saved|save (?:us|the village|my \w+)|rescued?|drive (?:them|it|\w+) off|"
         r"drove (?:them|it) off|fought off|defended|defend|protected|protect|stepped in|hero|heroic|bravely|"
         r"owe you everything|owe you my life"),
    _cue("combat", "any", r"fight|fought|fighting|battle|swords?|blades?|attack\w*|bandits?|wolves|wolf|"
         r"raiders?|killed|kill|slay|slain|duel|spar\w*|bout|brawl|wound\w*|arrows?|disarmed|guard up|"
         r"gut you"),
    _cue("threat", "player", r"or else|you'?ll regret|watch your back|be a shame if|nothing will happen|"
         r"i'?ll (?:hurt|kill|gut|burn|break|find) you|don'?t make me|i know where you live|pay what"),
    _cue("threat", "npc", r"are you threatening|you threatened|threatening me"),
    _cue("betrayal", "any", r"betray\w*|traitor|double-cross\w*|you lied|lied to me|cheated (?:me|us)|"
         r"broke your promise|broken promise|turned on (?:me|us)|sold (?:us|me) out"),
    _cue("gift", "player", r"for you|take (?:this|these|them)|keep it|no charge|free of charge|on me|"
         r"as a thank-you"),
    _cue("gift", "any", r"gift|present|take this purse"),
    _cue("insult", "player", r"fools?|idiot|stupid|useless|lout|worthless|pathetic|coward|scum|a joke|"
         r"fairy tale|shut up|moron"),
    _cue("quest", "any", r"quest|bounty|reward|errand|task for you|could you (?:find|deliver|bring|fetch)|"
         r"find it for me|deliver|retrieve|escort|take the job|bring me"),
    _cue("quest", "npc", r"went missing|has gone missing|could you look for"),
    _cue("secret", "any", r"secret|between us|don'?t tell|no one must know|keep (?:it|this) quiet|"
         r"lips are sealed|password|swear it|confide"),
    _cue("theft", "any", r"steal|stole|stolen|thief|pickpocket\w*|robbed"),
    _cue("personal", "player", r"i served|i grew up|i was born|i come from|i'?m from|"
         r"my (?:father|mother|brother|sister|husband|wife|family)|i work as|i used to be|i took over"),
)

HABIT = re.compile(
    r"\b(?:always|every (?:night|day|week|time|morning|evening)|as usual|same as always|each time)\b",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:not|no|never|won'?t|don'?t|didn'?t|can'?t|isn'?t|wasn'?t|refuse)\W+(?:\w+\W+){0,2}$",
    re.IGNORECASE,
)
HEAT = re.compile(r"\b(?:killed|dead|everything|my life|never forget|burn\w*|gut|regret|traitor|please)\b",
                  re.IGNORECASE)

IMPORTANCE: dict[str, float] = {
    "betrayal": 0.85, "heroic": 0.8, "threat": 0.75, "secret": 0.7, "theft": 0.65, "quest": 0.6,
    "combat": 0.55, "personal": 0.5, "gift": 0.5, "helpful": 0.5, "insult": 0.45, "trade": 0.3,
}
VALENCE: dict[str, Valence] = {
    "heroic": "positive", "helpful": "positive", "gift": "positive",
    "threat": "negative", "insult": "negative", "betrayal": "negative", "theft": "negative",
}
LABELS: dict[str, str] = {
    "heroic": "stood up for us", "combat": "was in a fight", "helpful": "helped me",
    "quest": "took on a task", "theft": "stole", "trade": "traded with me", "gift": "gave a gift",
    "threat": "threatened me",
    "insult": "insulted me", "betrayal": "betrayed my trust", "secret": "shared a secret",
    "personal": "told me about themselves",
}
CLUSTERS: tuple[frozenset[str], ...] = (
    frozenset({"heroic", "combat", "helpful", "quest", "theft"}),
    frozenset({"trade", "gift"}),
    frozenset({"threat", "insult", "betrayal"}),
    frozenset({"secret"}),
    frozenset({"personal"}),
)

RULE_TAGS: frozenset[str] = frozenset(IMPORTANCE)
"""Every tag the rule-based extractor can produce."""


class RuleBasedExtractor:
    """Turns a transcript into 0–3 memories by cue patterns (see module docstring)."""

    source = "rules"

    def extract(self, job: ExtractionJob) -> tuple[ExtractedMemory, ...]:
        """The memories worth keeping from ``job``'s conversation (deterministic)."""
        hits = self._hits(job)
        if not hits:
            return ()
        habit = any(HABIT.search(turn.text) for turn in job.turns)
        memories = []
        for cluster in CLUSTERS:
            tags = sorted((t for t in hits if t in cluster), key=lambda t: (-IMPORTANCE[t], t))
            if tags:
                memories.append(self._memory(job, tags, [hits[t] for t in tags], habit))
        memories.sort(key=lambda m: -m.importance)
        return tuple(memories[:MAX_MEMORIES])

    def _hits(self, job: ExtractionJob) -> dict[str, Turn]:
        hits: dict[str, Turn] = {}
        player = job.player_name.lower()
        for turn in job.turns:
            speaker: Who = "player" if turn.speaker.lower() in (player, job.player.lower()) else "npc"
            for cue in CUES:
                if cue.tag in hits or cue.who not in ("any", speaker):
                    continue
                for match in cue.pattern.finditer(turn.text):
                    if not NEGATION.search(turn.text[: match.start()]):
                        hits[cue.tag] = turn
                        break
        return hits

    def _memory(self, job: ExtractionJob, tags: list[str], turns: list[Turn], habit: bool) -> ExtractedMemory:
        primary = tags[0]
        kind: MemoryKind = "episodic"
        if primary == "personal":
            kind = "semantic"
        elif habit and primary not in ("secret", "threat", "insult", "betrayal"):
            kind = "procedural"
        evidence = turns[0]
        text = " ".join(t.text for t in job.turns)
        intensity = min(1.0, 0.3 + 0.1 * min(text.count("!"), 3) + 0.15 * min(len(HEAT.findall(text)), 2))
        importance = min(1.0, IMPORTANCE[primary] + (0.1 if intensity > 0.6 else 0.0))
        valences = {VALENCE.get(t, "neutral") for t in tags}
        valence: Valence = "neutral"
        if "negative" in valences or "positive" in valences:
            valence = "negative" if "negative" in valences else "positive"
        quote = evidence.text if len(evidence.text) <= 160 else evidence.text[:157] + "..."
        habitually = "habitually " if kind == "procedural" else ""
        content = f'{job.player_name} {habitually}{LABELS[primary]} ({evidence.speaker}: "{quote}")'
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
