"""Pictures of a simulation: PNG plots and one self-contained HTML page with the story.

``write_report(story, directory)`` draws, with matplotlib's Agg backend (no display
needed):

- ``relationships.png``: disposition over time of the NPC–player pairs that changed
  most, with threshold crossings and stage changes marked;
- ``reputation.png``: how each player's standing with each faction moved since the
  first day, coloured by play style;
- ``gossip.png``: the rumour of the deed that travelled farthest, hop by hop — who
  told whom, with the confidence passed on;
- ``memories.png``: memories held by kind over time, and those forgotten and
  consolidated each day;
- ``ticks.png``: what each of the plugin's systems spent per tick, per game day.

``index.html`` shows them (embedded, so the page stands alone; the PNGs are beside
it too) with the story.
"""

from __future__ import annotations

import base64
import html
import os
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.demo.story import Story
from npc_memory.errors import NpcMemoryError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STYLE_COLOURS = {
    "helper": "#2a9d4b",
    "hero": "#2a9d4b",
    "trader": "#2b6cb0",
    "thief": "#c53030",
    "newcomer": "#8a8a8a",
}
KIND_COLOURS = {"episodic": "#4c78a8", "semantic": "#f58518", "procedural": "#54a24b"}
STAGE_LINES = (-0.7, -0.3, 0.3, 0.5, 0.7)
PAIRS_SHOWN = 6
EDGE_LABELS_UP_TO = 40
"""A gossip graph with at most this many tellings labels each with its confidence."""
DPI = 100


class ReportError(NpcMemoryError):
    """The report cannot be written (the plotting library is missing, or the directory
    cannot be used)."""


def check_plotting() -> None:
    """Raise :class:`ReportError` unless matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ReportError(
            "the report needs matplotlib: pip install 'esper-npc-memory[demo]' (or pass --no-report)"
        ) from exc


PICTURES: tuple[tuple[str, str, str], ...] = (
    (
        "relationships.png",
        "Relationships that changed most",
        "Each line is how one NPC regards one player (disposition, from -1 hostile to +1 devoted) "
        "over the game days. Dots mark a threshold crossed (Hostile, TrustedAlly, …), triangles a new "
        "stage; the dotted lines are the stage boundaries (rival -0.3, enemy -0.7, friend 0.3, "
        "close friend 0.5, trusted ally 0.7).",
    ),
    (
        "reputation.png",
        "Reputation per player per faction",
        "One panel per faction: each line is how one player's standing with that faction (the "
        "average disposition of its NPCs, strangers included) moved since the first day, coloured "
        "by play style. Where each line starts, the faction's attitude to the player's faction, "
        "is left out: the change is what the players did.",
    ),
    (
        "gossip.png",
        "How one deed travelled",
        "The deed whose rumour reached most NPCs. Columns are hops: those who saw it on the left, "
        "then who heard it from whom, hop by hop. Each arrow is one telling, coloured (and, in small "
        "graphs, labelled) by the confidence the listener was left with — it only falls as the "
        "rumour travels.",
    ),
    (
        "memories.png",
        "Memories held, forgotten and consolidated",
        "Top: memories held in the whole world at the end of each day, by kind (episodic: what "
        "happened; semantic: what the NPC concluded; procedural: habits). Bottom: episodes "
        "forgotten (faded or evicted) and consolidated into semantic memories each day.",
    ),
    (
        "ticks.png",
        "Time per tick, per system",
        "Milliseconds each plugin system spent per tick (one tick per game hour): top, the mean "
        "over each game day; bottom, the day's slowest tick (log scales). Simulations run with "
        "deterministic budgets, so these are the costs of the work itself, not of the per-tick time budgets.",
    ),
)


def write_report(story: Story, directory: str | os.PathLike[str]) -> Path:
    """Write the PNGs and ``index.html`` into ``directory`` (created if missing) and
    return the page's path."""
    check_plotting()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the report directory {out}: {exc}") from exc
    drawers = {
        "relationships.png": _relationships,
        "reputation.png": _reputation,
        "gossip.png": _gossip,
        "memories.png": _memories,
        "ticks.png": _ticks,
    }
    images: dict[str, bytes] = {}
    for name, draw in drawers.items():
        figure = draw(story)
        try:
            figure.savefig(out / name, dpi=DPI)
        finally:
            plt.close(figure)
        images[name] = (out / name).read_bytes()
    page = out / "index.html"
    page.write_text(_page(story, images), encoding="utf-8")
    return page


def _figure(
    rows: int = 1, cols: int = 1, size: tuple[float, float] = (10.0, 5.0), sharey: bool = False
) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False, sharey=sharey)
    return figure, axes


