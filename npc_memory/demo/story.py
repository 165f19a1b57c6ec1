"""The story of a simulation: per game day, the events that matter, then a summary.

A :class:`Chronicle` listens to the plugin's events while a scenario runs and looks at
the world once per game day (and samples relationships every few hours): a deed
witnessed and how far its rumour travelled, a relationship that crossed a threshold
and the memories that moved it, memories forgotten, episodes consolidated, habits
learned. :class:`Story` holds what it found, as text for people and as JSON-ready
data for machines and for the report's pictures.
"""

from __future__ import annotations

import io
from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import EpisodicMemory, ProceduralMemory, SemanticMemory, Stage
from npc_memory.demo.deeds import Witnessed
from npc_memory.events import FactLearned, RelationshipStageChanged, RelationshipThresholdCrossed
from npc_memory.plugin import MemoryPlugin

SAMPLE_HOURS = 6
"""Relationships and reputations are sampled every this many game hours."""

HOW_KNOWN = {"observation": "saw that ", "gossip": "heard that ", "conversation": "was told: "}
"""How a relationship moment words a fact that moved it, by the fact's source."""

SMALL_WORLD = 12
"""Worlds with at most this many NPCs and players also get a table of every relationship."""

TRAJECTORIES_IN_JSON = 20
"""The JSON story keeps the trajectories of this many most changed pairs."""

STAGE_RANK = {stage: rank for rank, stage in enumerate(Stage)}
"""Each stage's place from worst to best (the order :class:`Stage` declares them in)."""

STAGE_WEIGHT = {
    Stage.TRUSTED_ALLY: 5,
    Stage.ENEMY: 5,
    Stage.CLOSE_FRIEND: 4,
    Stage.RIVAL: 3,
    Stage.FRIEND: 2,
}


