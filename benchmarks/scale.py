"""Sustained-load benchmark: a busy server's load on the plugin over thousands of ticks.

    python benchmarks/scale.py --npcs 1000 --players 100 --ticks 5000 --mix busy
    python benchmarks/scale.py --npcs 10000 --players 1000 --ticks 2000 --mix stress --json out.json
    python benchmarks/scale.py --npcs 10000 --players 1000 --ticks 500 --mix quiet

A world of NPCs (spread over rooms, archetypes cycled from the pack) and players (factions
from the pack) is set up with a TinyDB store and saved; none of that is timed. The garbage
collector is then run between frames by :class:`npc_memory.FrameCollector`, as "The garbage
collector" in docs/installing-and-budgets.md suggests for a game (``--collector auto``:
CPython's own after a ``gc.freeze()`` of the set-up; ``none``: CPython's own, nothing
frozen). Then every
tick the host makes the facade calls of the mix (each timed, by kind) and calls
``esper.process(1/60)`` with ``time_scale=60`` (one game second per tick), which is timed as
the plugin's tick; each of the plugin's processors is timed too, by a wrapper put on the
instance here (the plugin is not changed). One ``random.Random(seed)`` drives the load and the
plugin is installed with the same seed: same seed, same load.

Mixes, per tick:

* ``busy``: half a finished conversation (6 lines, then ``end_conversation``: one every two
  ticks), 1 observed event, 2 ``remember``, 1 relationship change, 20 moves, 2 ``context()``.
* ``stress``: 4 conversations, 2 observed events, 10 ``remember``, 2 relationship changes,
  21 moves.
* ``quiet``: nothing at all; just ticks.

Ticks are paced like a server loop, ``--pace`` per real second (60; 0: back to back), so the
store's writer thread gets the idle time between frames it would get in a game; a frame whose
predecessor overran its 16.7 ms starts at once (counted as late, never bursting to catch up).

Every ``--window`` ticks (100) one line: the plugin's tick p50/p99/max (ms), the host's facade
calls per tick (p50, ms), each system's p50/p99 (µs), memories and facts held, RSS, snapshot
rounds handed to the writer / on disk during the run, the oldest unsaved change (game seconds;
see :class:`Durability`), the extraction backlog, full (generation 2) garbage collections and
late frames; the JSON has more (relationships, every facade call kind, GC pauses, the ticks
after which the store writer's round was late, this process's fsync times). The first tick
(after set-up or load, with its cold esper query caches) is reported apart and left out of
the windows. At the end: ``plugin.save()`` (timed), the counts, uninstall, install again on the
same store and add the same keys (timed: the cold load), the first tick after the load, and
"reload identical" comparing the counts and a digest of every NPC's and player's components.

``--store PATH`` uses (and keeps) that store directory: a store a previous run left is loaded
(the same keys are added again), so ``--mix quiet`` can measure a quiet world after a busy one.
Without it a temporary directory is used and removed.

Timings are wall-clock (``time.perf_counter_ns``) and include the garbage collector and the
store writer thread's share of the GIL, as a game would see them.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import esper
import msgspec

import npc_memory
from npc_memory.content import validate_pack
from npc_memory.systems.snapshot import SnapshotSystem

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

Mix = Literal["busy", "stress", "quiet"]
WORLD = "scale"
RELOAD_WORLD = "scale-reload"
TIME_SCALE = 60.0
DT = 1 / 60
MAX_TOKENS = 1000
FACADE_KINDS = ("say", "end_conversation", "observe", "remember", "adjust_relationship", "move", "context")


@dataclass(frozen=True)
class Rates:
    """Facade calls per tick (fractions accumulate: 0.5 is one call every two ticks)."""

    conversations: float = 0.0
    observes: float = 0.0
    remembers: float = 0.0
    relationships: float = 0.0
    moves: float = 0.0
    contexts: float = 0.0


MIXES: dict[str, Rates] = {
    "busy": Rates(conversations=0.5, observes=1, remembers=2, relationships=1, moves=20, contexts=2),
    "stress": Rates(conversations=4, observes=2, remembers=10, relationships=2, moves=21),
    "quiet": Rates(),
}


@dataclass(frozen=True)
class Config:
    npcs: int = 1000
    players: int = 100
    ticks: int = 1000
    mix: Mix = "busy"
    seed: int = 0
    rooms: int | None = None
    """Rooms the NPCs are spread over; ``None``: 50 up to 1,000 NPCs, else 100."""
    window: int = 100
    fact_cap: int | None = None
    """Facts per NPC (``knowledge.cap``); ``None``: the pack's (500)."""
    memory_cap: int | None = None
    """Memories per NPC (``memory.memories_per_npc``); ``None``: the pack's (2,000)."""
    player_cap: int | None = None
    """Players per NPC (``memory.players_per_npc``); ``None``: the pack's (200)."""
    pace: float = 60.0
    """Ticks per real second, as a game server runs them (the store's writer thread works in
    between); 0: back to back, as fast as possible."""
    collector: Literal["frames", "auto", "none"] = "frames"
    """Who runs the garbage collector during the run (README, "The garbage collector"):
    ``frames``, a :class:`npc_memory.FrameCollector` started after set-up and run in each
    frame's slack; ``auto``, CPython's automatic collector after a collect and ``gc.freeze()``
    of the set-up; ``none``, CPython's collector with nothing frozen."""

    @property
    def room_count(self) -> int:
        return self.rooms if self.rooms is not None else (50 if self.npcs <= 1000 else 100)


# ---------------------------------------------------------------------------- the load


