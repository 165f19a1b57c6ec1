"""The content-pack schema: factions, archetypes, relationship rules, caps, budgets,
the rule extractor's tags and cues, and the wording of memories and context.

A pack is TOML validated by these pydantic models; every model forbids unknown
fields, so a typo is an error rather than a silently ignored setting, and is strict: a
value of the wrong kind is an error, never converted (``true`` or ``"0.5"`` is not a
number, ``1`` is not a boolean; an integer is a valid number).
"""

from __future__ import annotations

import contextlib
import math
import re
import string
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from npc_memory.components.knowledge import FactCategory
from npc_memory.components.memory import Scope, Valence
from npc_memory.components.relationship import Dimension
from npc_memory.content import defaults

Attitude = Literal["allied", "friendly", "neutral", "unfriendly", "hostile"]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Delta = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)]
MAX_KEY_CHARS = 128
"""Longest key, name, room, subject or topic."""

MAX_TAG_CHARS = 64
"""Longest tag, for every way a tag enters (the API, the pack, an extractor's output)."""

Key = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS, pattern=r"^[a-z0-9][a-z0-9_\-]*$")]

MAX_CONTENT_CHARS = 2000
"""Default longest memory content, fact content or conversation line (pack ``[limits]``)."""

MAX_RECALL_K = 1000
"""Most memories one recall may return."""

GAME_ONLY_TAGS = frozenset({"game-only", "game_only"})
"""Memories and facts with these tags are game clues and are never stored."""

BUILTIN_PROVIDERS = ("relationship", "working_memory", "memories", "knowledge")
"""Names of the built-in context providers, which a pack may give a budget share."""

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_KEY_CHARS)]
"""A non-empty name (surrounding blanks dropped) of at most :data:`MAX_KEY_CHARS` characters."""

DEFAULT_ATTITUDE_MODIFIERS: dict[Attitude, float] = {
    "allied": 0.3,
    "friendly": 0.1,
    "neutral": 0.0,
    "unfriendly": -0.1,
    "hostile": -0.3,
}

DEFAULT_TAG_RULES: dict[str, dict[Dimension, float]] = {
    "helpful": {"trust": 0.05, "friendliness": 0.03, "respect": 0.02},
    "combat": {"respect": 0.04, "fear": -0.02},
    "heroic": {"trust": 0.06, "respect": 0.05},
    "trade": {"trust": 0.02, "friendliness": 0.01},
    "threat": {"trust": -0.08, "fear": 0.06},
    "betrayal": {"trust": -0.15, "loyalty": -0.10, "friendliness": -0.08},
    "gift": {"friendliness": 0.04, "loyalty": 0.02},
    "insult": {"friendliness": -0.06, "respect": -0.03},
}

DEFAULT_LIE_NOTICED: dict[Dimension, float] = {"trust": -0.05, "respect": -0.02}

DEFAULT_VALENCE_ADJUSTMENTS: dict[Valence, dict[Dimension, float]] = {
    "positive": {"friendliness": 0.02, "trust": 0.01},
    "neutral": {},
    "negative": {"friendliness": -0.02, "trust": -0.01},
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_pattern(value: str) -> str:
    """A cue word: a regular expression that compiles on its own and as one whole-word
    alternative of a cue, and cannot match nothing at all."""
    try:
        bare = re.compile(value, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
    try:
        re.compile(rf"\b(?:{value})\b", re.IGNORECASE)
    except re.error as exc:  # e.g. inline global flags: (?i) must start the whole pattern
        raise ValueError(f"regular expression {value!r} cannot be one of a cue's words: {exc.msg}") from None
    if bare.fullmatch("") is not None:
        raise ValueError(f"regular expression {value!r} matches the empty string")
    return value


Pattern = Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_check_pattern)]
"""A case-insensitive regular expression matched as a whole word or phrase; plain words
and phrases ("how much") are valid as they are."""

_SAMPLE_VALUES: dict[str, object] = {
    "player": "Alice", "tag": "trade", "time": "morning", "label": "traded with me",
    "speaker": "Hilda", "quote": "How much?", "habitually": "habitually ", "count": 3, "people": 2,
}


def _template(*names: str) -> AfterValidator:
    """A ``str.format`` template that may use only the placeholders ``names``."""
    allowed = ", ".join("{" + name + "}" for name in names)

    def check(value: str) -> str:
        try:
            used = [field for _, field, _, _ in string.Formatter().parse(value) if field is not None]
        except ValueError as exc:
            raise ValueError(f"invalid template {value!r}: {exc}") from None
        unknown = sorted({field or "{}" for field in used if field not in names})
        if unknown:
            raise ValueError(f"unknown placeholder {', '.join(unknown)} in {value!r}; use {allowed}")
        try:
            value.format(**{name: _SAMPLE_VALUES[name] for name in names})
        except (ValueError, TypeError) as exc:
            raise ValueError(f"invalid template {value!r}: {exc}") from None
        return value

    return AfterValidator(check)


class PackInfo(_Model):
    """Name and version of the pack."""

    name: Key
    version: str = "1"
    description: str = ""


class Faction(_Model):
    """A faction and its attitude towards other factions (by faction key).

    A faction not listed is regarded as ``neutral``; a faction's own members as
    ``friendly`` unless ``attitudes`` says otherwise.
    """

    name: str | None = None
    description: str = ""
    attitudes: dict[Key, Attitude] = Field(default_factory=dict)


class Traits(_Model):
    """Personality traits of an archetype, each in [0, 1]."""

    sociability: Unit = 0.5
    gossip_drive: Unit = 0.5
    credulity: Unit = 0.5
    faction_loyalty: Unit = 0.5


class Archetype(_Model):
    """A kind of NPC: persona for prompts, default faction, traits."""

    name: str | None = None
    role: str = ""
    persona: str = ""
    faction: Key | None = None
    traits: Traits = Traits()
    will_discuss: list[str] = Field(default_factory=list)
    wont_discuss: list[str] = Field(default_factory=list)


class Baseline(_Model):
    """Dimension values of a relationship before faction attitude applies."""

    trust: Unit = 0.5
    fear: Unit = 0.0
    respect: Unit = 0.5
    loyalty: Unit = 0.5
    friendliness: Unit = 0.5
    romantic_interest: Unit = 0.0


class DispositionWeights(_Model):
    """disposition = Σ w·(2·value − 1) over trust, friendliness, respect, loyalty,
    minus ``fear``·fear, clamped to [-1, 1]. The four positive weights sum to 1."""

    trust: Unit = 0.35
    friendliness: Unit = 0.35
    respect: Unit = 0.15
    loyalty: Unit = 0.15
    fear: Unit = 0.25

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> DispositionWeights:
        total = self.trust + self.friendliness + self.respect + self.loyalty
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(
                f"trust + friendliness + respect + loyalty must sum to 1, got {total:g}"
            )
        return self


