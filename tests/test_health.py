"""plugin.health(), plugin.metrics(), HealthChanged, the Prometheus exporter and
``npc-memory stats``, on real stores and a real esper world."""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

import npc_memory
from npc_memory.cli import main
from npc_memory.content import load_pack, validate_pack
from npc_memory.events import HealthChanged, SnapshotFailed
from npc_memory.prometheus import PluginCollector, serve
from npc_memory.store import TinyDBStore
from npc_memory.store.records import Record

from .conftest import tick

SYSTEMS = ["clock", "lifecycle", "extraction", "gossip", "decay", "consolidation", "snapshot", "events"]


class FlakyStore(TinyDBStore):
    """A real store whose journal appends fail while ``failing`` is set (a disk that
    refuses writes, then recovers)."""

    failing = False

    def append(self, records: Iterable[Record]) -> int:
        if self.failing:
            raise OSError(28, "No space left on device")
        return super().append(records)


def pack(interval: float = 60.0, **budgets: float) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=interval, **budgets)
    return validate_pack(data)


def run(plugin: npc_memory.MemoryPlugin, ticks: int) -> None:
    """Tick, letting the store keep up (a loop this fast outruns any disk in game time)."""
    for _ in range(ticks):
        tick(plugin.world, 1)
        plugin.storage.flush()


def busy_world(db: Path) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world="w", pack=pack(), store=db, seed=2)
    plugin.add_npc(key="hilda", archetype="blacksmith", room="forge")
    plugin.add_npc(key="brandt", archetype="guard_captain", room="forge")
    plugin.add_player(key="alice", consent=True, room="forge")
    plugin.remember("hilda", "alice", "Alice bought a sword", tags=["trade"], affect_relationship=True)
    plugin.remember("brandt", None, "The river flooded")
    plugin.learn_fact("hilda", "The mine is closed", subject="mine", topic="news")
    plugin.say("hilda", "alice", "alice", "You saved my life, thank you friend")
    plugin.end_conversation("hilda", "alice")
    return plugin


def test_a_healthy_world_reports_ok_and_every_figure(tmp_path: Path) -> None:
    plugin = busy_world(tmp_path / "w.db")
    run(plugin, 200)
    plugin.save()
    health = plugin.health()
    assert health.status == "ok" and health.reasons == () and health.since == 0.0 and health.since_wall
    metrics = plugin.metrics()
    assert metrics["health"] == "ok"
    assert list(metrics["ticks"]) == SYSTEMS
    for figures in metrics["ticks"].values():
        assert figures["window"] == 200 and figures["ticks"] == 200
        assert 0.0 < figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert metrics["ticks"]["extraction"]["budget_ms"] == plugin.pack.budgets.extraction_tick_ms
    assert metrics["ticks"]["clock"]["budget_ms"] is None
    assert metrics["extraction"]["applied"] == 1 and metrics["extraction"]["queued"] == 1
    assert metrics["queues"]["extraction_queued"] == 0 and metrics["queues"]["snapshot_backlog"] == 0
    assert metrics["llm"] == {"calls": 0, "failures": 0, "tokens": 0, "cost_usd": 0.0, "breaker": "closed"}
    assert metrics["snapshots"]["rounds_completed"] >= 1 and metrics["snapshots"]["oldest_unsaved_s"] == 0.0
    assert metrics["store"]["writes"] >= 1 and metrics["store"]["write_failures"] == 0
    assert metrics["store"]["bytes_written"] > 0 and metrics["store"]["write_p99_ms"] > 0.0
    memories = sum(len(plugin.memories(npc, player)) for npc in ("hilda", "brandt") for player in ("alice", None))
    # One relationship: Alice's thanks for Hilda's rescue is Hilda's deed, nothing for Brandt to hear of Alice.
    assert metrics["counts"] == {"npcs": 2, "players": 1, "memories": memories, "facts": len(plugin.facts("hilda")) + len(plugin.facts("brandt")), "relationships": 1}
    plugin.remove("brandt")  # a stored NPC still counts
    assert plugin.metrics()["counts"]["npcs"] == 2
    npc_memory.uninstall("w")