def stamp(game_time: float) -> str:
    """``day D HH:MM`` for a game time in seconds (days count from 1)."""
    day = int(game_time // SECONDS_PER_DAY) + 1
    minutes = int(game_time % SECONDS_PER_DAY // 60)
    return f"day {day} {minutes // 60:02d}:{minutes % 60:02d}"


def day_of(game_time: float) -> int:
    """The game day (from 1) a game time falls on."""
    return int(game_time // SECONDS_PER_DAY) + 1


@dataclass
class Hop:
    """One step of a rumour: ``teller`` told ``listener`` (NPC names)."""

    teller: str
    listener: str
    room: str | None
    time: float
    confidence: float
    hop: int


@dataclass
class DeedStory:
    """A public deed and the rumour it became."""

    day: int
    time: float
    player: str
    victim: str
    room: str
    content: str
    witnesses: list[str]
    origin: str | None = None
    hops: list[Hop] = field(default_factory=list)

    @property
    def reach(self) -> int:
        """How many NPCs heard of it second-hand."""
        return len(self.hops)

    @property
    def farthest(self) -> int:
        """The most hops it travelled."""
        return max((h.hop for h in self.hops), default=0)


@dataclass
class Moment:
    """A relationship that crossed a threshold or changed stage, and why."""

    day: int
    time: float
    npc: str
    player: str
    kind: str  # "threshold" or "stage"
    what: str
    weight: int
    because: list[str]


@dataclass
class MemoryChange:
    """A memory forgotten, a consolidation, or a habit learned or reinforced."""

    day: int
    npc: str
    player: str
    kind: str  # "forgotten", "consolidated", "habit", "reinforced"
    content: str
    episodes: int = 0


@dataclass
class Census:
    """Memories held in the world at the end of a game day, by kind."""

    day: int
    episodic: int
    semantic: int
    procedural: int
    forgotten: int
    consolidated: int
    facts: int


class Trajectory:
    """One pair's dispositions, one per sample from sample ``first`` on, compactly."""

    __slots__ = ("first", "values")

    def __init__(self, first: int, values: array[float]) -> None:
        self.first = first
        self.values = values

    def follow(self, index: int, value: float) -> None:
        """Add sample ``index``; samples missed (the pair was let go of) repeat the last."""
        gap = index - self.first - len(self.values)
        self.values.extend([self.values[-1]] * gap)
        self.values.append(value)


@dataclass
class Story:
    """Everything a run told: headline, per-day events, series for the pictures."""

    headline: str
    seed: int
    first_day: int
    days: int
    styles: dict[str, str]
    names: dict[str, str]
    deeds: list[DeedStory] = field(default_factory=list)
    moments: list[Moment] = field(default_factory=list)
    changes: list[MemoryChange] = field(default_factory=list)
    census: list[Census] = field(default_factory=list)
    sample_days: list[float] = field(default_factory=list)
    """When relationships and reputations were sampled (game days from 0)."""
    trajectories: dict[str, Trajectory] = field(default_factory=dict)
    """``"npc/player"`` → its dispositions from one sample on (see :meth:`trajectory`)."""
    reputation: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)
    """player → faction → (game day, standing) samples."""
    tick_ms: dict[str, list[float]] = field(default_factory=dict)
    """system name → milliseconds spent per tick."""
    summary: dict[str, Any] = field(default_factory=dict)
    summary_lines: list[str] = field(default_factory=list)

    def name(self, key: str) -> str:
        """The display name of an NPC or player."""
        return self.names.get(key, key)

    def day_range(self) -> range:
        """The game days the run covered."""
        return range(self.first_day, self.first_day + self.days)

    def farthest(self) -> DeedStory | None:
        """The public deed whose rumour reached most NPCs (ties: most hops, then earliest)."""
        return max(self.deeds, key=lambda d: (d.reach, d.farthest, -d.time), default=None)

    def trajectory(self, pair: str) -> list[tuple[float, float]]:
        """(game day from 0, disposition) samples of ``"npc/player"``."""
        track = self.trajectories[pair]
        return list(zip(self.sample_days[track.first :], track.values, strict=False))

    def most_changed(self, count: int) -> list[str]:
        """NPC–player pairs (``"npc/player"``) whose disposition moved most over the run:
        the ``count // 2`` that rose most, then the rest that fell most."""
        net = {pair: track.values[-1] - track.values[0] for pair, track in self.trajectories.items()}
        risen = sorted((p for p in net if net[p] > 0), key=lambda p: (-net[p], p))[: count // 2]
        fallen = sorted((p for p in net if net[p] < 0), key=lambda p: (net[p], p))
        return risen + fallen[: count - len(risen)]

    def log(self) -> list[str]:
        """Every relationship moment as a line, in order."""
        return [f"{stamp(m.time)}  {self.name(m.npc)}: {m.what}" for m in self.moments]

    def day_lines(self, day: int, per_kind: int = 3) -> list[str]:
        """What mattered on ``day``, at most ``per_kind`` lines of each kind."""
        lines: list[str] = []
        deeds = sorted((d for d in self.deeds if d.day == day), key=lambda d: -d.reach)
        for deed in sorted(deeds[:per_kind], key=lambda d: d.time):
            travel = (
                f"; the rumour reached {deed.reach} NPC{'s' if deed.reach != 1 else ''} "
                f"in {deed.farthest} hop{'s' if deed.farthest != 1 else ''}"
                if deed.reach
                else "; nobody passed it on"
            )
            bystanders = len(deed.witnesses) - (deed.victim in deed.witnesses)
            seen = (
                f"{bystanders} bystander{'s' if bystanders != 1 else ''} saw it"
                if bystanders
                else "no one else saw it"
            )
            lines.append(f"{stamp(deed.time)[-5:]}  {deed.content} in the {deed.room}; {seen}{travel}")
        if len(deeds) > per_kind:
            lines.append(f"       ... and {len(deeds) - per_kind} more deeds seen in public")
        moments = sorted((m for m in self.moments if m.day == day), key=lambda m: (-m.weight, m.time))
        for moment in sorted(_varied(moments, per_kind), key=lambda m: m.time):
            because = f" — {'; '.join(moment.because)}" if moment.because else ""
            lines.append(f"{stamp(moment.time)[-5:]}  {self.name(moment.npc)}: {moment.what}{because}")
        if len(moments) > per_kind:
            lines.append(f"       ... and {len(moments) - per_kind} more relationship changes")
        for kind, verb in (
            ("forgotten", "forgot"),
            ("consolidated", "summed up"),
            ("habit", "learned a habit"),
            ("reinforced", "saw a habit again"),
        ):
            changes = [c for c in self.changes if c.day == day and c.kind == kind]
            if not changes:
                continue
            first = changes[0]
            more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
            detail = f" {first.episodes} memories as" if kind == "consolidated" else ""
            lines.append(f'       {self.name(first.npc)} {verb}{detail}: "{first.content}"{more}')
        return lines

    def text(self, quiet: bool = False) -> str:
        """The story for people: each day's events (unless ``quiet``), then the summary."""
        out = io.StringIO()
        span = (
            f"{self.days} game day{'s' if self.days != 1 else ''}"
            if self.first_day == 1
            else f"game days {self.first_day}-{self.first_day + self.days - 1}"
        )
        out.write(f"{self.headline}, {span}, seed {self.seed}\n")
        if not quiet:
            for day in self.day_range():
                lines = self.day_lines(day)
                out.write(f"\nDay {day}\n")
                for line in lines or ["       a quiet day"]:
                    out.write(f"  {line}\n")
        out.write("\n")
        for line in self.summary_lines:
            out.write(f"{line}\n")
        return out.getvalue()

    def to_json(self) -> dict[str, Any]:
        """The story as plain data (for ``--json``)."""
        data = asdict(replace(self, trajectories={}))  # the few shown are added below
        for deed, raw in zip(self.deeds, data["deeds"], strict=True):
            raw["reach"], raw["farthest"] = deed.reach, deed.farthest
        data["days_told"] = [
            {"day": day, "events": self.day_lines(day, per_kind=10**9)} for day in self.day_range()
        ]
        data.pop("summary_lines")
        shown = self.most_changed(TRAJECTORIES_IN_JSON)
        data["trajectories"] = {pair: self.trajectory(pair) for pair in shown}
        return data


def _varied(moments: list[Moment], count: int) -> list[Moment]:
    """The first ``count`` moments, preferring ones about players not yet shown."""
    players: set[str] = set()
    chosen: list[Moment] = []
    for moment in moments:
        if moment.player not in players:
            players.add(moment.player)
            chosen.append(moment)
            if len(chosen) == count:
                return chosen
    return chosen + [m for m in moments if m not in chosen][: count - len(chosen)]


class Chronicle:
    """Listens to a running simulation and writes its :class:`Story`."""

    def __init__(self, plugin: MemoryPlugin, headline: str, seed: int, styles: dict[str, str]) -> None:
        self.plugin = plugin
        self.story = Story(headline=headline, seed=seed, first_day=1, days=0, styles=styles, names={})
        self._by_origin: dict[str, DeedStory] = {}
        self._hop_of: dict[tuple[str, str], int] = {}
        self._seen_origin: str | None = None
        self._episodes: dict[tuple[str, str], str] = {}
        self._known: set[tuple[str, str]] = set()
        self._reinforcement: dict[tuple[str, str], int] = {}
        self._hours = 0
        self._factions: list[str] = []
        plugin.on(FactLearned, self._fact_learned)
        plugin.on(RelationshipThresholdCrossed, self._threshold)
        plugin.on(RelationshipStageChanged, self._stage)

    def begin(self) -> None:
        """The world is populated: note names, factions and what is already held."""
        plugin = self.plugin
        self.story.names = {k: plugin.npc(k).identity.name for k in plugin.npcs()}
        self.story.names.update({k: plugin.player(k).identity.name for k in plugin.players()})
        self._factions = sorted({f for k in plugin.npcs() if (f := plugin.npc(k).faction.faction)})
        self.story.first_day = day_of(plugin.clock.now + 1.0)
        self._census(record=False)
        self._sample()

    # --- events -------------------------------------------------------------

    def witnessed(self, deed: Witnessed) -> None:
        """A scenario reports a public deed, right after it was observed."""
        now = self.plugin.clock.now
        story = DeedStory(
            day=day_of(now),
            time=now,
            player=deed.player,
            victim=deed.victim,
            room=deed.room,
            content=deed.content,
            witnesses=list(deed.witnesses),
        )
        self.story.deeds.append(story)
        story.origin = self._seen_origin
        if self._seen_origin is not None:
            self._by_origin[self._seen_origin] = story
            for witness in deed.witnesses:
                self._hop_of[(self._seen_origin, witness)] = 0
        self._seen_origin = None

    def _fact_learned(self, event: FactLearned) -> None:
        if event.source == "observation":
            self._seen_origin = event.origin
            return
        deed = self._by_origin.get(event.origin)
        if deed is None or event.teller is None:
            return
        hop = self._hop_of.get((event.origin, event.teller), 0) + 1
        self._hop_of[(event.origin, event.npc)] = hop
        deed.hops.append(Hop(event.teller, event.npc, event.room, event.game_time, event.confidence, hop))

    def _threshold(self, event: RelationshipThresholdCrossed) -> None:
        name = type(event).__name__
        what = (
            f"{event.dimension.replace('_', ' ')} of {self.story.name(event.player)} went "
            f"{event.direction} {event.limit:g} ({event.value:.2f}) -> {name}"
        )
        worse = (event.direction == "above") == (event.dimension == "fear")
        self._moment(event.npc, event.player, event.game_time, "threshold", what, 3, worse)

    def _stage(self, event: RelationshipStageChanged) -> None:
        what = (
            f"now sees {self.story.name(event.player)} as {stage_name(event.new)} "
            f"(was {stage_name(event.old)})"
        )
        worse = STAGE_RANK[event.new] < STAGE_RANK[event.old]
        met = (event.old, event.new) == (Stage.STRANGER, Stage.ACQUAINTANCE)  # they met
        weight = STAGE_WEIGHT.get(event.new, 1)
        self._moment(event.npc, event.player, event.game_time, "stage", what, weight, worse, met)

    def _moment(
        self,
        npc: str,
        player: str,
        time: float,
        kind: str,
        what: str,
        weight: int,
        worse: bool,
        met: bool = False,
    ) -> None:
        """Note a relationship moment with what moved it that way: the NPC's most salient
        memories of the player that point the same way (negative ones for a change for the
        worse), else what it heard of them, else (``met``) that they met."""
        toward = "negative" if worse else "positive"
        memories = [m for m in self.plugin.memories(npc, player) if m.valence == toward]
        held = Counter(m.content for m in memories[:6])
        because = [f"{text} (x{count})" if count > 1 else text for text, count in held.most_common(2)]
        if not because:
            heard = [f for f in self.plugin.facts(npc) if f.subject == player]
            because = [f"{HOW_KNOWN.get(f.source, '')}{f.content}" for f in heard[-2:]]
        if not because and met:
            because = ["we met"]
        self.story.moments.append(Moment(day_of(time), time, npc, player, kind, what, weight, because))

    # --- sampling -----------------------------------------------------------

    def hour_passed(self, spent: dict[str, float]) -> None:
        """A tick ran: note what each system spent on it; sample every few hours."""
        for name, ms in spent.items():
            self.story.tick_ms.setdefault(name, []).append(ms)
            spent[name] = 0.0
        self._hours += 1
        if self._hours % SAMPLE_HOURS == 0:
            self._sample()

    def day_passed(self) -> None:
        """A game day ended: see what was forgotten, consolidated and learned."""
        self.story.days += 1
        self._census(record=True)

    def _sample(self) -> None:
        plugin = self.plugin
        index, when = len(self.story.sample_days), plugin.clock.now / SECONDS_PER_DAY
        self.story.sample_days.append(when)
        trajectories = self.story.trajectories
        for npc in plugin.npcs():
            for player in plugin.npc(npc).relationships.by_player:
                rel = plugin.relationship(npc, player)  # as it stands now, drift applied
                pair = f"{npc}/{player}"
                track = trajectories.get(pair)
                if track is None:
                    trajectories[pair] = Trajectory(index, array("f", [rel.disposition]))
                else:
                    track.follow(index, rel.disposition)
        for player in plugin.players():
            per_faction = self.story.reputation.setdefault(player, {})
            for faction in self._factions:
                standing = plugin.query.standing(faction, player)
                per_faction.setdefault(faction, []).append((when, standing))

    def _census(self, record: bool) -> None:
        plugin = self.plugin
        day = day_of(plugin.clock.now - 1.0)
        episodes: dict[tuple[str, str], str] = {}
        consolidated: set[tuple[str, str]] = set()
        counts: Counter[str] = Counter()
        facts = 0
        for npc in plugin.npcs():
            handle = plugin.npc(npc)
            facts += len(handle.knowledge.facts)
            for player, pair in handle.bank.players.items():
                for memory in pair.episodic:
                    episodes[(npc, memory.id)] = f"{player}\n{memory.content}"
                counts["episodic"] += len(pair.episodic)
                counts["semantic"] += len(pair.semantic)
                counts["procedural"] += len(pair.procedural)
                for semantic in pair.semantic:
                    if (npc, semantic.id) not in self._known:
                        self._known.add((npc, semantic.id))
                        consolidated.update((npc, source) for source in semantic.source_episodes)
                        if record and semantic.source_episodes:  # (not one a conversation gave)
                            self._change(
                                day, npc, player, "consolidated", semantic, len(semantic.source_episodes)
                            )
                for habit in pair.procedural:
                    self._habit(day, npc, player, habit, record)
        forgotten = [key for key in self._episodes if key not in episodes and key not in consolidated]
        if record:
            for npc, memory_id in forgotten:
                player, content = self._episodes[(npc, memory_id)].split("\n", 1)
                self.story.changes.append(MemoryChange(day, npc, player, "forgotten", content))
            self.story.census.append(
                Census(
                    day,
                    counts["episodic"],
                    counts["semantic"],
                    counts["procedural"],
                    len(forgotten),
                    sum(1 for key in consolidated if key in self._episodes),
                    facts,
                )
            )
        self._episodes = episodes

    def _habit(self, day: int, npc: str, player: str, habit: ProceduralMemory, record: bool) -> None:
        key = (npc, habit.id)
        before = self._reinforcement.get(key)
        self._reinforcement[key] = habit.reinforcement
        if record and before is None:
            self._change(day, npc, player, "habit", habit, 0)
        elif record and before is not None and habit.reinforcement > before:
            self._change(day, npc, player, "reinforced", habit, 0)

    def _change(
        self,
        day: int,
        npc: str,
        player: str,
        kind: str,
        memory: EpisodicMemory | SemanticMemory | ProceduralMemory,
        episodes: int,
    ) -> None:
        self.story.changes.append(MemoryChange(day, npc, player, kind, memory.content, episodes))

    # --- the end --------------------------------------------------------------

    def finish(self) -> Story:
        """Write the summary and hand over the story."""
        self.story.summary, self.story.summary_lines = summarise(self.plugin, self.story)
        return self.story


def stage_name(stage: Stage) -> str:
    """A stage as words: ``close friend``."""
    return stage.value.replace("_", " ")


def summarise(plugin: MemoryPlugin, story: Story) -> tuple[dict[str, Any], list[str]]:
    """The run in numbers and in a few lines of text."""
    npcs, players = plugin.npcs(), plugin.players()
    reputation = {
        player: sum(plugin.query.disposition(npc, player) for npc in npcs) / len(npcs) for player in players
    }
    by_style: dict[str, list[float]] = {}
    for player, value in reputation.items():
        by_style.setdefault(story.styles.get(player, "player"), []).append(value)
    totals = Counter(change.kind for change in story.changes)
    last = story.census[-1] if story.census else None
    stages = Counter(
        plugin.relationship(npc, player).stage.value
        for npc in npcs
        for player in plugin.npc(npc).relationships.by_player
    )
    farthest = story.farthest()
    why = None
    if farthest is not None and farthest.hops:
        last_hop = max(farthest.hops, key=lambda h: (h.hop, h.time))
        held = plugin.facts(last_hop.listener, include_disbelieved=True)
        fact = next((f for f in held if f.origin == farthest.origin), None)
        why = plugin.query.why(last_hop.listener, fact.id) if fact is not None else None
    stats = plugin.extraction.stats
    summary: dict[str, Any] = {
        "reputation": reputation,
        "reputation_by_style": {style: sum(v) / len(v) for style, v in by_style.items()},
        "memories": asdict(last) if last else {},
        "forgotten": totals["forgotten"],
        "consolidated": totals["consolidated"],
        "habits": totals["habit"],
        "habits_reinforced": totals["reinforced"],
        "deeds_witnessed": len(story.deeds),
        "rumours_heard": sum(d.reach for d in story.deeds),
        "relationship_moments": len(story.moments),
        "stages": dict(stages),
        "conversations": {"held": stats.queued, "extracted": stats.applied},
        "farthest_rumour": why,
    }
    lines = [f"Summary after {story.days} game day{'s' if story.days != 1 else ''}:"]
    if len(players) <= 8:
        for player in players:
            style = story.styles.get(player, "")
            lines.append(f"  {story.name(player):8} ({style}) reputation {reputation[player]:+.2f}")
    else:
        for style, value in sorted(summary["reputation_by_style"].items(), key=lambda kv: -kv[1]):
            lines.append(
                f"  {style:9} players: mean reputation {value:+.2f} ({len(by_style[style])} players)"
            )
        ranked = sorted(players, key=lambda p: reputation[p])
        lines.append(
            "  best liked: " + ", ".join(f"{story.name(p)} {reputation[p]:+.2f}" for p in ranked[-3:][::-1])
        )
        lines.append(
            "  least liked: " + ", ".join(f"{story.name(p)} {reputation[p]:+.2f}" for p in ranked[:3])
        )
    if last is not None:
        lines.append(
            f"  memories held: {last.episodic} episodic, {last.semantic} semantic, "
            f"{last.procedural} procedural; {last.facts} facts"
        )
    lines.append(
        f"  {totals['forgotten']} memories forgotten, {totals['consolidated']} consolidations, "
        f"{totals['habit']} habits learned ({totals['reinforced']} reinforced)"
    )
    lines.append(
        f"  {len(story.deeds)} deeds seen in public, passed on {summary['rumours_heard']} times by gossip; "
        f"{len(story.moments)} relationship changes"
    )
    lines.append(
        f"  conversations: {stats.queued} held, {stats.applied} turned into memories by the extractor"
    )
    lines.append(
        "  stages: "
        + ", ".join(f"{count} {stage.replace('_', ' ')}" for stage, count in stages.most_common())
    )
    if why is not None:
        lines.append(f"  farthest rumour: {why}")
    if len(npcs) <= SMALL_WORLD and len(players) <= SMALL_WORLD:
        lines += _regards(plugin, story, npcs, players)
    return summary, lines


def _regards(plugin: MemoryPlugin, story: Story, npcs: list[str], players: list[str]) -> list[str]:
    """For a small world: how each NPC regards each player, and what the first NPC
    remembers best of each."""
    width = 26
    lines = ["", "How each NPC regards each player (stage, trust):"]
    lines.append(f"  {'':16}" + "".join(f"{story.name(p):<{width}}" for p in players))
    for npc in npcs:
        cells = []
        for player in players:
            rel = plugin.relationship(npc, player)
            cells.append(f"{stage_name(rel.stage) + f' ({rel.trust:.2f})':<{width}}")
        lines.append(f"  {story.name(npc):16}" + "".join(cells).rstrip())
    first = npcs[0]
    lines += ["", f"What {story.name(first)} remembers best of each player:"]
    for player in players:
        top = list(dict.fromkeys(m.content for m in plugin.memories(first, player)))[:2]  # each once
        recollection = "; ".join(top) or "nothing yet"
        lines.append(f"  {story.name(player):8} {recollection}")
    return lines