class Threshold(_Model):
    """A dimension level whose crossing fires an event once per crossing.

    ``event`` names the event type (a class in ``npc_memory.events``); any other name
    fires the generic ``RelationshipThresholdCrossed`` with ``threshold`` = ``name``.
    """

    name: Key
    dimension: Dimension
    direction: Literal["above", "below"]
    value: Unit
    event: str | None = None


DEFAULT_THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(name="hostile", dimension="trust", direction="below", value=0.2, event="Hostile"),
    Threshold(
        name="trusted_ally", dimension="trust", direction="above", value=0.8, event="TrustedAlly"
    ),
    Threshold(name="cowed", dimension="fear", direction="above", value=0.7, event="Cowed"),
    Threshold(
        name="respected", dimension="respect", direction="above", value=0.8, event="Respected"
    ),
    Threshold(
        name="best_friend",
        dimension="friendliness",
        direction="above",
        value=0.9,
        event="BestFriend",
    ),
    Threshold(
        name="despised", dimension="friendliness", direction="below", value=0.1, event="Despised"
    ),
)


class StageLadder(_Model):
    """Disposition levels at which a relationship enters each stage.

    A stage is left only when disposition moves ``hysteresis`` past its entry level,
    so a relationship hovering at a boundary does not flicker between stages.
    """

    friend: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.3
    close_friend: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.5
    trusted_ally: Annotated[float, Field(gt=0.0, le=1.0)] = 0.7
    rival: Annotated[float, Field(lt=0.0, gt=-1.0)] = -0.3
    enemy: Annotated[float, Field(lt=0.0, ge=-1.0)] = -0.7
    hysteresis: Annotated[float, Field(ge=0.0, le=0.2)] = 0.05

    @model_validator(mode="after")
    def _ordered(self) -> StageLadder:
        if not self.friend < self.close_friend < self.trusted_ally:
            raise ValueError("need friend < close_friend < trusted_ally")
        if not self.enemy < self.rival:
            raise ValueError("need enemy < rival")
        if self.friend - self.hysteresis <= 0 or self.rival + self.hysteresis >= 0:
            raise ValueError("hysteresis must be smaller than the gap to 0 of friend and rival")
        return self


