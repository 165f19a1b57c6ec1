"""A headless town at scale: hundreds or thousands of NPCs keep daily schedules across
districts, and players with distinct play styles live among them for weeks.

The town has districts of about a hundred NPCs each. Every district has a forge, an
inn, a market, a gate, a barracks, fields, a temple and docks, and its NPCs share
homes four to a house. NPCs sleep at home, work from 7 to 18 (innkeepers and bards
from noon to midnight), spend the evening at the inn if they are sociable and go to
the temple on the seventh morning of each week; they move only when their schedule
says so. Players keep to their district's public rooms by day, now and then cross
to another district, and act by their play style:

- helpers carry loads, drive off bandits in public and give gifts;
- traders trade with a regular merchant every morning, so habits form;
- thieves steal and threaten in public, so rumours travel and reputations fall;
- newcomers arrive over the first days and mostly ask their way around — small things
  the town soon forgets.

Evenings bring conversations that the offline extractor turns into memories. The
town's content pack is the village pack with budgets sized for its population, so
gossip, decay and consolidation keep up with the town; runs are deterministic
(``install(deterministic=True)``: count caps only) and offline.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from npc_memory.content import Pack, load_pack
from npc_memory.demo.deeds import Deed, Witnessed, act, chat
from npc_memory.demo.simulation import DemoResult, Progress, run
from npc_memory.errors import InvalidArgumentError
from npc_memory.plugin import MemoryPlugin

DISTRICT_SIZE = 100
HOUSE_SIZE = 4
PUBLIC_ROOMS = ("market", "inn", "forge", "gate", "temple", "fields", "docks")
DISTRICT_NAMES = (
    "Northgate", "Riverside", "Hillcrest", "Old Town", "Eastmarch",
    "Millbrook", "Southwark", "Ashfield", "Harbour", "Westwood",
)

ARCHETYPES: tuple[tuple[str, str, int], ...] = (
    # archetype, workplace, NPCs per hundred
    ("farmer", "fields", 34),
    ("merchant", "market", 16),
    ("guard", "gate", 10),
    ("innkeeper", "inn", 8),
    ("blacksmith", "forge", 8),
    ("healer", "temple", 6),
    ("priest", "temple", 4),
    ("bard", "inn", 6),
    ("fence", "docks", 6),
    ("guard_captain", "barracks", 2),
)
WORKPLACE = {archetype: room for archetype, room, _ in ARCHETYPES}
ROSTER = tuple(archetype for archetype, _, share in ARCHETYPES for _ in range(share))
"""A hundred archetypes in a fixed order; NPC ``i`` has ``ROSTER[i % 100]``."""

FIRST_NAMES = (
    "Ada", "Bren", "Cass", "Dov", "Elin", "Finn", "Greta", "Hale", "Ilse", "Jory", "Kara", "Lars",
    "Mira", "Nils", "Orla", "Piet", "Quin", "Rhea", "Sten", "Tova", "Ulla", "Vern", "Wyn", "Yara",
    "Aldo", "Berit", "Cato", "Dagny", "Eske", "Frida", "Gunn", "Hedda", "Ivo", "Jonna", "Knut", "Liv",
    "Magne", "Nora", "Odd", "Pella",
)
SURNAMES = (
    "Ashdown", "Brook", "Carter", "Dunmore", "Ellery", "Fenwick", "Garrow", "Holt", "Irons", "Jessop",
    "Kettle", "Lowe", "Marsh", "Northam", "Oakes", "Penrose", "Quarry", "Reed", "Stoke", "Thorne",
    "Underhill", "Vance", "Wick", "Yardley", "Amberley", "Blackwood", "Colby", "Darrow", "Eastleigh",
    "Fairburn",
)
PLAYER_NAMES = (
    "Alba",
    "Bastian",
    "Corin",
    "Delphine",
    "Emeric",
    "Fiora",
    "Gideon",
    "Hesper",
    "Isolde",
    "Jasper",
    "Kestrel",
    "Lucan",
    "Maren",
    "Nerys",
    "Osric",
    "Petra",
    "Rowan",
    "Sable",
    "Tamsin",
    "Ulric",
    "Vesna",
    "Wilder",
    "Xanthe",
    "Yorick",
    "Zora",
)

EPITHETS = ("Bold", "Quiet", "Tall", "Younger", "Red", "Lucky", "Grey", "Swift")

STYLES = ("helper", "trader", "thief", "newcomer")
STYLE_FACTION = {
    "helper": "adventurers",
    "trader": "merchants",
    "thief": "thieves",
    "newcomer": "adventurers",
}

DEEDS: dict[str, tuple[Deed, ...]] = {
    "helper": (
        Deed(3, "{player} helped {npc} carry supplies", ("helpful",), 0.4, "positive", 0.3),
        Deed(
            1,
            "{player} drove off bandits threatening {npc}",
            ("heroic", "combat"),
            0.8,
            "positive",
            0.8,
            "{player} drove off bandits threatening {npc}",
        ),
        Deed(1, "{player} gave {npc} a share of the loot", ("gift",), 0.5, "positive", 0.5),
        Deed(1, "{player} asked {npc} about the weather", ("smalltalk",), 0.07, "neutral", 0.0),
    ),
    "trader": (
        Deed(3, "{player} traded fairly with {npc}", ("trade",), 0.4, "positive", 0.2),
        Deed(1, "{player} brought {npc} news and a small gift", ("gift",), 0.4, "positive", 0.3),
        Deed(1, "{player} haggled {npc} down to a fair price", ("trade",), 0.3, "neutral", 0.1),
    ),
    "thief": (
        Deed(3, "{player} stole from {npc}", ("theft",), 0.7, "negative", 0.7, "{player} stole from {npc}"),
        Deed(1, "{player} threatened {npc}", ("threat",), 0.6, "negative", 0.8, "{player} threatened {npc}"),
        Deed(1, "{player} mocked {npc}", ("insult",), 0.3, "negative", 0.3),
        Deed(1, "{player} sold {npc} goods at a fair price", ("trade",), 0.3, "neutral", 0.1),
    ),
    "newcomer": (
        Deed(4, "{player} asked {npc} the way to the market", ("directions",), 0.07, "neutral", 0.0),
        Deed(1, "{player} bought a loaf from {npc}", ("trade",), 0.3, "neutral", 0.1),
        Deed(1, "{player} lent {npc} a hand", ("helpful",), 0.4, "positive", 0.3),
    ),
}
MORNING_TRADE = Deed(1, "{player} came by to trade with {npc}", ("trade",), 0.4, "positive", 0.2)
"""What a trader does with their regular merchant each morning (a habit in the making)."""

CHATS: dict[str, tuple[str, ...]] = {
    "helper": (
        "If the bandits come back, send for me. I'll protect the town.",
        "Let me help you carry those sacks.",
        "Take this, it's for you: a wolf pelt for the winter.",
        "Lovely evening, isn't it?",
    ),
    "trader": (
        "How much for a sack of grain? I'll pay twelve silver.",
        "I brought you spices from the coast, a gift for you.",
        "Good evening to you.",
    ),
    "thief": (
        "Nice purse you've got. Be a shame if it went missing.",
        "Keep this between us: the watch sleeps at the gate after midnight.",
        "Evening. Quiet night.",
    ),
    "newcomer": (
        "I'm new here. I grew up in Rivermoor.",
        "Where can I find the temple?",
        "Good evening.",
    ),
}


def npc_name(index: int) -> str:
    """NPC ``index``'s name: a house shares a surname, and the first 1,200 names differ."""
    house, member = divmod(index, HOUSE_SIZE)
    surname = house % len(SURNAMES)
    first = (member + HOUSE_SIZE * (house // len(SURNAMES)) + 13 * surname) % len(FIRST_NAMES)
    return f"{FIRST_NAMES[first]} {SURNAMES[surname]}"


def room_name(district: int, place: str) -> str:
    """A room's name: the district's, then the place (``"Riverside market"``)."""
    name = DISTRICT_NAMES[district % len(DISTRICT_NAMES)]
    if district >= len(DISTRICT_NAMES):
        name += f" {district // len(DISTRICT_NAMES) + 1}"
    return f"{name} {place}"


@dataclass
class Resident:
    """An NPC's place in the town: district, home, workplace."""

    key: str
    district: int
    home: str
    work: str
    sociability: float
    late_shift: bool


@dataclass
class Visitor:
    """A player: play style, home district, arrival day, regular merchant if a trader."""

    key: str
    style: str
    district: int
    arrives: int
    regular: str | None = None


class Town:
    """A town of ``npcs`` NPCs in districts of about a hundred, and ``players`` players."""

    name = "town"

    def __init__(self, npcs: int = 1000, players: int = 50, act_chance: float = 0.35) -> None:
        if npcs < 10:
            raise InvalidArgumentError(f"npcs: a town needs at least 10 NPCs, got {npcs}")
        if players < 1:
            raise InvalidArgumentError(f"players: a town needs at least 1 player, got {players}")
        self.npc_count, self.player_count, self.act_chance = npcs, players, act_chance
        self.districts = max(1, npcs // DISTRICT_SIZE)
        self.residents: list[Resident] = []
        self.visitors: list[Visitor] = []
        self.present: dict[str, list[str]] = {}
        """room → NPC keys in it, kept by the schedule (the town's own index)."""
        self.where: dict[str, str] = {}

    def pack(self, pack: str | Pack) -> str | Pack:
        loaded = pack if isinstance(pack, Pack) else load_pack(pack)
        budgets = loaded.budgets.model_copy(
            update={
                "gossip_exchanges_per_tick": max(
                    loaded.budgets.gossip_exchanges_per_tick, self.npc_count // 8
                ),
                "decay_pairs_per_tick": max(loaded.budgets.decay_pairs_per_tick, self.npc_count),
                "consolidation_pairs_per_tick": max(
                    loaded.budgets.consolidation_pairs_per_tick, self.npc_count
                ),
                "extraction_apply_per_tick": max(loaded.budgets.extraction_apply_per_tick, self.player_count),
                "extraction_dispatch_per_tick": max(
                    loaded.budgets.extraction_dispatch_per_tick, self.player_count
                ),
            }
        )
        return loaded.model_copy(update={"budgets": budgets})

    def headline(self) -> str:
        return (
            f"npc-memory demo: town, {self.npc_count} NPCs in {self.districts} "
            f"district{'s' if self.districts != 1 else ''}, {self.player_count} players"
        )

    def styles(self) -> dict[str, str]:
        return {f"p{i:03d}": STYLES[i % len(STYLES)] for i in range(self.player_count)}

    def populate(self, plugin: MemoryPlugin, resumed: bool) -> None:
        for i in range(self.npc_count):
            district = min(i // DISTRICT_SIZE, self.districts - 1)
            archetype = ROSTER[i % len(ROSTER)]
            key = f"n{i:04d}"
            name = npc_name(i)
            home = room_name(district, f"house {i % DISTRICT_SIZE // HOUSE_SIZE + 1}")
            plugin.add_npc(key=key, name=name, archetype=archetype, room=home)
            self.residents.append(
                Resident(
                    key,
                    district,
                    home,
                    room_name(district, WORKPLACE[archetype]),
                    plugin.npc(key).traits.sociability,
                    archetype in ("innkeeper", "bard"),
                )
            )
            self._place(key, home)
        merchants = [r for r in self.residents if r.work == room_name(r.district, "market")]
        for i, (key, style) in enumerate(self.styles().items()):
            district = i % self.districts
            name = PLAYER_NAMES[i % len(PLAYER_NAMES)]
            if i >= len(PLAYER_NAMES):
                name += f" the {EPITHETS[(i // len(PLAYER_NAMES) - 1 + i) % len(EPITHETS)]}"
            arrives = 1 + (i // len(STYLES)) % 5 if style == "newcomer" else 1
            local = [m.key for m in merchants if m.district == district] or [m.key for m in merchants]
            regular = local[i % len(local)] if style == "trader" and local else None
            self.visitors.append(Visitor(key, style, district, arrives, regular))
            plugin.add_player(key=key, name=name, faction=STYLE_FACTION[style], consent=True)

    def _place(self, npc: str, room: str) -> None:
        old = self.where.get(npc)
        if old == room:
            return
        if old is not None:
            self.present[old].remove(npc)
        self.present.setdefault(room, []).append(npc)
        self.where[npc] = room

    def _schedule(self, plugin: MemoryPlugin, hour: int, day: int) -> None:
        """Move the NPCs whose schedule changes at this hour (and only those)."""
        if hour not in (0, 7, 9, 12, 18, 22):
            return
        rng = plugin.rng
        rest_day = day % 7 == 0
        for resident in self.residents:
            room = self._room_at(resident, hour, rest_day, rng.random())
            if room is not None and room != self.where[resident.key]:
                self._place(resident.key, room)
                plugin.move(resident.key, room)

    def _room_at(self, resident: Resident, hour: int, rest_day: bool, roll: float) -> str | None:
        district = resident.district
        if resident.late_shift:
            return {0: resident.home, 12: resident.work}.get(hour)
        if rest_day and hour == 9:
            return room_name(district, "temple") if roll < 0.6 else None
        if hour in (7, 9) and not rest_day:
            return resident.work
        if hour == 12 and rest_day:
            return resident.home
        if hour == 18:
            return room_name(district, "inn") if roll < resident.sociability else resident.home
        if hour == 22:
            return resident.home
        return None

    def hour(self, plugin: MemoryPlugin, hour: int, witnessed: Callable[[Witnessed], None]) -> None:
        day = int(plugin.clock.day) + 1
        self._schedule(plugin, hour, day)
        if not 8 <= hour < 22:
            return
        rng = plugin.rng
        for visitor in self.visitors:
            if day < visitor.arrives:
                continue
            if hour == 9 and visitor.regular is not None:
                self._morning_trade(plugin, visitor)
                continue
            if hour >= 18:
                plugin.move(visitor.key, room_name(visitor.district, "inn"))  # evenings are spent at the inn
            elif rng.random() < 0.5:
                district = visitor.district if rng.random() < 0.85 else rng.randrange(self.districts)
                plugin.move(visitor.key, room_name(district, rng.choice(PUBLIC_ROOMS)))
            room = plugin.player(visitor.key).location.room
            present = self.present.get(room or "", [])
            if room is None or not present:
                continue
            if hour == 20:
                if rng.random() < 0.5:
                    chat(plugin, rng.choice(present), visitor.key, rng.choice(CHATS[visitor.style]))
                continue
            if rng.random() >= self.act_chance:
                continue
            deeds = DEEDS[visitor.style]
            deed = rng.choices(deeds, weights=[d.weight for d in deeds])[0]
            seen = act(plugin, rng.choice(present), visitor.key, room, deed)
            if seen is not None:
                witnessed(seen)

    def _morning_trade(self, plugin: MemoryPlugin, visitor: Visitor) -> None:
        assert visitor.regular is not None
        room = self.where[visitor.regular]
        plugin.move(visitor.key, room)
        if plugin.rng.random() < 0.8:
            act(plugin, visitor.regular, visitor.key, room, MORNING_TRADE)


def run_town(
    days: int = 30,
    seed: int = 7,
    npcs: int = 1000,
    players: int = 50,
    pack: str | Pack = "village",
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = False,
    world: str = "npc-memory-town",
    act_chance: float = 0.35,
    keep_installed: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Simulate ``days`` game days of a town of ``npcs`` NPCs and ``players`` players and
    return its story; the same ``seed`` gives the same town. ``store``, ``resume`` and
    ``keep_installed`` work as for :func:`~npc_memory.demo.run_village` (resuming needs
    the same ``npcs`` and ``players``)."""
    return run(
        Town(npcs, players, act_chance),
        days,
        seed,
        pack,
        store=store,
        resume=resume,
        world=world,
        keep_installed=keep_installed,
        progress=progress,
    )
