"""The demo's worlds end to end: a week of the village, and the town at its default size
(1,000 NPCs, 50 players) for a few game days, then its report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npc_memory.demo import run_town, run_village
from npc_memory.demo.report import write_report


def test_village_week(benchmark: Any) -> None:
    benchmark.pedantic(run_village, kwargs={"days": 7 if not benchmark.disabled else 1}, rounds=3, iterations=1)


def test_town_days(benchmark: Any) -> None:
    size = {"days": 5, "npcs": 1000, "players": 50} if not benchmark.disabled else {"days": 1, "npcs": 100, "players": 4}
    benchmark.pedantic(run_town, kwargs=size, rounds=3 if not benchmark.disabled else 1, iterations=1)


def test_town_report(benchmark: Any, tmp_path: Path) -> None:
    size = {"days": 30, "npcs": 1000, "players": 50} if not benchmark.disabled else {"days": 2, "npcs": 100, "players": 4}
    story = run_town(**size).story
    assert story is not None
    benchmark.pedantic(write_report, args=(story, tmp_path), rounds=3 if not benchmark.disabled else 1, iterations=1)