class RelationshipRules(_Model):
    """How relationships start and change.

    ``tag_rules`` maps a memory tag to dimension deltas at full importance and
    intensity; entries are merged over the built-in rules (helpful, combat, heroic,
    trade, threat, betrayal, gift, insult), and a tag mapped to ``{}`` is neutral.

    What is said moves a relationship less than what is done. The player's own account
    of a deed that the NPC did not see ("I saved the village", "I robbed the magistrate")
    moves it ``claim_weight`` as much as a deed the NPC saw, and never lifts a dimension
    above ``claim_ceiling`` (an admission of a deed done to the NPC, "I stole your bread",
    counts in full: it is their own word against themselves); hearsay about the player
    moves it ``knowledge.hearsay_factor`` as much; the NPC's own deeds and a third
    party's never move it. Everything drawn from
    conversations moves each dimension of a pair at most ``talk_daily_cap`` per game
    day, and each earlier memory with the same tag that day scales the next by
    ``talk_repeat_factor`` (the third boast of the day counts a quarter).

    A player who denies to the NPC what it holds on better grounds (what it saw: see
    ``KnowledgeRules``) is caught lying to its face: the relationship moves by
    ``lie_noticed`` (trust −0.05, respect −0.02) once per denial.
    """

    baseline: Baseline = Baseline()
    attitude_modifiers: dict[Attitude, Delta] = Field(
        default_factory=lambda: dict(DEFAULT_ATTITUDE_MODIFIERS)
    )
    disposition_weights: DispositionWeights = DispositionWeights()
    tag_rules: dict[Key, dict[Dimension, Delta]] = Field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_TAG_RULES.items()}
    )
    valence_adjustments: dict[Valence, dict[Dimension, Delta]] = Field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_VALENCE_ADJUSTMENTS.items()}
    )
    thresholds: tuple[Threshold, ...] = DEFAULT_THRESHOLDS
    threshold_rearm: Annotated[float, Field(ge=0.0, le=0.5)] = 0.05
    stages: StageLadder = StageLadder()
    claim_weight: Unit = 0.25
    claim_ceiling: Unit = 0.6
    talk_daily_cap: Unit = 0.1
    talk_repeat_factor: Unit = 0.5
    lie_noticed: dict[Dimension, Delta] = Field(default_factory=lambda: dict(DEFAULT_LIE_NOTICED))

    @field_validator("attitude_modifiers", mode="before")
    @classmethod
    def _merge_attitudes(cls, value: Any) -> Any:
        return {**DEFAULT_ATTITUDE_MODIFIERS, **value} if isinstance(value, dict) else value

    @field_validator("tag_rules", mode="before")
    @classmethod
    def _merge_tag_rules(cls, value: Any) -> Any:
        return {**DEFAULT_TAG_RULES, **value} if isinstance(value, dict) else value

    @field_validator("valence_adjustments", mode="before")
    @classmethod
    def _merge_valence(cls, value: Any) -> Any:
        return {**DEFAULT_VALENCE_ADJUSTMENTS, **value} if isinstance(value, dict) else value

    @field_validator("thresholds", mode="before")
    @classmethod
    def _thresholds_from_list(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value  # TOML has arrays, not tuples

    @field_validator("thresholds")
    @classmethod
    def _unique_threshold_names(cls, value: tuple[Threshold, ...]) -> tuple[Threshold, ...]:
        names = [t.name for t in value]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate threshold names: {', '.join(duplicates)}")
        return value


SummaryTemplate = Annotated[str, Field(min_length=1, max_length=300), _template("player", "tag")]
HabitTemplate = Annotated[str, Field(min_length=1, max_length=300), _template("player", "tag", "time")]


class ConsolidationTemplates(_Model):
    """How consolidation words what it learns, per memory tag.

    A cluster of episodes sharing a tag becomes the semantic memory
    ``summaries[tag]`` (or ``summary_fallback`` for a tag without one) followed by
    ``times_suffix``; placeholders ``{player}`` (the player's name) and ``{tag}``. A
    habit becomes the procedural memory ``habits[tag]`` (or ``habit_fallback``), which
    may also use ``{time}`` (morning, afternoon, evening or night). ``times_suffix`` may
    use ``{count}``, the number of episodes. Entries are merged over the built-in ones
    (a summary for each extractor tag; habits for trade and theft).
    """

    summaries: dict[Key, SummaryTemplate] = Field(default_factory=dict, validate_default=True)
    habits: dict[Key, HabitTemplate] = Field(default_factory=dict, validate_default=True)
    summary_fallback: SummaryTemplate = defaults.SUMMARY_FALLBACK
    habit_fallback: HabitTemplate = defaults.HABIT_FALLBACK
    times_suffix: Annotated[str, Field(max_length=100), _template("count")] = defaults.TIMES_SUFFIX

    @field_validator("summaries", mode="before")
    @classmethod
    def _merge_summaries(cls, value: Any) -> Any:
        return {**defaults.SUMMARY_TEMPLATES, **value} if isinstance(value, dict) else value

    @field_validator("habits", mode="before")
    @classmethod
    def _merge_habits(cls, value: Any) -> Any:
        return {**defaults.HABIT_TEMPLATES, **value} if isinstance(value, dict) else value

    def summary_template(self, tag: str) -> str:
        """The template of the summary of a cluster sharing ``tag``."""
        return self.summaries.get(tag, self.summary_fallback)

    def habit_template(self, tag: str) -> str:
        """The template of the habit of a cluster sharing ``tag``."""
        return self.habits.get(tag, self.habit_fallback)


class MemoryRules(_Model):
    """Memory salience, caps per NPC–player pair, forgetting and consolidation.

    Recency decays as exp(−age / (recency_days × (1 + intensity_retention × intensity)))
    in game days: an intense memory is kept up to ``intensity_retention`` (10 %) longer.
    DecaySystem forgets unlocked episodic memories whose salience fell below
    ``forget_below`` and lets relationships without interaction drift back to their
    faction baseline with a half-life of ``relationship_half_life_days``.
    ConsolidationSystem turns ``consolidate_min`` or more unlocked-or-not episodic
    memories of a pair, older than ``consolidate_after_days`` and sharing a tag, into
    one semantic memory; ``habit_min`` episodes sharing a tag at the same time of day
    become a procedural one, both worded by ``consolidation`` (see
    :class:`ConsolidationTemplates`).

    Per NPC–player pair, at most ``episodic_cap``, ``semantic_cap`` and ``procedural_cap``
    memories of each kind are kept: room for a long companionship's history (the 600
    lines of 30 talks of a LoCoMo conversation leave ~250), while what bounds memory use
    is the NPC's own cap below.

    Per NPC, at most ``memories_per_npc`` memories and ``players_per_npc`` players are
    kept (so memory use levels off under any load): past the first bound the least
    salient unlocked episodes are evicted, down to 90 % of it, as the NPC remembers
    (checked every ``memories_per_npc`` / 20 memories it makes) and on DecaySystem's
    daily visit of the NPC; that visit also forgets
    whatever it holds about the players it dealt with longest ago beyond the second
    (their relationship, unlocked memories and conversation summaries), down to 90 %.
    """

    recency_days: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 30.0
    intensity_retention: Annotated[float, Field(ge=0.0, le=0.1)] = 0.1
    forget_below: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.05
    relationship_half_life_days: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 60.0
    decay_interval: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 86_400.0
    consolidate_min: Annotated[int, Field(ge=2, le=50)] = 3
    consolidate_after_days: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = 7.0
    habit_min: Annotated[int, Field(ge=2, le=50)] = 3
    episodic_cap: PositiveInt = 300
    semantic_cap: PositiveInt = 100
    procedural_cap: PositiveInt = 20
    memories_per_npc: PositiveInt = 2000
    players_per_npc: PositiveInt = 200
    consolidation: ConsolidationTemplates = ConsolidationTemplates()


Milliseconds = Annotated[float, Field(gt=0.0, le=1000.0, allow_inf_nan=False)]


class Budgets(_Model):
    """Per-tick work budgets of the plugin's systems and its queue bounds.

    Each system has a count cap (``*_per_tick``) and a wall-clock budget in milliseconds
    (``*_tick_ms``): its work in a tick stops when either is reached and resumes the
    next tick where it stopped (a unit that fits no tick's budget still runs after 4
    ticks of waiting, so work always progresses). The default time budgets sum to 1 ms.
    ``tick_ms`` bounds them together, counted from the start of the plugin's tick
    (ClockSystem), so the clock and the entity checks are charged to it too: the systems
    spend what is left in turn (extraction, gossip, decay, consolidation), each within
    its own budget; a system that finds it spent waits for the next tick (at most 4 in a
    row). It is 0.7 so that what runs after them (a snapshot slice and the events: ~0.05
    ms where the store's writer thread copies the documents, as on CPython with its GIL;
    where the tick copies them, up to ``snapshot_tick_ms`` more) and the units that
    outrun what their kind was expected to take at most still end within 1 ms.
    ``snapshot_interval`` is in game seconds. ``extraction_queue`` bounds the jobs
    waiting for extraction; when it is full, ``extraction_overflow`` either extracts the
    job with the rules at once ("rules") or drops it, counted and announced ("drop").
    """

    tick_ms: Milliseconds = 0.7
    extraction_dispatch_per_tick: PositiveInt = 4
    extraction_apply_per_tick: PositiveInt = 8
    extraction_tick_ms: Milliseconds = 0.3
    extraction_queue: PositiveInt = 200
    extraction_overflow: Literal["rules", "drop"] = "rules"
    gossip_exchanges_per_tick: PositiveInt = 3
    gossip_tick_ms: Milliseconds = 0.2
    decay_pairs_per_tick: PositiveInt = 50
    decay_tick_ms: Milliseconds = 0.15
    consolidation_pairs_per_tick: PositiveInt = 5
    consolidation_tick_ms: Milliseconds = 0.1
    snapshot_documents_per_tick: PositiveInt = 64
    snapshot_tick_ms: Milliseconds = 0.25
    snapshot_interval: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 60.0


class LlmRules(_Model):
    """Limits of LLM extraction. Token budgets are per UTC day (real time: they guard
    money) and count input, output and cache tokens; ``deadline`` (real seconds) bounds
    a whole call including the SDK's retries and any retry-after wait. At uninstall,
    extraction calls in flight get ``shutdown_grace`` real seconds to bring their
    answers (kept, so they are not paid for again after a restart) before the rest
    are cancelled.

    Who gets the model: NPCs of ``extraction_archetypes`` (``None``: every NPC; a game
    may choose per NPC, see ``MemoryPlugin.set_llm_extraction``), the rest the rule
    reader. Once less than ``low_budget_share`` of the day's ``daily_tokens`` is left,
    only NPCs of ``priority_archetypes`` (or that the game marks as priority) keep it."""

    extraction_archetypes: list[Key] | None = None
    priority_archetypes: list[Key] = Field(default_factory=list)
    low_budget_share: Unit = 0.2
    daily_tokens: PositiveInt = 2_000_000
    npc_daily_tokens: PositiveInt = 60_000
    requests_per_minute: PositiveInt = 50
    max_in_flight: PositiveInt = 8
    deadline: Annotated[float, Field(gt=0.0, le=600.0, allow_inf_nan=False)] = 20.0
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    max_output_tokens: Annotated[int, Field(ge=64, le=8192)] = 600
    breaker_failures: PositiveInt = 5
    breaker_cooldown: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 60.0
    shutdown_grace: Annotated[float, Field(ge=0.0, le=60.0, allow_inf_nan=False)] = 1.0


PiiType = Literal[
    "email", "phone", "card", "iban", "ip", "ssn", "address", "postcode", "url", "birth_date", "name"
]
"""A kind of real-world personal data the safety screen can redact."""

InjectionRule = Literal[
    "override", "role_switch", "secret_request", "personal_probe", "format_manipulation",
    "smuggled_payload", "repetition", "embedded_dialogue", "rule_persuasion", "framing",
]
"""A family of rules by which the safety screen flags text that tries to instruct a model."""

ALL_PII_TYPES: tuple[PiiType, ...] = get_args(PiiType)
ALL_INJECTION_RULES: tuple[InjectionRule, ...] = get_args(InjectionRule)


class SafetyRules(_Model):
    """The content-safety screen applied to every text that enters an NPC's memory:
    which real-world identifiers are replaced by typed placeholders (``[email]``,
    ``[card]``, …), which injection rules flag a line, and what happens to a flagged
    line: ``"quote"`` keeps it as a quoted, marked utterance that never changes a
    relationship or spreads as gossip, ``"drop"`` keeps nothing of it.
    ``extra_patterns`` are further case-insensitive regular expressions that flag a line.
    ``real_names`` lists real-world names (players' own, streamers', public figures') to
    redact as ``[name]``; in-game names are never redacted, so the list is empty by default."""

    enabled: bool = True
    redact: list[PiiType] = Field(default_factory=lambda: list(ALL_PII_TYPES))
    injection_rules: list[InjectionRule] = Field(default_factory=lambda: list(ALL_INJECTION_RULES))
    flagged: Literal["quote", "drop"] = "quote"
    extra_patterns: list[Pattern] = Field(default_factory=list)
    real_names: list[Annotated[str, Field(min_length=2, max_length=100)]] = Field(default_factory=list)


FactSourceName = Literal["observation", "conversation", "gossip", "authored"]
DEFAULT_SOURCE_WEIGHTS: dict[FactSourceName, float] = {
    "observation": 1.0,
    "authored": 1.0,
    "conversation": 0.9,
    "gossip": 0.6,
}


class AuthoredFact(_Model):
    """A fact a content designer gives NPCs: every NPC with a listed key, archetype or
    faction knows it from the start (``authored`` source; exempt from the cap).

    Checked as ``plugin.learn_fact`` checks its arguments: ``content`` within the pack's
    ``[limits] content_chars``, ``subject`` and ``topic`` non-empty names of at most
    :data:`MAX_KEY_CHARS` characters, at most ``[limits] tags_per_memory`` tags and none
    of them ``game-only``."""

    npcs: list[Key] = Field(default_factory=list)
    archetypes: list[Key] = Field(default_factory=list)
    factions: list[Key] = Field(default_factory=list)
    content: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    category: FactCategory = "world_event"
    subject: Name | None = None
    topic: Name | None = None
    tags: list[Key] = Field(default_factory=list)
    importance: Unit = 0.5
    confidence: Unit = 1.0
    locked: bool = False

    @field_validator("tags")
    @classmethod
    def _no_game_clues(cls, value: list[str]) -> list[str]:
        if GAME_ONLY_TAGS.intersection(value):
            raise ValueError("facts tagged 'game-only' are game clues and are never stored")
        return value


def _merged_over(built_in: dict[str, dict[str, Any]], value: Any) -> Any:
    """A pack's table of entries (``value``) merged over the built-in ones field by
    field: an entry the pack names replaces the fields it gives; others stay."""
    if not isinstance(value, dict):
        return value
    merged: dict[Any, Any] = {key: dict(entry) for key, entry in built_in.items()}
    for key, entry in value.items():
        base = merged.get(key)
        merged[key] = {**base, **entry} if base is not None and isinstance(entry, dict) else entry
    return merged


class PlayerAttribute(_Model):
    """One thing players say about themselves (``[knowledge.attributes.<name>]``): a
    statement of the player matching one of ``cues`` (case-insensitive regular
    expressions, matched as whole words; ``[]`` turns the attribute off) is filed under
    it as a private fact about them. A ``single`` attribute holds one value at a time (a
    name, a home town): a newer statement that says otherwise takes the older one's place.
    Of the others (family, likes) a statement is added beside the ones before and
    replaces the latest only when the player corrects themselves."""

    cues: list[Pattern] = Field(default_factory=list)
    single: bool = True


class KnowledgeRules(_Model):
    """Knowledge, gossip and reputation.

    A fact is shareable with importance ≥ ``share_min_importance``, confidence ≥
    ``share_min_confidence`` and fewer than ``max_hops`` hops. Each hop costs
    ``hop_decay`` confidence, then scales by the listener's trust in the teller:
    ``gossip_trust_base + gossip_trust_credulity × credulity`` (0.5 + 0.5·credulity)
    plus the listener faction's attitude modifier towards the teller's faction, clamped
    to [0, 1]. Hearsay about a player moves the listener's relationship by the tag rules
    × confidence × ``hearsay_factor``, as a memory of intensity ``hearsay_intensity``
    would. Evidence weighs ``confidence × source_weights[source]``.

    Who gossips: a teller is picked with weight ``sociability × gossip_drive +
    gossip_weight_floor`` and a listener with ``sociability + gossip_weight_floor``, so
    even a taciturn NPC talks now and then; one exchange tries up to
    ``gossip_candidates_per_exchange`` of the teller's facts before giving up.

    Bounds: an NPC holds at most ``cap`` facts; past it, the least worth keeping go,
    down to ``cap × (1 − cap_slack)`` in one pass (so eviction is rare and amortised;
    an NPC's first pass comes at a count between the two fixed by its key, so NPCs that
    learn the same things do not all evict at once):
    disbelieved facts first, then by importance × confidence × 0.5^(age /
    ``fact_half_life_days``), facts about players the NPC has dealt with counting
    (1 + ``subject_bonus``) times; authored and locked facts stay. The same claim (same
    subject, topic and content) heard again from another origin merges into the held
    fact (its confidence rises to the higher one, its origin is remembered) instead of
    adding a copy.

    What a player says about themselves is filed under ``attributes`` (merged over the
    built-in ones, field by field: name, origin, home, trade, goal, family, likes,
    dislikes). A newer statement of an attribute that says otherwise than the one
    before is a correction when the player owns up to it (one of ``corrections``, in
    the same line or the one before: "The truth is…"), a change when they say it changed
    (one of ``changes``: "I live by the harbour now"), and otherwise a contradiction the
    NPC noticed; the older statement is kept, no longer believed, for that reason.

    A player's line that denies something (one of ``denials``: "Wasn't me.", "I never
    stole that purse") and answers a claim the NPC holds about them (its words, or a cue
    of one of its tags, in the line or in the NPC's line before) is a rival of that claim,
    with confidence ``denial_confidence``: the better founded of the two is believed (by
    default a denial outweighs a rumour, never what the NPC saw), the other is kept.

    A player who refers back to what they said before (one of ``back_references``: "I
    said Dunmere…", "I did say that.") and owns up, in that line or the next of theirs
    (one of ``corrections``, ``changes``, or a sentence starting with one of
    ``retractions``: "I didn't kill him."), takes back the memory of their earlier words
    or claim that shares the most words with those lines and the NPC's line before (more
    when that line recalls what they said: one of ``reminders``, "You said…"): it is
    kept, marked ``retracted``, and counts for no one.
    """

    cap: PositiveInt = 500
    cap_slack: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    fact_half_life_days: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 7.0
    subject_bonus: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 1.0
    max_hops: PositiveInt = 5
    hop_decay: Unit = 0.1
    share_min_importance: Unit = 0.5
    share_min_confidence: Unit = 0.2
    hearsay_factor: Unit = 0.5
    hearsay_intensity: Unit = 0.5
    gossip_trust_base: Unit = 0.5
    gossip_trust_credulity: Unit = 0.5
    gossip_weight_floor: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 0.01
    gossip_candidates_per_exchange: Annotated[int, Field(ge=1, le=100)] = 4
    source_weights: dict[FactSourceName, Unit] = Field(default_factory=lambda: dict(DEFAULT_SOURCE_WEIGHTS))
    memory_milestones: list[PositiveInt] = Field(default_factory=lambda: [10, 25, 50, 100])
    reputation_bands: list[Annotated[float, Field(gt=-1.0, lt=1.0)]] = Field(
        default_factory=lambda: [-0.5, -0.15, 0.15, 0.5]
    )
    facts: list[AuthoredFact] = Field(default_factory=list)
    attributes: dict[Key, PlayerAttribute] = Field(default_factory=dict, validate_default=True)
    corrections: list[Pattern] = Field(default_factory=lambda: list(defaults.CORRECTIONS))
    changes: list[Pattern] = Field(default_factory=lambda: list(defaults.CHANGES))
    denials: list[Pattern] = Field(default_factory=lambda: list(defaults.DENIALS))
    back_references: list[Pattern] = Field(default_factory=lambda: list(defaults.BACK_REFERENCES))
    reminders: list[Pattern] = Field(default_factory=lambda: list(defaults.REMINDERS))
    retractions: list[Pattern] = Field(default_factory=lambda: list(defaults.RETRACTIONS))
    denial_confidence: Unit = 0.7

    @field_validator("attributes", mode="before")
    @classmethod
    def _merge_attributes(cls, value: Any) -> Any:
        return _merged_over(defaults.PLAYER_ATTRIBUTES, value)

    @field_validator("source_weights", mode="before")
    @classmethod
    def _merge_weights(cls, value: Any) -> Any:
        return {**DEFAULT_SOURCE_WEIGHTS, **value} if isinstance(value, dict) else value

    @field_validator("reputation_bands", "memory_milestones")
    @classmethod
    def _ascending(cls, value: list[Any]) -> list[Any]:
        if value != sorted(set(value)):
            raise ValueError("must be strictly ascending")
        return value


Disposition = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)]


