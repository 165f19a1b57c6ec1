"""A Prometheus exporter for a plugin's metrics (``pip install 'esper-npc-memory[prometheus]'``).

``serve(plugin, port)`` starts prometheus-client's HTTP server on a daemon thread;
or register :class:`PluginCollector` with a registry of your own. Each scrape calls
``plugin.metrics()`` on the server's thread (it only reads; counting memories walks
every NPC, so scrape every few seconds, not every frame). Every series carries a
``world`` label with the esper world's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from npc_memory.plugin import MemoryPlugin

HEALTH_LEVELS = {"ok": 0, "degraded": 1, "failing": 2}
"""The value of ``npc_memory_health`` for each status."""


class PluginCollector(Collector):
    """Turns ``plugin.metrics()`` into Prometheus metric families named ``<prefix>_*``."""

    def __init__(self, plugin: MemoryPlugin, prefix: str = "npc_memory") -> None:
        self.plugin = plugin
        self.prefix = prefix

    def collect(self) -> Iterator[Metric]:
        metrics = self.plugin.metrics()
        world = self.plugin.world
        p = self.prefix

        def gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(f"{p}_{name}", text, labels=["world"])
            family.add_metric([world], value)
            return family

        def counter(name: str, text: str, values: dict[str, float], label: str) -> CounterMetricFamily:
            family = CounterMetricFamily(f"{p}_{name}", text, labels=["world", label])
            for key, value in values.items():
                family.add_metric([world, key], value)
            return family

        yield gauge("health", "0 ok, 1 degraded, 2 failing", HEALTH_LEVELS[metrics["health"]])
        ticks = metrics["ticks"]
        for quantile in ("p50", "p99"):
            family = GaugeMetricFamily(
                f"{p}_tick_{quantile}_seconds",
                f"{quantile} of each system's tick time over its recent window",
                labels=["world", "system"],
            )
            for system, figures in ticks.items():
                family.add_metric([world, system], figures[f"{quantile}_ms"] / 1000.0)
            yield family
        yield counter(
            "tick_budget_overruns", "Ticks a system ran over its time budget",
            {system: figures["overruns"] for system, figures in ticks.items()}, "system",
        )  # fmt: skip
        queues = GaugeMetricFamily(f"{p}_queue_depth", "Items waiting, by queue", labels=["world", "queue"])
        for queue, depth in metrics["queues"].items():
            queues.add_metric([world, queue], depth)
        yield queues
        extraction = metrics["extraction"]
        outcomes = {k: extraction[k] for k in ("queued", "applied", "dropped", "duplicates")}
        yield counter("extraction_jobs", "Extraction jobs by outcome", outcomes, "outcome")
        yield counter("extraction_fallbacks", "Extractions the rules did instead, by reason",
                      extraction["fallbacks"], "reason")
        llm = metrics["llm"]
        yield counter("llm_calls", "LLM calls by result",
                      {"ok": llm["calls"] - llm["failures"], "failed": llm["failures"]}, "result")
        yield gauge("llm_tokens", "LLM tokens counted against the budgets since install", llm["tokens"])
        yield gauge("llm_cost_usd", "What the LLM calls cost since install (USD)", llm["cost_usd"])
        snapshots = metrics["snapshots"]
        yield counter("snapshot_rounds", "Snapshot rounds", {
            "started": snapshots["rounds_started"], "completed": snapshots["rounds_completed"]}, "state")
        yield gauge("unsaved_seconds", "Game seconds since the oldest change not on disk",
                    snapshots["oldest_unsaved_s"])
        store = metrics["store"]
        latency = GaugeMetricFamily(f"{p}_store_write_seconds", "Store write latency over the recent window",
                                    labels=["world", "quantile"])
        latency.add_metric([world, "0.5"], store["write_p50_ms"] / 1000.0)
        latency.add_metric([world, "0.99"], store["write_p99_ms"] / 1000.0)
        yield latency
        yield counter("store_writes", "Store writes by result",
                      {"ok": store["writes"], "failed": store["write_failures"]}, "result")
        yield gauge("store_bytes_written", "Journal bytes appended since install", store["bytes_written"])
        yield counter("safety_texts", "Texts the content-safety screen saw, by outcome",
                      metrics["safety"], "outcome")
        counts = GaugeMetricFamily(f"{p}_count", "NPCs, players, memories, facts and relationships",
                                   labels=["world", "kind"])
        for kind, value in metrics["counts"].items():
            counts.add_metric([world, kind], value)
        yield counts


def serve(
    plugin: MemoryPlugin, port: int = 9464, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> WSGIServer:
    """Serve ``plugin``'s metrics at ``http://addr:port/metrics`` on a daemon thread
    (from ``registry``, a new one unless given); returns the server (``shutdown()``
    stops it)."""
    target = registry if registry is not None else CollectorRegistry()
    target.register(PluginCollector(plugin))
    server, _ = start_http_server(port, addr=addr, registry=target)
    return server


__all__ = ["HEALTH_LEVELS", "PluginCollector", "serve"]
