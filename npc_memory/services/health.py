"""Health and metrics: how the plugin is doing (``ok`` / ``degraded`` / ``failing``,
with reasons and since when) and the figures behind it.

Tick times are kept per system in fixed ring buffers (:class:`SampleWindow`): timing a
system costs two clock reads and one store into an array per tick. Health is judged
every ``EVALUATE_EVERY`` ticks from counters the services keep anyway (O(1)); a change
publishes :class:`HealthChanged`. Counting memories, facts and relationships walks
every NPC, so it happens only when :meth:`HealthService.metrics` is called. Metrics
only read (containers are copied with single C calls before they are walked), so an
exporter thread may gather them while the game runs.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from npc_memory.components import NpcHandle
from npc_memory.events import HealthChanged
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.llm.budget import BreakerState
from npc_memory.services.persistence import PersistenceService
from npc_memory.services.safety import SafetyStats
from npc_memory.state import WorldState
from npc_memory.store import NpcDocument
from npc_memory.window import SampleWindow

Status = Literal["ok", "degraded", "failing"]
TICK_WINDOW = 600
"""Ticks per system kept for the tick-time percentiles (10 s at 60 ticks a second)."""
EVALUATE_EVERY = 16
"""Ticks between two health judgements (``plugin.health()`` always judges afresh)."""
FAILING_WRITES = 3
"""Store writes failing in a row that make the plugin ``failing`` (one: ``degraded``)."""
UNSAVED_INTERVALS = 3.0
"""Snapshot intervals of unsaved changes after which the store is ``degraded``."""
OVERRUN_SHARE = 0.25
"""Share of a window's ticks over its time budget that makes a system ``degraded``."""
MIN_TICKS = 100
"""Ticks a window needs before its overruns count towards health."""
QUEUE_SHARE = 0.9
"""How full the extraction queue may get before extraction is ``degraded``."""


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """``status``: ``ok``, ``degraded`` (working, but something needs attention: the
    game keeps running and nothing is lost) or ``failing`` (the store is not being
    written: what is in memory is all there is). ``reasons`` says why, one sentence
    each. ``since`` is the game time (seconds) and ``since_wall`` the UTC time at
    which the status began."""

    status: Status
    reasons: tuple[str, ...] = ()
    since: float = 0.0
    since_wall: str = ""