def _relationships(story: Story) -> Figure:
    figure, axes = _figure()
    ax = axes[0][0]
    changed = [(pair, story.trajectory(pair)) for pair in story.most_changed(PAIRS_SHOWN)]
    marks = defaultdict(list)
    for moment in story.moments:
        marks[f"{moment.npc}/{moment.player}"].append(moment)
    for pair, samples in changed:
        npc, player = pair.split("/", 1)
        days = [t + 1 for t, _ in samples]
        line = ax.plot(days, [v for _, v in samples], label=f"{story.name(npc)} → {story.name(player)}")[0]
        for moment in marks.get(pair, []):
            when = moment.time / SECONDS_PER_DAY + 1
            value = _value_at(samples, moment.time / SECONDS_PER_DAY)
            ax.plot(
                [when],
                [value],
                marker="o" if moment.kind == "threshold" else "^",
                color=line.get_color(),
                markersize=7,
                markeredgecolor="black",
            )
    for level in STAGE_LINES:
        ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("game day")
    ax.set_ylabel("disposition")
    ax.set_ylim(-1.05, 1.05)
    ax.set_title("Most changed relationships (• threshold crossed, ▲ stage changed)")
    if changed:
        ax.legend(loc="best", fontsize="small")
    return figure


def _value_at(samples: list[tuple[float, float]], day: float) -> float:
    before = [v for t, v in samples if t <= day]
    return before[-1] if before else samples[0][1]