class ContextWording(_Model):
    """The levels at which the context text words a relationship.

    Attitude, from the disposition: above ``warmly_above`` (0.5) "you regard them
    warmly", above ``positively_above`` (0.15) "positively", below ``hostility_below``
    (−0.5) "with hostility", below ``negatively_below`` (−0.15) "negatively", else
    neutral. Details: trust above ``trustworthy_above`` (0.7) "trustworthy", below
    ``untrustworthy_below`` (0.3) "untrustworthy"; fear above ``intimidating_above``
    (0.5) "intimidating"; respect above ``respectable_above`` (0.7) "respectable". The
    ``{reputation}`` placeholder says "stranger" for a player the NPC has not met whose
    disposition is within ``stranger_within`` (0.15) of neutral.
    """

    warmly_above: Disposition = 0.5
    positively_above: Disposition = 0.15
    negatively_below: Disposition = -0.15
    hostility_below: Disposition = -0.5
    trustworthy_above: Unit = 0.7
    untrustworthy_below: Unit = 0.3
    intimidating_above: Unit = 0.5
    respectable_above: Unit = 0.7
    stranger_within: Unit = 0.15

    @model_validator(mode="after")
    def _ordered(self) -> ContextWording:
        levels = (self.hostility_below, self.negatively_below, 0.0, self.positively_above, self.warmly_above)
        if list(levels) != sorted(levels):
            raise ValueError(
                "need hostility_below <= negatively_below <= 0 <= positively_above <= warmly_above"
            )
        if not self.untrustworthy_below <= self.trustworthy_above:
            raise ValueError("need untrustworthy_below <= trustworthy_above")
        return self


