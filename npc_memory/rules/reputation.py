"""A player's standing with a faction: the average disposition of the faction's NPCs
towards them, kept incrementally so a relationship change costs O(1)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class FactionStanding:
    """Running sums of dispositions per (faction, player) over the faction's NPCs in the
    world. An NPC without a relationship with the player counts with the faction's
    starting disposition for that player's faction. ``bands`` split [-1, 1] into
    ``len(bands) + 1`` bands (band 0 is the lowest)."""

    bands: list[float]
    members: dict[str, int] = field(default_factory=dict)
    sums: dict[tuple[str, str], float] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    current: dict[tuple[str, str], int] = field(default_factory=dict)

    def band(self, average: float) -> int:
        """The band of an average disposition."""
        return bisect.bisect_right(self.bands, average)

    def average(self, faction: str, player: str, initial: float) -> float:
        """The faction's average disposition towards ``player``."""
        members = self.members.get(faction, 0)
        if not members:
            return initial
        key = (faction, player)
        known = self.counts.get(key, 0)
        return (self.sums.get(key, 0.0) + (members - known) * initial) / members

    def join(self, faction: str, dispositions: dict[str, float]) -> None:
        """An NPC of ``faction`` entered the world with these relationships (by player)."""
        self.members[faction] = self.members.get(faction, 0) + 1
        for player, disposition in dispositions.items():
            self._add(faction, player, disposition, 1)

    def leave(self, faction: str, dispositions: dict[str, float]) -> None:
        """An NPC of ``faction`` left the world."""
        self.members[faction] = max(0, self.members.get(faction, 0) - 1)
        for player, disposition in dispositions.items():
            self._add(faction, player, -disposition, -1)

    def forget_player(self, player: str) -> None:
        """Drop every sum, count and band kept for ``player`` (it is forgotten)."""
        for table in (self.sums, self.counts, self.current):
            for key in [k for k in table if k[1] == player]:
                del table[key]

    def leave_pair(self, faction: str, player: str, disposition: float) -> None:
        """A member of ``faction`` dropped its relationship with ``player``: it counts
        with the starting disposition again."""
        self._add(faction, player, -disposition, -1)

    def update(
        self, faction: str, player: str, old: float | None, new: float, initial: float
    ) -> tuple[int, int, float] | None:
        """An NPC's disposition towards ``player`` went from ``old`` (``None``: no
        relationship before) to ``new``. Returns (old band, new band, average) when the
        faction's standing crossed into another band, else ``None``."""
        key = (faction, player)
        before = self.current.get(key)
        if before is None:
            before = self.band(self.average(faction, player, initial))
        if old is None:
            self._add(faction, player, new, 1)
        else:
            self._add(faction, player, new - old, 0)
        average = self.average(faction, player, initial)
        after = self.band(average)
        self.current[key] = after
        return (before, after, average) if after != before else None

    def _add(self, faction: str, player: str, disposition: float, count: int) -> None:
        key = (faction, player)
        self.sums[key] = self.sums.get(key, 0.0) + disposition
        self.counts[key] = self.counts.get(key, 0) + count