def _now_wall() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class HealthService:
    """Judges the plugin's health and gathers its metrics."""

    def __init__(
        self,
        state: WorldState,
        persistence: PersistenceService,
        pipeline: ExtractionPipeline,
        safety: SafetyStats | None = None,
    ) -> None:
        self.state = state
        self.persistence = persistence
        self.pipeline = pipeline
        self.safety = safety if safety is not None else SafetyStats()
        self.ticks: dict[str, SampleWindow] = {}
        """Seconds per tick of each timed system, by name."""
        self._current = Health(status="ok", since=state.clock.now, since_wall=_now_wall())
        self._countdown = EVALUATE_EVERY

    def timed(self, name: str, process: Callable[..., Any], budget_ms: float | None) -> Callable[..., Any]:
        """``process`` (a system's ``process``), timed into the window of ``name``; a tick
        over ``budget_ms`` counts as an overrun."""
        limit = None if budget_ms is None or math.isinf(budget_ms) else budget_ms / 1000.0
        window = self.ticks[name] = SampleWindow(TICK_WINDOW, limit)
        clock = time.perf_counter
        add = window.add

        def run(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return process(*args, **kwargs)
            finally:
                add(clock() - started)

        return run

    def tick(self) -> None:
        """Judge health every ``EVALUATE_EVERY`` ticks; a change publishes
        :class:`HealthChanged`."""
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = EVALUATE_EVERY
            self.health()

    def health(self) -> Health:
        """The health now (a change since the last judgement publishes :class:`HealthChanged`)."""
        failing, degraded = self._reasons()
        status: Status = "failing" if failing else "degraded" if degraded else "ok"
        reasons = tuple(failing + degraded)
        current = self._current
        if status != current.status:
            self._current = Health(
                status=status, reasons=reasons, since=self.state.clock.now, since_wall=_now_wall()
            )
            self.state.publish(
                HealthChanged(
                    game_time=self.state.clock.now, status=status, previous=current.status, reasons=reasons
                )
            )
        elif reasons != current.reasons:
            self._current = msgspec.structs.replace(current, reasons=reasons)
        return self._current

    def _reasons(self) -> tuple[list[str], list[str]]:
        failing: list[str] = []
        degraded: list[str] = []
        persistence = self.persistence
        if persistence.disowned is not None:
            failing.append(persistence.disowned)
        elif persistence.failed_streak >= FAILING_WRITES:
            failing.append(
                f"store writes failing ({persistence.failed_streak} in a row): {persistence.last_error}; "
                "everything stays in memory and is retried each snapshot"
            )
        elif persistence.failed_streak:
            degraded.append(f"a store write failed and will be retried: {persistence.last_error}")
        if persistence.store is not None:
            interval = self.state.pack.budgets.snapshot_interval
            unsaved = persistence.oldest_unsaved(self.state.clock.now)
            if unsaved > UNSAVED_INTERVALS * interval:
                degraded.append(f"{unsaved:.0f} game seconds of changes are not on disk yet")
        pipeline = self.pipeline
        if pipeline.breaker.state is BreakerState.OPEN:
            degraded.append("the LLM circuit breaker is open: the rules extract conversations meanwhile")
        limit = self.state.pack.budgets.extraction_queue
        if len(pipeline.queue) >= QUEUE_SHARE * limit:
            degraded.append(f"the extraction queue is {len(pipeline.queue)} of {limit} jobs full")
        for name, window in self.ticks.items():
            if window.count >= MIN_TICKS and window.overruns_in_window > OVERRUN_SHARE * window.count:
                over, count = window.overruns_in_window, window.count
                degraded.append(f"{name} ran over its time budget in {over} of the last {count} ticks")
        return failing, degraded

    def metrics(self) -> dict[str, Any]:
        """Figures since install (see ``MemoryPlugin.metrics`` for the keys), with the
        health as last judged; safe to call from another thread."""
        persistence = self.persistence
        pipeline = self.pipeline
        stats = pipeline.stats
        writer = persistence.writer
        now = self.state.clock.now
        ticks = {
            name: {  # (one window per system; the game thread adds to them meanwhile)
                "p50_ms": window.percentile(50) * 1000.0,
                "p99_ms": window.percentile(99) * 1000.0,
                "max_ms": max(window.samples[: window.count], default=0.0) * 1000.0,
                "budget_ms": None if window.limit is None else window.limit * 1000.0,
                "overruns": window.overruns,
                "overruns_in_window": window.overruns_in_window,
                "window": window.count,
                "ticks": window.total,
            }
            for name, window in list(self.ticks.items())
        }
        latency = None if writer is None else writer.latency
        return {
            "health": self._current.status,
            "ticks": ticks,
            "queues": {
                "extraction_queued": len(pipeline.queue),
                "extraction_in_flight": len(pipeline.in_flight),
                "extraction_ready": len(pipeline.ready),
                "extraction_parked": len(pipeline.parked),
                "snapshot_backlog": persistence.backlog,
                "store_batches_in_flight": persistence.in_flight,
            },
            "extraction": {
                "queued": stats.queued,
                "applied": stats.applied,
                "dropped": stats.dropped,
                "duplicates": stats.duplicates,
                "fallbacks": dict(stats.fallbacks),
                "grounding": stats.grounding.as_dict(),
            },
            "llm": {
                "calls": stats.llm_calls,
                "failures": stats.llm_failures,
                "tokens": stats.tokens,
                "cost_usd": stats.cost_usd,
                "breaker": pipeline.breaker.state.value,
            },
            "snapshots": {
                "rounds_started": persistence.snapshots,
                "rounds_completed": persistence.rounds_completed,
                "oldest_unsaved_s": persistence.unsaved(now),
            },
            "store": {
                "write_p50_ms": 0.0 if latency is None else latency.percentile(50) * 1000.0,
                "write_p99_ms": 0.0 if latency is None else latency.percentile(99) * 1000.0,
                "writes": 0 if latency is None else latency.total,
                "write_failures": persistence.failures,
                "failures_in_a_row": persistence.failed_streak,
                "bytes_written": 0 if writer is None else writer.bytes_written,
            },
            "safety": msgspec.structs.asdict(self.safety),
            "counts": self._counts(),
        }

    def _counts(self) -> dict[str, int]:
        """NPCs, players, memories, facts and relationships, live and stored (walks
        every NPC: on demand only)."""
        state = self.state
        registry = state.registry
        counts = {"npcs": 0, "players": len(registry.players), "memories": 0, "facts": 0, "relationships": 0}
        npcs: list[NpcHandle | NpcDocument] = list(registry.npcs.values())
        for document in list(state.stored.values()):
            if isinstance(document, NpcDocument):
                npcs.append(document)
            else:
                counts["players"] += 1
        for npc in npcs:
            bank = npc.bank
            counts["memories"] += len(bank.world) + sum(map(len, list(bank.players.values())))
            counts["facts"] += len(npc.knowledge.facts)
            counts["relationships"] += len(npc.relationships.by_player)
        counts["npcs"] = len(npcs)
        return counts