def _reputation(story: Story) -> Figure:
    factions = sorted({f for per_player in story.reputation.values() for f in per_player})
    cols = min(4, max(1, len(factions)))
    rows = max(1, -(-len(factions) // cols))
    figure, axes = _figure(rows, cols, (12.0, 2.8 * rows + 0.6), sharey=True)
    for index, faction in enumerate(factions):
        ax = axes[index // cols][index % cols]
        for player, per_faction in sorted(story.reputation.items()):
            samples = per_faction.get(faction, [])
            if not samples:
                continue
            start = samples[0][1]
            colour = STYLE_COLOURS.get(story.styles.get(player, ""), "#444444")
            moved = [v - start for _, v in samples]
            ax.plot([t + 1 for t, _ in samples], moved, color=colour, alpha=0.6, linewidth=1)
        ax.set_title(faction, fontsize="medium")
        ax.axhline(0.0, color="grey", linewidth=0.6)
        if index % cols == 0:
            ax.set_ylabel("standing moved")
        if index // cols == rows - 1 or index + cols >= len(factions):
            ax.set_xlabel("game day")
    for index in range(len(factions), rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    from matplotlib.lines import Line2D

    styles = sorted(set(story.styles.values()))
    figure.legend(
        [Line2D([], [], color=STYLE_COLOURS.get(s, "#444444")) for s in styles],
        styles,
        loc="outside lower center",
        ncols=len(styles),
    )
    figure.suptitle("How each player's standing with each faction moved since day 1")
    return figure


def _gossip(story: Story) -> Figure:
    figure, axes = _figure(size=(12.0, 6.0))
    ax = axes[0][0]
    ax.set_axis_off()
    deed = story.farthest()
    if deed is None or not deed.hops:
        ax.text(0.5, 0.5, "No deed was passed on by gossip in this run.", ha="center", va="center")
        return figure
    tellers = {hop.teller for hop in deed.hops}
    level: dict[str, int] = {w: 0 for w in deed.witnesses if w in tellers}
    for hop in sorted(deed.hops, key=lambda h: h.time):
        level.setdefault(hop.listener, hop.hop)
    columns: dict[int, list[str]] = defaultdict(list)
    for who, depth in level.items():
        columns[depth].append(who)
    if deed.victim and deed.victim not in level:  # robbed or threatened, and kept it to themselves
        level[deed.victim] = 0
        columns[0].append(deed.victim)
    position: dict[str, tuple[float, float]] = {}
    for depth, members in columns.items():
        for row, who in enumerate(members):
            position[who] = (float(depth), -(row - (len(members) - 1) / 2))
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    scale, norm = colormaps["viridis"], Normalize(0.0, 1.0)
    label_edges = len(deed.hops) <= EDGE_LABELS_UP_TO
    for hop in deed.hops:
        if hop.teller not in position or hop.listener not in position:
            continue
        (x0, y0), (x1, y1) = position[hop.teller], position[hop.listener]
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={"arrowstyle": "->", "color": scale(norm(hop.confidence)), "linewidth": 1.2},
        )
        if label_edges:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"{hop.confidence:.2f}", fontsize=7, color="#333333")
    figure.colorbar(
        ScalarMappable(norm=norm, cmap=scale), ax=ax, shrink=0.6, label="confidence passed on"
    )
    top = max(len(members) for members in columns.values()) / 2 + 0.5
    for depth in columns:
        heading = "saw it" if depth == 0 else f"hop {depth}"
        ax.text(depth, top, heading, ha="center", va="bottom", fontsize=9, weight="bold")
    for who, (x, y) in position.items():
        colour = "#c53030" if who == deed.victim else "#f2c14e" if level[who] == 0 else "#9ecae1"
        ax.text(
            x,
            y,
            f"{story.name(who)} (victim)" if who == deed.victim else story.name(who),
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": colour, "edgecolor": "#333333"},
        )
    xs = [x for x, _ in position.values()]
    ys = [y for _, y in position.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 1, top + 1.0)  # room for the column headings under the title
    others = len(deed.witnesses) - sum(1 for w in deed.witnesses if w in position)
    ax.set_title(
        f'"{deed.content}" (day {deed.day}, {deed.room}): seen by {len(deed.witnesses)}'
        f"{f' ({others} kept it to themselves)' if others else ''}, "
        f"heard by {deed.reach} in {deed.farthest} hops",
        fontsize="medium",
        pad=12,
    )
    return figure


def _gossip_key(story: Story) -> str:
    """What the colours of the gossip graph's names mean, for this run's deed."""
    deed = story.farthest()
    if deed is None or not deed.hops:
        return ""
    victim = f" {story.name(deed.victim)}, who was wronged, is red." if deed.victim else ""
    return f"Those who saw it and passed it on are yellow, those who heard it blue.{victim}"


def _memories(story: Story) -> Figure:
    figure, axes = _figure(2, 1, (10.0, 6.5))
    top, bottom = axes[0][0], axes[1][0]
    days = [c.day for c in story.census]
    kinds = ("episodic", "semantic", "procedural")
    top.stackplot(
        days,
        *[[getattr(c, kind) for c in story.census] for kind in kinds],
        labels=kinds,
        colors=[KIND_COLOURS[k] for k in kinds],
    )
    top.set_ylabel("memories held")
    top.legend(loc="upper left", fontsize="small")
    width = 0.4
    bottom.bar(
        [d - width / 2 for d in days],
        [c.forgotten for c in story.census],
        width,
        label="forgotten",
        color="#9d9d9d",
    )
    bottom.bar(
        [d + width / 2 for d in days],
        [c.consolidated for c in story.census],
        width,
        label="consolidated",
        color=KIND_COLOURS["semantic"],
    )
    bottom.set_ylabel("episodes per day")
    bottom.set_xlabel("game day")
    bottom.legend(loc="upper left", fontsize="small")
    return figure


def _ticks(story: Story) -> Figure:
    figure, axes = _figure(2, 1, (10.0, 6.5))
    mean, slowest = axes[0][0], axes[1][0]
    first = story.first_day
    for name, per_tick in sorted(story.tick_ms.items()):
        daily = [per_tick[i : i + 24] for i in range(0, len(per_tick), 24)]
        days = [first + i for i in range(len(daily))]
        line = mean.plot(days, [sum(d) / len(d) for d in daily], label=name)[0]
        slowest.plot(days, [max(d) for d in daily], color=line.get_color(), marker=".", linewidth=0.8)
    for ax, what in ((mean, "mean ms per tick"), (slowest, "slowest tick of the day, ms")):
        ax.set_yscale("log")
        ax.set_ylabel(what)
    slowest.set_xlabel("game day")
    mean.legend(loc="upper left", fontsize="small", ncols=4)
    mean.set_title("Time per tick by system (one tick per game hour)")
    return figure


def _moves_by_style(story: Story) -> str:
    """How far each play style's standing moved over the run: the mean, over its players
    and the factions, of the last sample less the first."""
    moves: dict[str, list[float]] = defaultdict(list)
    for player, per_faction in story.reputation.items():
        for samples in per_faction.values():
            if samples:
                moves[story.styles.get(player, "other")].append(samples[-1][1] - samples[0][1])
    if not moves:
        return ""
    ranked = sorted(((sum(v) / len(v), style) for style, v in moves.items()), reverse=True)
    said = ", ".join(f"{style} {move:+.2f}" for move, style in ranked)
    return f"In this run the standing of each style moved, on average: {said}."


def _page(story: Story, images: dict[str, bytes]) -> str:
    title = html.escape(story.headline)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{title}</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
        "img{max-width:100%;border:1px solid #ddd}figure{margin:2em 0}"
        "figcaption{color:#444;max-width:60em}pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;"
        "font-size:0.85em}</style>",
        "</head><body>",
        f"<h1>{title}</h1>",
        "<h2>Summary</h2>",
        f"<pre>{html.escape(chr(10).join(story.summary_lines))}</pre>",
    ]
    for name, heading, caption in PICTURES:
        if name == "reputation.png":
            caption = f"{caption} {_moves_by_style(story)}"
        elif name == "gossip.png":
            caption = f"{caption} {_gossip_key(story)}"
        data = base64.b64encode(images[name]).decode("ascii")
        parts += [
            f'<figure id="{name.removesuffix(".png")}"><h2>{html.escape(heading)}</h2>',
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(heading)}" data-file="{name}">',
            f"<figcaption>{html.escape(caption)}</figcaption></figure>",
        ]
    parts += ["<h2>The story, day by day</h2>", f"<pre>{html.escape(story.text())}</pre>", "</body></html>"]
    return "\n".join(parts) + "\n"