NAMES = (
    "Alda", "Bram", "Cora", "Dunstan", "Edda", "Falk", "Greta", "Hal", "Ilse", "Jory", "Kell", "Liese",
    "Marta", "Nils", "Oswin", "Pell", "Quill", "Rosa", "Sten", "Tilda", "Ulf", "Vera", "Wren", "Yorick",
)
SURNAMES = (
    "Ashford", "Brook", "Cole", "Dale", "Fenwick", "Gray", "Hollow", "Kettle", "Marsh", "Oakes",
    "Pike", "Reed", "Stone", "Thorne", "Underhill", "Wick",
)
ROOM_KINDS = ("market", "forge", "tavern", "temple", "barracks", "mill", "docks", "square", "gate", "farm")
ITEMS = ("longsword", "shield", "lantern", "rope", "horseshoe", "cloak", "dagger", "loaf of bread", "healing draught", "pair of boots")
PLACES = ("old mill", "north road", "river ford", "market square", "watchtower", "chapel", "west gate", "orchard")
TOWNS = ("Rivermoor", "Eastwatch", "Hollowmere", "Stonebridge", "the hill farms")
RELATIVES = ("daughter", "son", "brother", "goat", "apprentice")
CREATURES = ("wolves", "bandits", "raiders", "a bear")

Exchange = tuple[tuple[str, ...], tuple[str, ...]]
"""Options for one player line and the NPC's answer."""

# Three exchanges per conversation (6 lines, the player first), each line drawn from its
# options; slots: {npc} {player} {item} {price} {lower} {place} {town} {relative} {creature}.
# The words are chosen so the rule extractor reacts (or, for small talk, stays silent).
CONVERSATIONS: dict[str, tuple[int, tuple[Exchange, Exchange, Exchange]]] = {
    "trade": (5, (
        (("How much for the {item}?", "Is that {item} for sale, {npc}?", "I want to buy a {item}."),
         ("{price} gold, and not a copper less.", "For you, {price} silver.", "That one? {price} gold, it's the best I have.")),
        (("That's steep. Would you take {lower} gold?", "I'll pay {lower} gold and not a coin more.", "Can we haggle a little?"),
         ("Fine, {lower} gold. You drive a hard bargain.", "Meet me halfway and it's a deal.", "No haggling today, friend.")),
        (("Done. Here, I paid you in full.", "A deal then. I'll take it.", "I'll think about it."),
         ("Come again, {player}.", "Pleasure doing business.", "Suit yourself.")),
    )),
    "help": (3, (
        (("You look troubled, {npc}. Let me help.", "I can help with that, if you like.", "Need a hand?"),
         ("The cart wheel broke on the way to the {place}.", "The roof of the {place} leaks again.", "These sacks won't carry themselves.")),
        (("I fixed the axle, it should hold now.", "I'll carry the sacks to the {place}.", "I repaired the beam, it's dry now."),
         ("Thank you for the help, {player}.", "You fixed it? I owe you a drink.", "My back thanks you.")),
        (("Happy to help.", "Any time.", "Glad I was passing by."),
         ("The village needs more folk like you.", "I won't forget it.", "Safe travels.")),
    )),
    "threat": (1, (
        (("Hand over the {item} or else.", "Pay what you owe, {npc}.", "Give me the {item}. Now."),
         ("Are you threatening me?", "I don't owe you anything.", "Get out of my sight.")),
        (("I know where you live. Don't make me come back.", "You'll regret crossing me.", "Watch your back tonight."),
         ("The watch will hear of this.", "Leave, before I call the guards.", "You threatened me in my own house.")),
        (("We'll see who they believe.", "Think it over.", "Last warning."),
         ("Get out.", "Out!", "Leave me be.")),
    )),
    "small_talk": (6, (
        (("Fine weather today.", "Good morning, {npc}.", "Busy day?"),
         ("Aye, the harvest looks good this year.", "Morning, {player}.", "Busy enough, busy enough.")),
        (("How is the family?", "Anything new in the village?", "The {place} looks lovely in the sun."),
         ("Well enough, thank you for asking.", "Quiet, as always.", "It does, it does.")),
        (("Take care, then.", "See you around.", "Good day."),
         ("And you.", "Mind the puddles.", "Good day to you.")),
    )),
    "quest": (2, (
        (("You look worried, {npc}.", "Is something wrong?", "I heard you need someone."),
         ("My {relative} went missing near the {place}.", "There's a bounty on the {creature} by the {place}.", "Could you deliver this letter to {town}?")),
        (("I'll take the job. Is there a reward?", "I'll find them before nightfall.", "Consider it done."),
         ("Twenty gold if you bring them back safe.", "The reward is yours when it's done.", "Thank you. Hurry.")),
        (("Which way did they go?", "Where do I start?", "I'll leave at dawn."),
         ("Towards the {place}, last I saw.", "Ask at the {place}.", "Good luck, {player}.")),
    )),
    "heroic": (2, (
        (("The {creature} are attacking the {place}!", "I saw {creature} on the north road!", "Raiders at the gate!"),
         ("Help me drive them off!", "Get the guards, quickly!", "Not again! Grab a weapon!")),
        (("I fought off three of them at the {place}.", "I defended the gate until the watch came.", "I rescued the miller's children from the fire."),
         ("You saved us, {player}. I owe you my life.", "You're a hero, truly.", "You protected the whole village.")),
        (("Anyone would have done the same.", "Is everyone safe?", "They won't be back soon."),
         ("Not anyone. You.", "Thanks to you, yes.", "Let them try.")),
    )),
    "gift": (2, (
        (("I brought you some herbs from the {place}.", "This {item} is for you.", "Here, take this."),
         ("For me? What's the occasion?", "That's very kind.", "You shouldn't have.")),
        (("Keep it, no charge.", "It's a gift, as a thank-you.", "It's on me."),
         ("A gift! I'll treasure it.", "Thank you, {player}.", "I'll put it to good use.")),
        (("You've earned it.", "Enjoy it.", "Don't mention it."),
         ("Come by any time.", "You're welcome here.", "Bless you.")),
    )),
    "personal": (2, (
        (("I grew up in {town}.", "My father was a smith, like you.", "I used to be a soldier."),
         ("{town}? That's a long way off.", "Is that so?", "You don't say.")),
        (("I served in the border wars for ten years.", "My sister still lives there.", "I work as a caravan guard now."),
         ("That explains the scars.", "You must miss her.", "Honest work.")),
        (("It was a long time ago.", "Some days I do.", "It pays."),
         ("Stay a while, then.", "Family is everything.", "That it does.")),
    )),
    "insult": (1, (
        (("This {item} is useless.", "Call this a shop?", "What are you looking at?"),
         ("It's the best in the village.", "It is, and a good one.", "Nothing, traveller.")),
        (("Only a fool would pay for it.", "You're a stupid old lout.", "What a pathetic little village."),
         ("Mind your tongue.", "There's no need for that.", "Then leave.")),
        (("Or what?", "Shut up.", "I'll go where I please."),
         ("Out.", "We're done here.", "Good riddance.")),
    )),
    "secret": (1, (
        (("Can I tell you something?", "Can you keep a secret?", "This stays between us."),
         ("My lips are sealed.", "Of course.", "Go on.")),
        (("The password to the cellar under the {place} is 'juniper'.", "I saw the mayor meeting smugglers at the {place}.", "I'm not who I say I am."),
         ("A secret like that could get you killed.", "I'll keep it quiet, I swear it.", "No one must know, then.")),
        (("Tell no one.", "I trust you.", "Thank you."),
         ("Not a word.", "You can.", "Of course.")),
    )),
}