class ContextRules(_Model):
    """The read path: how ``plugin.context`` spends a token budget and ranks memories.

    Each provider named in ``shares`` gets that share of the budget left after the
    ``safety_buffer`` (tokens); providers without a share split what remains. A share may
    name a built-in provider (:data:`BUILTIN_PROVIDERS`) or one of ``custom_providers``,
    the names of providers the game passes to ``plugin.context`` itself. What a provider
    does not use goes to the providers that filled their share, in the order of
    ``overflow`` (providers not named there come last). Recall ranks by
    ``relevance_weight`` × relevance + (1 − it) × salience; the memories section ranks
    at least ``recall_k`` memories (at most :data:`MAX_RECALL_K`), more when its budget
    could hold more, and shows those that fit. Facts believed with
    less than ``uncertain_below`` confidence are worded as hearsay. ``wording`` holds the
    levels at which a relationship is put into words (see :class:`ContextWording`).
    """

    custom_providers: list[Key] = Field(default_factory=list)
    shares: dict[Key, Unit] = Field(
        default_factory=lambda: {
            "relationship": 0.1,
            "working_memory": 0.15,
            "memories": 0.45,
            "knowledge": 0.3,
        }
    )
    overflow: list[Key] = Field(
        default_factory=lambda: ["memories", "knowledge", "working_memory", "relationship"]
    )
    safety_buffer: Annotated[int, Field(ge=0, le=10_000)] = 16
    relevance_weight: Unit = 0.9
    recall_k: Annotated[int, Field(ge=1, le=MAX_RECALL_K)] = 8
    uncertain_below: Unit = 0.6
    wording: ContextWording = ContextWording()

    @field_validator("shares")
    @classmethod
    def _shares_fit(cls, value: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        known = (*BUILTIN_PROVIDERS, *info.data.get("custom_providers", ()))
        if unknown := [name for name in value if name not in known]:
            raise ValueError(
                f"shares name unknown providers: {', '.join(unknown)}; known: {', '.join(known)} "
                "(list a provider of your own in custom_providers)"
            )
        if sum(value.values()) > 1.0 + 1e-9:
            raise ValueError(f"shares add up to {sum(value.values()):g}; at most 1")
        return value


class Limits(_Model):
    """Sizes the plugin accepts at its edge; a larger argument is refused with
    :class:`~npc_memory.errors.InvalidArgumentError` naming the limit. They bound what
    one call can add to a document and how long a read takes.

    ``tags_per_memory``: tags one memory, fact or observation may carry (also the tags
    of a query); ``tag_chars``: characters of one tag (at most :data:`MAX_TAG_CHARS`);
    ``content_chars``: characters of a memory's or fact's content, a procedural pattern
    or a conversation line; ``query_chars``: characters of a recall query or of the
    player's message to :meth:`context` and :meth:`prompt_messages`.
    """

    tags_per_memory: Annotated[int, Field(ge=1, le=256)] = 32
    tag_chars: Annotated[int, Field(ge=1, le=MAX_TAG_CHARS)] = MAX_TAG_CHARS
    content_chars: Annotated[int, Field(ge=1, le=20_000)] = MAX_CONTENT_CHARS
    query_chars: Annotated[int, Field(ge=1, le=100_000)] = MAX_CONTENT_CHARS


Who = Literal["player", "npc", "any"]


class Cue(_Model):
    """Words that mark a conversation with a tag when ``who`` says one of them: the
    player, the NPC or anyone. Each word is a :data:`Pattern`; a word preceded by a
    negation ("I won't steal") does not count. A deed's cue only the NPC says tells of
    the player's deed unless its clause names another doer ("Good eye.", "you fixed")."""

    who: Who = "any"
    words: Annotated[list[Pattern], Field(min_length=1)]


class ExtractionTag(_Model):
    """A tag the rule extractor can give a memory, and what such a memory is like.

    ``description`` explains the tag to the LLM extractor (its tag vocabulary).
    Tags with the same ``group`` make one memory (a tag without a group is a group of
    its own), led by its most important tag: the memory's ``importance`` and wording
    (``label``) come from that tag, its ``kind`` is ``episodic`` or ``semantic`` (facts
    about the player), and a habit marker makes an episodic memory ``procedural``
    unless the leading tag is not ``habitual``. The memory is negative if any of its
    tags has a negative ``valence``, else positive if any is positive. A tag without
    ``cues`` is never found by the rules, but the LLM may still use it.

    ``act`` says whose doing a cue reveals. A ``deed`` (the default: stealing, saving,
    fighting) belongs to the clause's subject: "I stole" is the speaker's, "you stole" the
    listener's, "Bob stole" neither's. A ``speech`` act (trading, threatening, insulting,
    confiding, asking a task) is done by saying it, so it is the speaker's unless the
    clause is about a third party. A ``fact`` is what the speaker tells about themselves.
    The player's own account of a deed is a claim (the NPC did not see it) unless the tag
    is not ``claimable`` and the clause names the listener: an act the NPC sees as it is
    told ("I brought you these herbs as a gift"; "I gave it all to the orphans" is a
    claim). A ``conditional`` tag's cues count in conditional clauses too, since that is
    the act's form ("Give me your purse or I'll break your arm", "if you tell anyone").
    A memory with a ``private`` tag (a confidence, a personal fact) is never learned as a
    fact about the player, so it is never passed on as gossip.
    """

    description: Annotated[str, Field(min_length=1, max_length=200)]
    act: Literal["deed", "speech", "fact"] = "deed"
    claimable: bool = True
    conditional: bool = False
    private: bool = False
    group: Key | None = None
    importance: Unit
    valence: Valence = "neutral"
    kind: Literal["episodic", "semantic"] = "episodic"
    habitual: bool = True
    label: Annotated[str, Field(min_length=1, max_length=200)]
    cues: list[Cue] = Field(default_factory=list)


class Intensity(_Model):
    """How charged a conversation was: ``base`` + ``per_exclamation`` × exclamation
    marks (at most ``max_exclamations``) + ``per_heat_word`` × matches of ``heat_words``
    (at most ``max_heat_words``), at most 1. A memory of intensity above ``boost_above``
    gains ``importance_boost`` importance (at most 1)."""

    base: Unit = 0.3
    per_exclamation: Unit = 0.1
    max_exclamations: Annotated[int, Field(ge=0, le=20)] = 3
    heat_words: list[Pattern] = Field(default_factory=lambda: list(defaults.HEAT_WORDS))
    per_heat_word: Unit = 0.15
    max_heat_words: Annotated[int, Field(ge=0, le=20)] = 2
    boost_above: Unit = 0.6
    importance_boost: Unit = 0.1


DeedTemplate = Annotated[
    str, Field(min_length=1, max_length=300), _template("player", "habitually", "label", "speaker", "quote")
]
"""How a deed is worded: ``{player}``, ``{habitually}``, ``{label}``, ``{speaker}``, ``{quote}``."""

LineTemplate = Annotated[str, Field(min_length=1, max_length=300), _template("player", "speaker", "quote")]
"""How a line is kept in its speaker's words: ``{player}``, ``{speaker}``, ``{quote}``."""


class ExtractionRules(_Model):
    """The rule extractor's vocabulary: which tags it finds, by which words, which
    clauses cannot hold a deed, and how it words the memories.

    ``tags`` are merged over the built-in ones (heroic, combat, helpful, quest, theft,
    trade, gift, threat, insult, betrayal, secret, personal) field by field: a pack can
    add a tag, or change one field of a built-in tag (``cues = []`` turns it off).
    Groups keep the order of their first tag when memories tie on importance.

    Each line is read clause by clause. A cue does not count in a question (unless it opens
    with one of ``requests``: "Could you deliver this?"), nor after one of ``negations`` up
    to ``negation_reach`` words before it, nor in a clause holding one of ``hypotheticals``
    ("if", "would", "maybe"), ``hearsay`` ("I heard", "they say") or ``figures`` ("what a
    gift", "it's a steal"). The subject of a clause is its first word after any ``openers``
    ("well", "yesterday"); one of ``imperatives`` makes it a command or offer of the
    speaker. ``habit_markers`` ("always", "every week") make deeds and exchanges habits. The
    player's offer or promise to do a deed ("I'll find her", "let me help") is filed under
    ``promise_tag`` (taking on a task; ``None``: the deed's own tag), since the deed is not
    done yet. Trading (``deal_tags``) is an exchange only when one of ``deal_markers``
    closes it a few lines on ("Done.", "Shake on it."), and then it was made with the
    player, whoever named the price; haggling that closes no deal is none. A deed of the
    player in a clause holding one of ``harm_to_npc`` ("you swung at me") is negative,
    whatever its tags. The NPC thanking the player (one of ``gratitude``: "Thank you, truly",
    "that's your doing") tells that the player did something for it: in a conversation where
    no other deed of the player is found, that is one, under ``gratitude_tag`` (``None``:
    thanks tell nothing), and the player's account of a good deed done for the NPC ("your
    fence was down; I lashed the posts") that the NPC then thanks them for is their word,
    taken (``said``), not a claim. The player's answer to one of ``personal_questions`` said by the NPC
    ("Where are you from?"), and a line of the player that says their own name, are what
    they told about themselves (the ``personal`` tag) when no cue says otherwise.

    A line that matches no cue is kept as gist when it says something: at least
    ``gist_min_terms`` words that are not stop words nor ``small_talk``; its importance
    grows from ``gist_importance`` with how many such words it has, names and numbers,
    ``emotion_words`` and words new to the conversation. Runs of up to ``gist_lines``
    such lines in a row (a stretch of talk on one subject) make one memory, each line in
    its speaker's words. A conversation leaves at most ``memories_per_line`` × its lines memories (at least 3,
    at most ``max_memories``): deeds first, then facts, then the weightiest gist.

    Wording: the player's deed reads ``template`` (``{player}``, ``{habitually}``,
    ``{label}``, ``{speaker}``, ``{quote}``: the line that gave it away, cut to
    ``quote_limit`` characters); the player's own account of it ``claim_template``; the
    player's offer or promise to do it ("I'll help", "let me") ``offer_template``;
    what the player told about themselves ``fact_template``; other lines of the player
    ``gist_template``; and what the NPC itself said ``npc_template``.
    """

    tags: dict[Key, ExtractionTag] = Field(default_factory=dict, validate_default=True)
    negations: list[Pattern] = Field(default_factory=lambda: list(defaults.NEGATIONS))
    negation_reach: Annotated[int, Field(ge=0, le=5)] = 4
    hypotheticals: list[Pattern] = Field(default_factory=lambda: list(defaults.HYPOTHETICALS))
    hearsay: list[Pattern] = Field(default_factory=lambda: list(defaults.HEARSAY))
    figures: list[Pattern] = Field(default_factory=lambda: list(defaults.FIGURES))
    requests: list[Pattern] = Field(default_factory=lambda: list(defaults.REQUESTS))
    personal_questions: list[Pattern] = Field(default_factory=lambda: list(defaults.PERSONAL_QUESTIONS))
    promise_tag: Key | None = "quest"
    deal_tags: list[Key] = Field(default_factory=lambda: ["trade"])
    deal_markers: list[Pattern] = Field(default_factory=lambda: list(defaults.DEAL_MARKERS))
    harm_to_npc: list[Pattern] = Field(default_factory=lambda: list(defaults.HARM_TO_NPC))
    gratitude: list[Pattern] = Field(default_factory=lambda: list(defaults.GRATITUDE))
    gratitude_tag: Key | None = "helpful"
    openers: list[Annotated[str, Field(min_length=1, max_length=40)]] = Field(
        default_factory=lambda: list(defaults.OPENERS)
    )
    imperatives: list[Annotated[str, Field(min_length=1, max_length=40)]] = Field(
        default_factory=lambda: list(defaults.IMPERATIVES)
    )
    habit_markers: list[Pattern] = Field(default_factory=lambda: list(defaults.HABIT_MARKERS))
    small_talk: list[Annotated[str, Field(min_length=1, max_length=40)]] = Field(
        default_factory=lambda: list(defaults.SMALL_TALK)
    )
    emotion_words: list[Pattern] = Field(default_factory=lambda: list(defaults.EMOTION_WORDS))
    gist_min_terms: Annotated[int, Field(ge=1, le=50)] = 4
    gist_importance: Unit = 0.3
    gist_lines: Annotated[int, Field(ge=1, le=8)] = 3
    memories_per_line: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    max_memories: Annotated[int, Field(ge=1, le=32)] = 16
    intensity: Intensity = Intensity()
    template: DeedTemplate = defaults.MEMORY_TEMPLATE
    claim_template: DeedTemplate = defaults.CLAIM_TEMPLATE
    offer_template: DeedTemplate = defaults.OFFER_TEMPLATE
    fact_template: LineTemplate = defaults.FACT_TEMPLATE
    gist_template: LineTemplate = defaults.GIST_TEMPLATE
    npc_template: LineTemplate = defaults.NPC_TEMPLATE
    habitually: Annotated[str, Field(max_length=50)] = defaults.HABITUALLY
    quote_limit: Annotated[int, Field(ge=20, le=480)] = 480

    @field_validator("tags", mode="before")
    @classmethod
    def _merge_tags(cls, value: Any) -> Any:
        return _merged_over(defaults.EXTRACTION_TAGS, value)

    @model_validator(mode="after")
    def _named_tags_known(self) -> ExtractionRules:
        if self.promise_tag is not None and self.promise_tag not in self.tags:
            raise ValueError(
                f"promise_tag {self.promise_tag!r} is not one of the tags: {', '.join(self.tags)}"
            )
        if self.gratitude_tag is not None and self.gratitude_tag not in self.tags:
            raise ValueError(
                f"gratitude_tag {self.gratitude_tag!r} is not one of the tags: {', '.join(self.tags)}"
            )
        if unknown := [tag for tag in self.deal_tags if tag not in self.tags]:
            raise ValueError(
                f"deal_tags name unknown tags: {', '.join(unknown)}; known: {', '.join(self.tags)}"
            )
        return self

    def vocabulary(self) -> list[tuple[str, str]]:
        """(tag, description) of every tag, for the LLM extractor's prompt."""
        return [(tag, entry.description) for tag, entry in self.tags.items()]

    def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """(group, its tags) in the order of each group's first tag."""
        found: dict[str, list[str]] = {}
        for tag, entry in self.tags.items():
            found.setdefault(entry.group or tag, []).append(tag)
        return [(group, tuple(tags)) for group, tags in found.items()]


class PrivacyRules(_Model):
    """What the privacy model keeps, for how long, and what ending a game leaves.

    ``retention_days``: the longest a memory or fact of a scope may be kept, in game
    days from when it was made (a scope not named is kept until something else removes
    it); DecaySystem removes older ones on its daily visit of each NPC, locked ones too.
    ``end_game``: what ``end_game`` does with the ending game's ``session`` and ``anon``
    memories and facts: ``purge`` deletes them; ``compact`` first folds the memories of
    each NPC into at most ``compact_max_per_npc`` world-scoped ``social`` memories, one
    per tag, worded by ``compact_template`` (``{tag}``, and ``{people}``: how many
    different participants it came from), which name no player.
    ``withdrawn_consent``: what ``set_consent(player, False)`` does with the player's
    ``player``- and ``social``-scoped memories and facts: ``anonymize`` turns them into
    ``anon`` fragments of the current game with the player's name and key taken out
    (so the next ``end_game`` removes them), ``purge`` deletes them at once.
    ``sensitive_tags``: memories and facts with any of these tags are never cloned.
    """

    retention_days: dict[Scope, Annotated[float, Field(gt=0.0, allow_inf_nan=False)]] = Field(
        default_factory=dict
    )
    end_game: Literal["purge", "compact"] = "purge"
    compact_max_per_npc: Annotated[int, Field(ge=1, le=100)] = 5
    compact_template: Annotated[str, _template("tag", "people")] = (
        "Visitors in past games talked about {tag} ({people} of them)"
    )
    withdrawn_consent: Literal["anonymize", "purge"] = "anonymize"
    sensitive_tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=lambda: ["sensitive", "secret", "private"]
    )


