"""Consolidation: repeated experiences become general knowledge and habits.

Episodic memories of one pair, old enough and not yet consolidated, that record the
player's own deeds (not the NPC's stories, claims or hearsay) and share a tag
form a cluster; a cluster of ``consolidate_min`` or more becomes one semantic memory
summarising the pattern ("Alice is a regular customer"), importance the cluster's
maximum, confidence growing with its size, linked to its source episodes. If
``habit_min`` of them happened at the same time of day, the pattern is also a habit:
a procedural memory with that trigger, reinforced by every further cluster. The
wording of both comes from the pack (``memory.consolidation``), per tag.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components.memory import EpisodicMemory, PairMemories
from npc_memory.content.schema import ConsolidationTemplates, MemoryRules
from npc_memory.rules.knowledge import FLAGGED

DEFAULT_TEMPLATES = ConsolidationTemplates()
"""The built-in wording (what a pack without ``[memory.consolidation]`` gets)."""


def time_of_day(game_time: float) -> str:
    """morning (5–11), afternoon (12–16), evening (17–21) or night (22–4)."""
    hour = int(game_time % SECONDS_PER_DAY // 3600)
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 22:
        return "evening"
    return "night"


@dataclass(frozen=True)
class Cluster:
    """Episodes of one pair that share ``tag`` (oldest first), and the time of day most
    of them happened at if that makes a habit."""

    tag: str
    episodes: tuple[EpisodicMemory, ...]
    habit_time: str | None


def clusters(
    pair: PairMemories,
    rules: MemoryRules,
    now: float,
    exclude: frozenset[str] | set[str] = frozenset(),
    player: str | None = None,
) -> list[Cluster]:
    """Clusters ready to consolidate; each episode belongs to at most one, and episodes
    already consolidated (named by a semantic memory), in ``exclude`` or flagged by the safety
    screen are left out, as are, given the pair's ``player``, episodes that are not the
    player's own deeds (:meth:`MemoryRecord.counts_for`: the NPC's stories, someone else's
    deeds, claims, hearsay)."""
    done = {episode for semantic in pair.semantic for episode in semantic.source_episodes} | set(exclude)
    old_enough = now - rules.consolidate_after_days * SECONDS_PER_DAY
    eligible = [  # a flagged utterance is kept as said, never generalised into knowledge
        m
        for m in pair.episodic
        if m.created <= old_enough
        and m.id not in done
        and FLAGGED not in m.tags
        and (player is None or m.counts_for(player))
    ]
    counts = Counter(tag for m in eligible for tag in m.tags)
    found: list[Cluster] = []
    used: set[str] = set()
    for tag, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        members = tuple(m for m in eligible if tag in m.tags and m.id not in used)
        if len(members) < rules.consolidate_min:
            continue
        used.update(m.id for m in members)
        times = Counter(time_of_day(m.created) for m in members).most_common(1)
        habit = times[0][0] if times and times[0][1] >= rules.habit_min else None
        found.append(Cluster(tag=tag, episodes=members, habit_time=habit))
    return found


def summary(cluster: Cluster, player_name: str, templates: ConsolidationTemplates = DEFAULT_TEMPLATES) -> str:
    """The rule-based summary of a cluster's pattern, worded by ``templates`` (a pack's
    ``memory.consolidation``): the tag's template, or the fallback for a tag without one."""
    template = templates.summary_template(cluster.tag)
    return template.format(player=player_name, tag=cluster.tag) + templates.times_suffix.format(
        count=len(cluster.episodes)
    )


def habit(
    cluster: Cluster, player_name: str, templates: ConsolidationTemplates = DEFAULT_TEMPLATES
) -> str | None:
    """The habit a cluster shows, if its episodes keep to one time of day, worded by
    ``templates`` like :func:`summary`."""
    if cluster.habit_time is None:
        return None
    template = templates.habit_template(cluster.tag)
    return template.format(player=player_name, tag=cluster.tag, time=cluster.habit_time)


def confidence(cluster: Cluster) -> float:
    """More episodes, more certainty: 0.5 + 0.1 per episode, at most 0.95."""
    return min(0.95, 0.5 + 0.1 * len(cluster.episodes))