OBSERVED: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("{player} stole a {item} from a stall at the {place}", ("theft",), 0.7),
    ("{player} drove off {creature} at the {place}", ("heroic", "combat"), 0.8),
    ("{player} helped put out a fire at the {place}", ("helpful",), 0.6),
    ("{player} gave bread to the beggars by the {place}", ("gift",), 0.5),
    ("{player} started a brawl near the {place}", ("combat",), 0.6),
    ("{player} insulted the priest in front of everyone", ("insult",), 0.5),
    ("{player} threatened a merchant with a knife", ("threat",), 0.75),
    ("{player} paid a fair price for a {item}", ("trade",), 0.3),
    ("{player} carried an injured guard to the healer", ("helpful", "heroic"), 0.7),
)

REMEMBERED: tuple[tuple[str, tuple[str, ...], float, Literal["positive", "negative", "neutral"]], ...] = (
    ("{player} delivered the letter to {town} as promised", ("quest", "helpful"), 0.6, "positive"),
    ("{player} still owes me {price} gold for the {item}", ("trade",), 0.5, "negative"),
    ("{player} asked about the old watchtower", ("quest",), 0.4, "neutral"),
    ("{player} returned my lost {item}", ("helpful", "gift"), 0.7, "positive"),
    ("{player} was seen drinking with the Quiet Hand", ("secret",), 0.6, "negative"),
    ("{player} won the archery contest at the {place}", ("combat",), 0.5, "positive"),
    ("{player} broke a promise to bring medicine", ("betrayal",), 0.8, "negative"),
)
WORLD_REMEMBERED = (
    "The {place} flooded after the storm",
    "A caravan from {town} arrived with salt",
    "{creature} were seen near the {place}",
)

MESSAGES = (
    "Do you remember me?",
    "How much for the {item}?",
    "Any news about the {creature}?",
    "What do you think of the {place}?",
    "Have you seen a thief around here?",
    "I'm back. Did you miss me?",
)


@dataclass(frozen=True)
class Call:
    """One facade call: ``getattr(plugin, kind)(*args, **kwargs)``."""

    kind: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    faction: str | None
    archetype: str | None
    room: str