class Pack(_Model):
    """A whole content pack."""

    pack: PackInfo
    factions: dict[Key, Faction] = Field(default_factory=dict)
    archetypes: dict[Key, Archetype] = Field(default_factory=dict)
    relationships: RelationshipRules = RelationshipRules()
    memory: MemoryRules = MemoryRules()
    budgets: Budgets = Budgets()
    llm: LlmRules = LlmRules()
    knowledge: KnowledgeRules = KnowledgeRules()
    context: ContextRules = ContextRules()
    extraction: ExtractionRules = ExtractionRules()
    limits: Limits = Limits()
    safety: SafetyRules = SafetyRules()
    privacy: PrivacyRules = PrivacyRules()

    @model_validator(mode="after")
    def _references_exist(self) -> Pack:
        if problems := cross_problems(self.model_dump()):
            raise ValueError("; ".join(f"{path}: {message}" for path, message in problems))
        return self

    def attitude(self, npc_faction: str | None, player_faction: str | None) -> Attitude:
        """The attitude of members of ``npc_faction`` towards ``player_faction``."""
        if npc_faction is None or player_faction is None:
            return "neutral"
        faction = self.factions[npc_faction]
        default: Attitude = "friendly" if npc_faction == player_faction else "neutral"
        return faction.attitudes.get(player_faction, default)


