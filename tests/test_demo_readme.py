"""demo/README.md describes what the default town draws: the pairs it names are the ones
the relationships picture plots, in the colours it says, and the lines it quotes are in
the story. (The default town is deterministic: same seed, same world on any machine.)"""

from __future__ import annotations

import re
from pathlib import Path

from npc_memory.demo import run_town
from npc_memory.demo.report import PAIRS_SHOWN

README = (Path(__file__).resolve().parent.parent / "demo" / "README.md").read_text()
COLOURS = ("blue", "orange", "green", "red", "purple", "brown")  # matplotlib's default cycle, in order
PAIR = re.compile(r"([A-Z][a-z]+ [A-Z][a-z]+) and\s+([A-Z][a-z]+(?:\s+the\s+[A-Z][a-z]+)?)\s+\((\w+)\)")


def test_the_demo_readme_names_the_pairs_the_default_town_draws() -> None:
    paragraph = README[README.index("**How to read it.**"):README.index("## From Python")]
    named = [(npc, " ".join(player.split()), colour) for npc, player, colour in PAIR.findall(paragraph)]
    assert len(named) >= 2
    story = run_town().story
    drawn = [tuple(story.name(key) for key in pair.split("/", 1)) for pair in story.most_changed(PAIRS_SHOWN)]
    for npc, player, colour in named:
        assert (npc, player) in drawn, f"demo/README.md names {npc} and {player}, not drawn: {drawn}"
        assert COLOURS[drawn.index((npc, player))] == colour, f"{npc} and {player} are not {colour}"
    text = " ".join(story.text().split())
    quotes = re.findall(r'\("([^"]+?)"\)', " ".join(paragraph.split()))
    assert quotes
    for quote in quotes:
        assert quote.split(" — ")[0] in text
    habit = re.search(r'the habit "([^"]+)"', " ".join(paragraph.split()))
    assert habit is not None and habit.group(1) in text