class Load:
    """The world's people and the facade calls of each tick, all drawn from one seeded
    generator: the same seed gives the same world and the same calls."""

    def __init__(self, config: Config, pack: npc_memory.Pack) -> None:
        self.config = config
        self.rates = MIXES[config.mix]
        self.rng = random.Random(config.seed)
        kinds = len(ROOM_KINDS)
        self.rooms = [f"{ROOM_KINDS[i % kinds]}-{i // kinds + 1}" for i in range(config.room_count)]
        archetypes = list(pack.archetypes)
        factions = list(pack.factions)
        self.npcs = [
            Person(f"npc{i:05d}", self._name(i), None, archetypes[i % len(archetypes)], self.rooms[i % len(self.rooms)])
            for i in range(config.npcs)
        ]
        self.players = [
            Person(f"player{i:04d}", self._name(i * 7 + 3), factions[i % len(factions)], None, self.rng.choice(self.rooms))
            for i in range(config.players)
        ]
        self._due = {name: 0.0 for name in ("conversations", "observes", "remembers", "relationships", "moves", "contexts")}
        self._themes = list(CONVERSATIONS)
        self._weights = [CONVERSATIONS[t][0] for t in self._themes]

    @staticmethod
    def _name(i: int) -> str:
        return f"{NAMES[i % len(NAMES)]} {SURNAMES[(i // len(NAMES)) % len(SURNAMES)]}"

    def _count(self, name: str) -> int:
        self._due[name] += getattr(self.rates, name)
        whole = int(self._due[name])
        self._due[name] -= whole
        return whole

    def _fill(self, template: str, npc: Person | None = None, player: Person | None = None) -> str:
        rng = self.rng
        price = rng.randrange(5, 60)
        return template.format(
            npc=npc.name.split()[0] if npc else "friend",
            player=player.name.split()[0] if player else "stranger",
            item=rng.choice(ITEMS), price=price, lower=max(1, price - rng.randrange(1, 5)),
            place=rng.choice(PLACES), town=rng.choice(TOWNS), relative=rng.choice(RELATIVES),
            creature=rng.choice(CREATURES),
        )

    def tick(self) -> list[Call]:
        """The facade calls of one tick, in the order the host makes them."""
        rng, npcs, players = self.rng, self.npcs, self.players
        calls: list[Call] = []
        for _ in range(self._count("conversations")):
            npc, player = rng.choice(npcs), rng.choice(players)
            theme = rng.choices(self._themes, self._weights)[0]
            for player_options, npc_options in CONVERSATIONS[theme][1]:
                calls.append(Call("say", (npc.key, player.key, player.name.split()[0], self._fill(rng.choice(player_options), npc, player))))
                calls.append(Call("say", (npc.key, player.key, npc.name.split()[0], self._fill(rng.choice(npc_options), npc, player))))
            calls.append(Call("end_conversation", (npc.key, player.key)))
        for _ in range(self._count("observes")):
            player = rng.choice(players)
            content, tags, importance = rng.choice(OBSERVED)
            calls.append(Call("observe", (), {
                "room": player.room, "subject": player.key, "content": self._fill(content, None, player),
                "tags": list(tags), "importance": importance,
            }))
        for _ in range(self._count("remembers")):
            npc = rng.choice(npcs)
            if rng.random() < 0.1:
                calls.append(Call("remember", (npc.key, None, self._fill(rng.choice(WORLD_REMEMBERED))),
                                  {"tags": ["news"], "importance": 0.4}))
                continue
            player = rng.choice(players)
            content, tags, importance, valence = rng.choice(REMEMBERED)
            calls.append(Call("remember", (npc.key, player.key, self._fill(content, npc, player)), {
                "tags": list(tags), "importance": importance, "valence": valence,
                "intensity": round(rng.random(), 2), "affect_relationship": rng.random() < 0.5,
            }))
        for _ in range(self._count("relationships")):
            npc, player = rng.choice(npcs), rng.choice(players)
            calls.append(Call("adjust_relationship", (npc.key, player.key), {"trust": rng.choice((0.05, -0.05))}))
        for _ in range(self._count("moves")):
            calls.append(Call("move", (rng.choice(npcs).key, rng.choice(self.rooms))))
        for _ in range(self._count("contexts")):
            npc, player = rng.choice(npcs), rng.choice(players)
            calls.append(Call("context", (npc.key, player.key, self._fill(rng.choice(MESSAGES), npc, player)),
                              {"max_tokens": MAX_TOKENS}))
        return calls


# ---------------------------------------------------------------------------- measuring


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0 if empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))
    return float(sorted_values[min(len(sorted_values), int(rank)) - 1])


def rss_mb() -> float:
    """The process's current resident set (``/proc/self/statm``; the peak from getrusage elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


class SystemTimer:
    """Times each of the plugin's processors by wrapping ``process`` on the instance."""

    def __init__(self, processors: Sequence[esper.Processor]) -> None:
        self.samples: dict[str, list[int]] = {}
        for processor in processors:
            name = type(processor).__name__.removesuffix("System")
            samples: list[int] = []
            self.samples[name] = samples
            processor.process = self._timed(processor.process, samples)  # type: ignore[method-assign]

    @staticmethod
    def _timed(process: Callable[..., Any], samples: list[int]) -> Callable[..., Any]:
        clock = time.perf_counter_ns

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return process(*args, **kwargs)
            finally:
                samples.append(clock() - start)

        return timed

    def take(self) -> dict[str, list[int]]:
        taken = {name: list(samples) for name, samples in self.samples.items()}
        for samples in self.samples.values():
            samples.clear()
        return taken


