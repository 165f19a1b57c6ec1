"""The headless village demo: deterministic, offline, and telling."""

from __future__ import annotations

import esper

from npc_memory import Stage
from npc_memory.demo import run_village
from npc_memory.installation import _INSTALLED


def test_same_seed_same_world_different_seed_different_world() -> None:
    first = run_village(days=3, seed=11).report
    assert run_village(days=3, seed=11).report == first
    assert run_village(days=3, seed=12).report != first


def test_the_demo_leaves_the_callers_esper_state_alone() -> None:
    esper.switch_world("game")
    run_village(days=1, seed=1)
    assert esper.current_world == "game"
    assert "npc-memory-demo" not in esper.list_worlds() and not _INSTALLED


def test_the_village_judges_players_by_their_deeds() -> None:
    for seed in (1, 2, 3):
        result = run_village(days=5, seed=seed, keep_installed=True)
        plugin, npcs = result.plugin, result.plugin.npcs()
        mean = {p: sum(plugin.query.disposition(n, p) for n in npcs) / len(npcs) for p in ("alice", "bram", "cora")}
        assert mean["bram"] < 0 < min(mean["alice"], mean["cora"]), (seed, mean)
        assert any(plugin.query.stage(n, "bram") in (Stage.RIVAL, Stage.ENEMY) for n in npcs)
        assert any(plugin.query.count_memories_by_tag(n, "bram", "theft") for n in npcs)
        assert any(f.source == "gossip" and f.subject == "bram" for n in npcs for f in plugin.facts(n))
        assert result.log and "Hostile" in "\n".join(result.log)
        npc_memory_uninstall(result.plugin.world)


def npc_memory_uninstall(world: str) -> None:
    import npc_memory

    npc_memory.uninstall(world)
    esper.delete_world(world)


def test_a_village_week_tells_its_story_and_forgetting_shows() -> None:
    story = run_village(days=7, seed=7).story
    assert story is not None
    forgotten = [c for c in story.changes if c.kind == "forgotten"]
    assert forgotten and all("asked me" in c.content for c in forgotten)  # small talk fades within the week
    assert story.summary["forgotten"] == len(forgotten)
    thresholds = [m for m in story.moments if m.kind == "threshold"]
    assert thresholds and all(m.because for m in thresholds)  # each names the memories behind it
    text = story.text()
    assert "How each NPC regards each player" in text and "What Hilda remembers best" in text
    assert [c.day for c in story.census] == list(range(1, 8))


def test_the_town_runs_at_its_default_size() -> None:
    from npc_memory.demo import run_town

    story = run_town(days=1).story
    assert story is not None
    assert story.headline == "npc-memory demo: town, 1000 NPCs in 10 districts, 50 players"
    assert len(story.names) == 1050 and len(set(story.names.values())) == 1050
    assert story.deeds and story.summary["rumours_heard"] > 0
    assert set(story.tick_ms) >= {"GossipSystem", "DecaySystem", "ConsolidationSystem", "ExtractionSystem"}
    assert all(len(per_tick) == 24 for per_tick in story.tick_ms.values())


def test_a_trajectory_keeps_its_samples_aligned_across_a_gap() -> None:
    from array import array

    from npc_memory.demo.story import Story, Trajectory

    story = Story(headline="h", seed=1, first_day=1, days=1, styles={}, names={}, sample_days=[0.0, 0.25, 0.5, 0.75])
    track = Trajectory(1, array("f", [0.5]))
    track.follow(3, -0.25)  # sample 2 was missed: the pair was let go of, then met again
    story.trajectories["n/p"] = track
    assert story.trajectory("n/p") == [(0.25, 0.5), (0.5, 0.5), (0.75, -0.25)]
