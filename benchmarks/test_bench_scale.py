"""Smoke run of the sustained-load benchmark (``scale.py``) at a small size, through the
same code as the full runs. Asserts only what must hold whatever the machine: the run
completes, snapshot rounds reach the disk, the reload is identical, the load is
deterministic. Timings are reported (``--benchmark-json``), never asserted; the figures at
full size are in benchmarks/README.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import npc_memory
from benchmarks.scale import Config, Load, run


@pytest.mark.parametrize("mix", ["busy", "stress"])
def test_sustained_load_small(benchmark: Any, tmp_path: Path, mix: str) -> None:
    config = Config(npcs=200, players=20, ticks=300, mix=mix)  # type: ignore[arg-type]
    lines: list[str] = []
    result = benchmark.pedantic(run, args=(config, tmp_path / "world.db"), kwargs={"out": lines.append},
                                rounds=1, iterations=1)
    windows = result["windows"]
    assert [w["ticks"] for w in windows] == [[1, 100], [101, 200], [201, 300]]
    assert all(w["tick_ms"]["n"] == 100 for w in windows)
    assert set(windows[0]["systems_us"]) >= {"Clock", "Extraction", "Gossip", "Decay", "Snapshot", "Event"}
    assert windows[-1]["rounds_handed"] > 0 and windows[-1]["stale_max_s"] <= 2 * 60.0
    assert windows[-1]["memories"] > windows[0]["memories"] > 0
    assert result["summary"]["extraction"]["applied"] > 0
    end = result["end"]
    assert end["reload_identical"], end
    assert end["counts"]["npcs"] == 200 and end["counts"]["players"] == 20
    assert lines[-1] == "reload identical: yes"
    benchmark.extra_info.update(summary={k: result["summary"][k] for k in ("worst_window", "stale_max_s")})


def test_same_seed_same_load() -> None:
    pack = npc_memory.load_pack("village")
    config = Config(npcs=50, players=5, ticks=1, mix="stress", seed=3)
    first, second = Load(config, pack), Load(config, pack)
    assert first.npcs == second.npcs and first.players == second.players
    assert [first.tick() for _ in range(20)] == [second.tick() for _ in range(20)]
    other = Load(Config(npcs=50, players=5, ticks=1, mix="stress", seed=4), pack)
    assert [other.tick() for _ in range(20)] != [Load(config, pack).tick() for _ in range(20)]


def test_mix_rates_per_tick() -> None:
    """Over two ticks the busy mix makes one whole conversation (6 lines, then its end)."""
    load = Load(Config(npcs=50, players=5, ticks=2, mix="busy"), npc_memory.load_pack("village"))
    calls = load.tick() + load.tick()
    kinds = [c.kind for c in calls]
    assert kinds.count("say") == 6 and kinds.count("end_conversation") == 1
    assert (kinds.count("observe"), kinds.count("remember"), kinds.count("adjust_relationship"),
            kinds.count("move"), kinds.count("context")) == (2, 4, 2, 40, 4)