class GcWatch:
    """Pauses of the garbage collector, by generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, int]] = []
        self._start = 0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
        else:
            self.pauses.append((info["generation"], time.perf_counter_ns() - self._start))

    def take(self) -> list[tuple[int, int]]:
        taken, self.pauses = self.pauses, []
        return taken

    def close(self) -> None:
        gc.callbacks.remove(self._callback)


class FsyncWatch:
    """How long each ``os.fsync`` of this process took (the store's journal and files),
    to tell a disk that stalls from a writer that falls behind; the checkpoint process's
    own are not seen. A time includes the calling thread's wait for the interpreter after
    the call (up to a switch interval, 5 ms, while the game thread runs): read it for
    stalls of tens of milliseconds and more, not for a fast disk's usual fsync."""

    def __init__(self) -> None:
        self.samples: deque[int] = deque()
        self._fsync = os.fsync

        def fsync(fd: FileDescriptorLike) -> None:
            start = time.perf_counter_ns()
            try:
                self._fsync(fd)
            finally:
                self.samples.append(time.perf_counter_ns() - start)

        os.fsync = fsync

    def take(self) -> list[int]:
        """The times recorded since the last call (ns)."""
        return [self.samples.popleft() for _ in range(len(self.samples))]

    def close(self) -> None:
        os.fsync = self._fsync


class Durability:
    """How far the store lags behind the live world: ``plugin.storage.unsaved_seconds()`` (game
    seconds since the oldest change not yet durably written), and the snapshot rounds
    handed to the writer (``SnapshotSystem.persistence.snapshots``)."""

    def __init__(self, plugin: npc_memory.MemoryPlugin, store: Path) -> None:
        [snapshot] = [p for p in plugin.processors if isinstance(p, SnapshotSystem)]
        self.plugin = plugin
        self.persistence = snapshot.persistence
        self.initial = self.handed = self.persistence.snapshots
        self.late_ticks = 0
        """Ticks after which the writer's round was late (``StoreWriter.late``), since
        the last :meth:`take_late`."""

    def after_tick(self) -> float:
        """The age of the oldest unsaved change after a tick."""
        self.handed = self.persistence.snapshots
        writer = self.persistence.writer
        if writer is not None and writer.late:
            self.late_ticks += 1
        return self.stale()

    def take_late(self) -> int:
        late, self.late_ticks = self.late_ticks, 0
        return late

    def stale(self) -> float:
        return self.plugin.storage.unsaved_seconds()


@dataclass
class Census:
    npcs: int
    players: int
    memories: int
    facts: int
    relationships: int


def census(plugin: npc_memory.MemoryPlugin, npcs: Sequence[str], players: Sequence[str]) -> Census:
    memories = facts = relationships = 0
    for key in npcs:
        handle = plugin.npc(key)
        memories += handle.bank.count()
        facts += len(handle.knowledge.facts)
        relationships += len(handle.relationships.by_player)
    return Census(len(plugin.npcs()), len(plugin.players()), memories, facts, relationships)


def digest(plugin: npc_memory.MemoryPlugin, npcs: Sequence[str], players: Sequence[str]) -> str:
    """A hash of every NPC's memories, relationships, working memory and knowledge and every
    player's profile (msgspec's JSON of the components)."""
    h = hashlib.blake2b(digest_size=16)
    encode = msgspec.json.encode
    for key in npcs:
        npc = plugin.npc(key)
        h.update(encode((key, npc.bank, npc.relationships, npc.working, npc.knowledge)))
    for key in players:
        h.update(encode((key, plugin.player(key).profile)))
    return h.hexdigest()


def summarise_ns(samples: Sequence[int], scale: float) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(percentile(ordered, 50) / scale, 3),
        "p99": round(percentile(ordered, 99) / scale, 3),
        "max": round((ordered[-1] if ordered else 0) / scale, 3),
        "n": len(ordered),
    }


# ---------------------------------------------------------------------------- running


@contextmanager
def world(name: str) -> Iterator[None]:
    previous = esper.current_world
    esper.switch_world(name)
    try:
        yield
    finally:
        esper.switch_world(previous)


def populate(plugin: npc_memory.MemoryPlugin, load: Load) -> None:
    for npc in load.npcs:
        plugin.add_npc(key=npc.key, name=npc.name, archetype=npc.archetype, room=npc.room)
    for player in load.players:
        plugin.add_player(key=player.key, name=player.name, faction=player.faction, room=player.room)


def with_caps(pack: npc_memory.Pack, config: Config) -> npc_memory.Pack:
    """``pack`` with the caps ``config`` sets (to show the plateau inside a short run)."""
    if config.fact_cap is None and config.memory_cap is None and config.player_cap is None:
        return pack
    data = pack.model_dump()
    if config.fact_cap is not None:
        data["knowledge"]["cap"] = config.fact_cap
    if config.memory_cap is not None:
        data["memory"]["memories_per_npc"] = config.memory_cap
    if config.player_cap is not None:
        data["memory"]["players_per_npc"] = config.player_cap
    return validate_pack(data)