def cross_problems(data: Any) -> list[tuple[str, str]]:
    """(field path, message) of every problem between sections of a pack: references to
    factions and archetypes the pack does not define, authored facts beyond the pack's
    limits. ``data`` is the pack as parsed (any shape: what is not where it should be is
    left to the field checks), so these are found together with every field error."""

    def table(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    def items(value: Any) -> list[Any]:
        return value if isinstance(value, list) else []

    data = table(data)
    factions, archetypes = table(data.get("factions")), table(data.get("archetypes"))
    problems: list[tuple[str, str]] = []
    for key, faction in factions.items():
        problems += [
            (f"factions.{key}.attitudes.{other}", f"unknown faction '{other}'")
            for other in table(table(faction).get("attitudes"))
            if other not in factions
        ]
    for key, archetype in archetypes.items():
        faction = table(archetype).get("faction")
        if isinstance(faction, str) and faction not in factions:
            problems.append((f"archetypes.{key}.faction", f"unknown faction '{faction}'"))
    llm = table(data.get("llm"))
    for field in ("extraction_archetypes", "priority_archetypes"):
        problems += [
            (f"llm.{field}", f"unknown archetype '{a}'")
            for a in items(llm.get(field))
            if isinstance(a, str) and a not in archetypes
        ]
    limits = Limits()
    with contextlib.suppress(ValueError):  # a bad [limits] is a field error; the defaults judge meanwhile
        limits = Limits.model_validate(data.get("limits", {}))
    for index, fact in enumerate(items(table(data.get("knowledge")).get("facts"))):
        where, fact = f"knowledge.facts.{index}", table(fact)
        problems += [
            (f"{where}.archetypes", f"unknown archetype '{a}'")
            for a in items(fact.get("archetypes"))
            if isinstance(a, str) and a not in archetypes
        ]
        problems += [
            (f"{where}.factions", f"unknown faction '{f}'")
            for f in items(fact.get("factions"))
            if isinstance(f, str) and f not in factions
        ]
        content, tags = fact.get("content"), items(fact.get("tags"))
        chars = len(content.strip()) if isinstance(content, str) else 0
        sizes = [
            ("content", "characters", chars, "content_chars"),
            ("tags", "tags", len(tags), "tags_per_memory"),
            *(("tags", f"characters in tag {t!r}", len(t), "tag_chars") for t in tags if isinstance(t, str)),
        ]
        for field, what, size, limit in sizes:
            if size > (most := getattr(limits, limit)):
                problems.append((f"{where}.{field}", f"{size} {what}; the limit is {most} (limits.{limit})"))
    return problems