def test_failing_writes_degrade_then_fail_and_recovery_is_announced(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "w.db")
    plugin = npc_memory.install(world="w", pack=pack(interval=1.0), store=store)
    changes: list[HealthChanged] = []
    failures: list[SnapshotFailed] = []
    plugin.on(HealthChanged, changes.append)
    plugin.on(SnapshotFailed, failures.append)
    plugin.add_npc(key="hilda")
    store.failing = True

    def play_until(failed: int) -> None:
        while len(failures) < failed:
            plugin.remember("hilda", None, "rain")
            tick("w", 1)
            plugin.storage.flush()

    play_until(1)
    health = plugin.health()
    assert health.status == "degraded" and "No space left on device" in health.reasons[0]
    play_until(3)
    health = plugin.health()
    assert health.status == "failing" and "3 in a row" in health.reasons[0]
    assert health.since == plugin.clock.now
    assert [(c.previous, c.status) for c in changes] == [("ok", "degraded"), ("degraded", "failing")]
    assert plugin.metrics()["store"]["write_failures"] >= 3
    store.failing = False  # the disk recovers: the next rounds write everything
    run(plugin, 40)
    assert plugin.health().status == "ok"
    assert changes[-1].previous == "failing" and changes[-1].status == "ok"
    npc_memory.uninstall("w")
    reopened = TinyDBStore(tmp_path / "w.db")
    [hilda] = reopened.load().documents.values()
    reopened.close()
    assert hilda.bank.count() == plugin.metrics()["counts"]["memories"]  # nothing was lost


def test_health_is_judged_while_the_game_runs(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "w.db")
    plugin = npc_memory.install(world="w", pack=pack(interval=1.0), store=store)
    changes: list[HealthChanged] = []
    plugin.on(HealthChanged, changes.append)
    plugin.add_npc(key="hilda")
    store.failing = True
    for _ in range(64):  # nobody asks: the snapshot system judges every few ticks
        plugin.remember("hilda", None, "rain")
        tick("w", 1)
        plugin.storage.flush()
    store.failing = False
    assert changes[0].previous == "ok" and changes[-1].status == "failing"
    npc_memory.uninstall("w")


def test_a_system_over_its_budget_degrades_health(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", pack=pack(extraction_tick_ms=1e-6))  # a nanosecond: every tick is over
    tick("w", 120)
    metrics = plugin.metrics()["ticks"]["extraction"]
    assert metrics["overruns"] == 120 and metrics["overruns_in_window"] == 120
    health = plugin.health()
    assert health.status == "degraded"
    assert health.reasons == ("extraction ran over its time budget in 120 of the last 120 ticks",)
    npc_memory.uninstall("w")


def test_deterministic_worlds_have_no_time_budgets(tmp_path: Path) -> None:
    plugin = npc_memory.install(world="w", pack=pack(extraction_tick_ms=1e-6), deterministic=True)
    tick("w", 120)
    assert plugin.metrics()["ticks"]["extraction"]["overruns"] == 0 and plugin.health().status == "ok"
    npc_memory.uninstall("w")


def test_the_prometheus_collector_exports_the_metrics(tmp_path: Path) -> None:
    plugin = busy_world(tmp_path / "w.db")
    tick("w", 20)
    plugin.save()
    registry = CollectorRegistry()
    registry.register(PluginCollector(plugin))
    text = generate_latest(registry).decode()
    assert 'npc_memory_health{world="w"} 0.0' in text
    assert 'npc_memory_count{kind="npcs",world="w"} 2.0' in text
    assert 'npc_memory_extraction_jobs_total{outcome="applied",world="w"} 1.0' in text
    assert 'npc_memory_tick_p99_seconds{system="snapshot",world="w"}' in text
    assert 'npc_memory_store_writes_total{result="failed",world="w"} 0.0' in text
    npc_memory.uninstall("w")


def test_serve_answers_scrapes_over_http(tmp_path: Path) -> None:
    plugin = busy_world(tmp_path / "w.db")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = serve(plugin, port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            body = answer.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'npc_memory_count{kind="players",world="w"} 1.0' in body
    npc_memory.uninstall("w")


def test_stats_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "w.db"
    busy_world(db)
    npc_memory.uninstall("w")
    assert main(["stats", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"store {db}: ok\n") and "2 NPCs, 1 players" in out
    assert main(["stats", "--db", str(db), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["health"] == "ok" and stats["npcs"] == 2 and stats["players"] == 1
    assert stats["facts"] == 1 and stats["relationships"] == 1 and stats["memories"] == 2 and stats["bytes"] > 0
    (db / "meta.json").write_text("{")
    assert main(["stats", "--db", str(db), "--json"]) == 1
    stats = json.loads(capsys.readouterr().out)
    assert stats["health"] == "damaged" and "meta.json" in stats["problems"][0]