def run(config: Config, store: Path | None = None, *, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the benchmark; returns everything measured (what ``--json`` writes)."""
    if config.mix not in MIXES:
        raise ValueError(f"mix must be one of {', '.join(MIXES)}, got {config.mix!r}")
    temporary = store is None
    path = Path(tempfile.mkdtemp(prefix="npc-scale-")) / "world.db" if store is None else store
    pack = with_caps(npc_memory.load_pack("village"), config)
    load = Load(config, pack)
    npc_keys = [n.key for n in load.npcs]
    player_keys = [p.key for p in load.players]
    try:
        started = time.perf_counter()
        loaded = path.exists()
        plugin = npc_memory.install(world=WORLD, pack=pack, store=path, seed=config.seed, time_scale=TIME_SCALE)
        populate(plugin, load)
        plugin.save()
        if config.collector == "auto":
            gc.collect()
            gc.freeze()
        setup_s = time.perf_counter() - started
        out(f"{config.mix}: {config.npcs} NPCs in {config.room_count} rooms, {config.players} players, "
            f"{config.ticks} ticks (seed {config.seed}); store {path} ({'loaded' if loaded else 'new'}); "
            f"set-up {setup_s:.1f} s (not timed)")
        result: dict[str, Any] = {
            "config": {**asdict(config), "rooms": config.room_count, "time_scale": TIME_SCALE, "dt": DT,
                       "snapshot_interval": plugin.pack.budgets.snapshot_interval},
            "machine": machine(),
            "store": str(path), "store_loaded": loaded, "setup_s": round(setup_s, 2),
        }
        with world(WORLD):
            result.update(measure(plugin, load, config, path, npc_keys, player_keys, out))
        result.update(reload(plugin, config, pack, path, npc_keys, player_keys, out))
        return result
    finally:
        for name in (WORLD, RELOAD_WORLD):
            with suppress(npc_memory.NotInstalledError):
                npc_memory.uninstall(name)
            if name in esper.list_worlds() and esper.current_world != name:
                esper.delete_world(name)
        if temporary:
            shutil.rmtree(path.parent, ignore_errors=True)


def measure(
    plugin: npc_memory.MemoryPlugin, load: Load, config: Config, path: Path,
    npc_keys: Sequence[str], player_keys: Sequence[str], out: Callable[[str], None],
) -> dict[str, Any]:
    systems = SystemTimer(plugin.processors)
    durability = Durability(plugin, path)
    interval = plugin.pack.budgets.snapshot_interval
    facade: dict[str, list[int]] = {kind: [] for kind in FACADE_KINDS}
    methods = {kind: getattr(plugin, kind) for kind in FACADE_KINDS}
    clock = time.perf_counter_ns
    windows: list[dict[str, Any]] = []
    ticks: list[int] = []
    host: list[int] = []
    stale_max = 0.0
    first: dict[str, Any] = {}
    out(header(list(systems.samples)))
    gc_watch = GcWatch()
    fsync_watch = FsyncWatch()
    collector: npc_memory.FrameCollector | None = None
    period = 1 / config.pace if config.pace > 0 else 0.0
    late = 0
    deadline = time.perf_counter()
    try:
        if config.collector == "frames":
            collector = npc_memory.FrameCollector()
            collector.start()
        for tick in range(config.ticks + 1):
            if collector is not None:  # between frames, in the slack before the next
                collector.between_frames(deadline - time.perf_counter() if period else None)
            if period:  # a fixed-rate server loop: wait for the frame, never burst to catch up
                now = time.perf_counter()
                if now < deadline:
                    time.sleep(deadline - now)
                elif now > deadline + period:
                    late += 1
                    deadline = now
                deadline += period
            calls = load.tick()
            host_ns = 0
            for call in calls:
                method = methods[call.kind]
                start = clock()
                method(*call.args, **call.kwargs)
                elapsed = clock() - start
                facade[call.kind].append(elapsed)
                host_ns += elapsed
            start = clock()
            esper.process(DT)
            elapsed = clock() - start
            stale_max = max(stale_max, durability.after_tick())
            if tick == 0:  # cold query caches after set-up or load: reported apart
                first = {"tick_ms": round(elapsed / 1e6, 3),
                         "systems_us": {k: round(v[0] / 1e3, 1) for k, v in systems.take().items()}}
                for samples in facade.values():
                    samples.clear()
                gc_watch.take()
                fsync_watch.take()
                stale_max = 0.0
                durability.take_late()
                continue
            ticks.append(elapsed)
            host.append(host_ns)
            if tick % config.window == 0 or tick == config.ticks:
                held = census(plugin, npc_keys, player_keys)
                window = close_window(tick, ticks, host, systems.take(), facade, gc_watch.take(),
                                      fsync_watch.take(), held, durability, stale_max, late)
                window["extraction_backlog"] = len(plugin.extraction.pending())
                window["game_time_s"] = round(plugin.clock.now, 1)
                windows.append(window)
                out(format_window(window))
                ticks, host, stale_max, late = [], [], 0.0, 0
                deadline = time.perf_counter()  # the census above is not the game's time
                for samples in facade.values():
                    samples.clear()
    finally:
        gc_watch.close()
        fsync_watch.close()
        if collector is not None:
            collector.stop()
    result = {"first_tick": first, "windows": windows, "summary": summary(windows, first, interval, plugin, out)}
    if collector is not None:
        result["frame_collector"] = {"collections": collector.collections, "forced": collector.forced,
                                     "max_pause_ms": round(collector.max_pause * 1e3, 2),
                                     "total_pause_ms": round(collector.total_pause * 1e3, 1)}
        out(f"garbage collector between frames: {collector.collections} young collections "
            f"({collector.forced} without slack), longest {collector.max_pause * 1e3:.2f} ms, "
            f"{collector.total_pause * 1e3:.0f} ms in all")
    return result


def close_window(
    tick: int, ticks: list[int], host: list[int], systems: dict[str, list[int]], facade: dict[str, list[int]],
    pauses: list[tuple[int, int]], fsyncs: list[int], held: Census, durability: Durability, stale_max: float,
    late: int,
) -> dict[str, Any]:
    return {
        "ticks": [tick - len(ticks) + 1, tick],
        "tick_ms": summarise_ns(ticks, 1e6),
        "host_ms": summarise_ns(host, 1e6),
        "systems_us": {name: summarise_ns(samples, 1e3) for name, samples in systems.items()},
        "facade_us": {kind: summarise_ns(samples, 1e3) for kind, samples in facade.items() if samples},
        "memories": held.memories,
        "facts": held.facts,
        "relationships": held.relationships,
        "rss_mb": round(rss_mb(), 1),
        "rounds_handed": durability.handed - durability.initial,
        "stale_s": round(durability.stale(), 1),
        "stale_max_s": round(stale_max, 1),
        "writer_late_ticks": durability.take_late(),
        "fsync_ms": summarise_ns(fsyncs, 1e6),
        "frames_late": late,
        "gc": {"collections": [sum(1 for g, _ in pauses if g == gen) for gen in range(3)],
               "max_pause_ms": round(max((ns for _, ns in pauses), default=0) / 1e6, 2)},
    }


SHORT = {"Clock": "clock", "Lifecycle": "life", "Extraction": "extract", "Gossip": "gossip",
         "Decay": "decay", "Consolidation": "consol", "Snapshot": "snap", "Event": "event"}


def header(systems: list[str]) -> str:
    names = " ".join(f"{SHORT.get(s, s[:7]):>11}" for s in systems)
    return (f"{'ticks':>11} | {'tick ms p50':>11} {'p99':>6} {'max':>6} | {'host ms':>7} | "
            f"{names} | {'memories':>8} {'facts':>7} {'RSS MB':>7} {'rounds':>9} {'stale s':>8} {'backlog':>7} {'gc2':>3} {'late':>4}\n"
            f"{'':>11} | {'':>25} | {'p50':>7} | {'(system µs p50/p99)':^{len(names)}} | "
            f"{'':>17} {'':>7} {'handed':>9} {'max':>8}")


def format_window(w: dict[str, Any]) -> str:
    systems = " ".join(f"{s['p50']:>5.0f}/{s['p99']:<5.0f}" for s in w["systems_us"].values())
    t = w["tick_ms"]
    rounds = f"{w['rounds_handed']}"
    return (f"{w['ticks'][0]:>5}-{w['ticks'][1]:<5} | {t['p50']:>11.3f} {t['p99']:>6.2f} {t['max']:>6.2f} | "
            f"{w['host_ms']['p50']:>7.2f} | {systems} | {w['memories']:>8} {w['facts']:>7} {w['rss_mb']:>7.0f} "
            f"{rounds:>9} {w['stale_max_s']:>8.0f} {w['extraction_backlog']:>7} {w['gc']['collections'][2]:>3} {w['frames_late']:>4}")


def summary(
    windows: list[dict[str, Any]], first: dict[str, Any], interval: float,
    plugin: npc_memory.MemoryPlugin, out: Callable[[str], None],
) -> dict[str, Any]:
    if not windows:
        return {}
    worst = max(windows, key=lambda w: w["tick_ms"]["p99"])
    base_p50 = windows[0]["tick_ms"]["p50"]
    p50_ratio = max(w["tick_ms"]["p50"] for w in windows) / base_p50 if base_p50 else 0.0
    warm = windows[1] if len(windows) > 1 else windows[0]
    system_worst = {
        name: max(w["systems_us"][name]["p99"] for w in windows) for name in windows[0]["systems_us"]
    }
    facade_all: dict[str, dict[str, float]] = {}
    for kind in FACADE_KINDS:
        rows = [w["facade_us"][kind] for w in windows if kind in w["facade_us"]]
        if rows:
            facade_all[kind] = {
                "calls": sum(r["n"] for r in rows),
                "p50_median": sorted(r["p50"] for r in rows)[len(rows) // 2],
                "p99_worst": max(r["p99"] for r in rows),
                "max": max(r["max"] for r in rows),
            }
    result = {
        "first_window": windows[0]["tick_ms"], "worst_window": {"ticks": worst["ticks"], **worst["tick_ms"]},
        "last_window": windows[-1]["tick_ms"],
        "max_tick_ms": max(w["tick_ms"]["max"] for w in windows),
        "p50_worst_over_first": round(p50_ratio, 2),
        "system_p99_worst_us": system_worst,
        "rss_mb": {"first": windows[0]["rss_mb"], "after_warmup": warm["rss_mb"], "last": windows[-1]["rss_mb"]},
        "rounds": {"handed": windows[-1]["rounds_handed"]},
        "stale_max_s": max(w["stale_max_s"] for w in windows),
        "stale_limit_s": 2 * interval,
        "fsync_max_ms": max(w["fsync_ms"]["max"] for w in windows),
        "writer_late_ticks": sum(w["writer_late_ticks"] for w in windows),
        "memories": [windows[0]["memories"], windows[-1]["memories"]],
        "facts": [windows[0]["facts"], windows[-1]["facts"]],
        "extraction": {"queued": plugin.extraction.stats.queued, "applied": plugin.extraction.stats.applied,
                       "fallbacks": dict(plugin.extraction.stats.fallbacks)},
        "facade_us": facade_all,
    }
    out("")
    out(f"first tick (cold caches): {first.get('tick_ms')} ms")
    out(f"plugin tick ms: first window p50 {windows[0]['tick_ms']['p50']:.3f} p99 {windows[0]['tick_ms']['p99']:.2f}; "
        f"worst window {worst['ticks'][0]}-{worst['ticks'][1]} p50 {worst['tick_ms']['p50']:.3f} "
        f"p99 {worst['tick_ms']['p99']:.2f} max {worst['tick_ms']['max']:.2f}; last window p50 "
        f"{windows[-1]['tick_ms']['p50']:.3f} p99 {windows[-1]['tick_ms']['p99']:.2f}; max of all {result['max_tick_ms']:.2f}")
    out(f"worst window p50 / first window p50: {p50_ratio:.2f}")
    out("worst p99 per system (µs): " + ", ".join(f"{k} {v:.0f}" for k, v in system_worst.items()))
    out(f"RSS MB: {windows[0]['rss_mb']:.0f} (first window) -> {warm['rss_mb']:.0f} (second) -> {windows[-1]['rss_mb']:.0f} (last)")
    out(f"snapshot rounds: {result['rounds']['handed']}; oldest unsaved change at any tick: "
        f"{result['stale_max_s']:.0f} game s (2 intervals = {2 * interval:.0f} s)")
    slowest = max(windows, key=lambda w: w["fsync_ms"]["max"])
    out(f"fsyncs: {sum(w['fsync_ms']['n'] for w in windows)}, slowest {slowest['fsync_ms']['max']:.1f} ms "
        f"(ticks {slowest['ticks'][0]}-{slowest['ticks'][1]}); writer's round late after "
        f"{sum(w['writer_late_ticks'] for w in windows)} of {sum(w['tick_ms']['n'] for w in windows)} ticks")
    out(f"memories {result['memories'][0]} -> {result['memories'][1]}, facts {result['facts'][0]} -> {result['facts'][1]}; "
        f"extraction queued {plugin.extraction.stats.queued}, applied {plugin.extraction.stats.applied}")
    if facade_all:
        out("facade calls (µs): " + "; ".join(
            f"{k} {v['calls']:.0f}× p50 {v['p50_median']:.0f} p99≤{v['p99_worst']:.0f} max {v['max']:.0f}"
            for k, v in facade_all.items()))
    return result


def reload(
    plugin: npc_memory.MemoryPlugin, config: Config, pack: npc_memory.Pack, path: Path,
    npc_keys: Sequence[str], player_keys: Sequence[str], out: Callable[[str], None],
) -> dict[str, Any]:
    started = time.perf_counter()
    plugin.save()
    save_ms = (time.perf_counter() - started) * 1e3
    before, before_digest = census(plugin, npc_keys, player_keys), digest(plugin, npc_keys, player_keys)
    npc_memory.uninstall(WORLD)
    if esper.current_world == WORLD:
        esper.switch_world("default")
    esper.delete_world(WORLD)
    gc.collect()
    started = time.perf_counter()
    again = npc_memory.install(world=RELOAD_WORLD, pack=pack, store=path, seed=config.seed, time_scale=TIME_SCALE)
    install_ms = (time.perf_counter() - started) * 1e3
    started = time.perf_counter()
    for key in npc_keys:
        again.add_npc(key=key)
    for key in player_keys:
        again.add_player(key=key)
    add_ms = (time.perf_counter() - started) * 1e3
    after, after_digest = census(again, npc_keys, player_keys), digest(again, npc_keys, player_keys)
    with world(RELOAD_WORLD):
        started = time.perf_counter()
        esper.process(DT)
        first_ms = (time.perf_counter() - started) * 1e3
    differing = {k: [v, getattr(after, k)] for k, v in asdict(before).items() if getattr(after, k) != v}
    identical = not differing and before_digest == after_digest
    out(f"save {save_ms:.0f} ms; reload: install {install_ms:.0f} ms + add the keys {add_ms:.0f} ms; "
        f"first tick after load {first_ms:.1f} ms")
    out(f"counts: {asdict(before)}; digest {before_digest}")
    out(f"reload identical: {'yes' if identical else 'no'}"
        + ("" if identical else f" (differing counts: {differing or 'none'}; component digest "
           f"{'same' if before_digest == after_digest else 'differs'})"))
    return {"end": {"save_ms": round(save_ms, 1), "reload_install_ms": round(install_ms, 1),
                    "reload_add_ms": round(add_ms, 1), "first_tick_after_load_ms": round(first_ms, 2),
                    "counts": asdict(before), "counts_after_reload": asdict(after),
                    "digest": before_digest, "digest_same": before_digest == after_digest,
                    "reload_identical": identical}}


def machine() -> dict[str, Any]:
    return {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "platform": platform.platform(), "cpus": os.cpu_count(), "processor": platform.processor(),
            "esper": getattr(esper, "__version__", "?"), "msgspec": msgspec.__version__}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--npcs", type=int, default=1000)
    parser.add_argument("--players", type=int, default=100)
    parser.add_argument("--ticks", type=int, default=1000)
    parser.add_argument("--mix", choices=list(MIXES), default="busy")
    parser.add_argument("--quiet-world", action="store_true", help="the same as --mix quiet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rooms", type=int, default=None, help="default: 50 up to 1,000 NPCs, else 100")
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--pace", type=float, default=60.0,
                        help="ticks per real second, like a server loop (default 60); 0: back to back")
    parser.add_argument("--store", type=Path, default=None, help="store directory to use and keep (loaded if it exists)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this file")
    parser.add_argument("--fact-cap", type=int, default=None, help="facts per NPC (default: the pack's, 500)")
    parser.add_argument("--memory-cap", type=int, default=None, help="memories per NPC (default: the pack's, 2,000)")
    parser.add_argument("--player-cap", type=int, default=None, help="players per NPC (default: the pack's, 200)")
    parser.add_argument("--collector", choices=["frames", "auto", "none"], default="frames",
                        help="frames: npc_memory.FrameCollector between frames (default); auto: CPython's "
                             "collector after freezing the set-up; none: CPython's collector, nothing frozen")
    args = parser.parse_args(argv)
    if min(args.npcs, args.players, args.ticks, args.window) < 1 or args.pace < 0:
        parser.error("--npcs, --players, --ticks and --window must be positive, --pace not negative")
    config = Config(npcs=args.npcs, players=args.players, ticks=args.ticks,
                    mix="quiet" if args.quiet_world else args.mix, seed=args.seed, rooms=args.rooms,
                    window=args.window, pace=args.pace, fact_cap=args.fact_cap, memory_cap=args.memory_cap,
                    player_cap=args.player_cap, collector=args.collector)
    result = run(config, args.store)
    result["command"] = " ".join(["python", "benchmarks/scale.py", *(sys.argv[1:] if argv is None else argv)])
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["end"]["reload_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
