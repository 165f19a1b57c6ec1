"""The plugin's systems, built from its services and added to its esper world, in the
order they run: the clock first, the events last (Bevy's plugin ``build``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import esper

from npc_memory.services import (
    ConversationService,
    HealthService,
    KnowledgeService,
    MaintenanceService,
    PersistenceService,
    PopulationService,
    RelationshipService,
)
from npc_memory.services.privacy import PrivacyService
from npc_memory.state import WorldState
from npc_memory.state.world import world_context
from npc_memory.systems import (
    CLOCK_PRIORITY,
    CONSOLIDATION_PRIORITY,
    DECAY_PRIORITY,
    EVENT_PRIORITY,
    EXTRACTION_PRIORITY,
    GOSSIP_PRIORITY,
    LIFECYCLE_PRIORITY,
    SNAPSHOT_PRIORITY,
    ClockSystem,
    DtSource,
)
from npc_memory.systems.decay import ConsolidationSystem, DecaySystem, PairCursor
from npc_memory.systems.events import EventSystem
from npc_memory.systems.extraction import ExtractionSystem
from npc_memory.systems.gossip import GossipSystem
from npc_memory.systems.lifecycle import LifecycleSystem
from npc_memory.systems.snapshot import SnapshotSystem


@dataclass(frozen=True)
class Ticks:
    """How the plugin's systems tick (``install``'s arguments of the same names):
    where a tick's real seconds come from, what a tick without them counts, the base
    esper priority of the processors, and whether only count caps bound a tick's work."""

    dt_source: DtSource
    fixed_step: float | None
    priority: int
    deterministic: bool = False


@dataclass(frozen=True)
class Services:
    """The services the systems call."""

    population: PopulationService
    conversations: ConversationService
    knowledge: KnowledgeService
    relationships: RelationshipService
    maintenance: MaintenanceService
    persistence: PersistenceService
    health: HealthService
    privacy: PrivacyService


def attach(state: WorldState, services: Services, ticks: Ticks) -> list[esper.Processor]:
    """Build the systems, each timed by the health service, add them to ``state``'s
    world and return them in the order they run."""
    memory, budgets, clock = state.pack.memory, state.pack.budgets, state.clock
    if ticks.deterministic:  # count caps only: no wall-clock budget decides how much work a tick does
        timed = ("tick", "extraction_tick", "gossip_tick", "decay_tick", "consolidation_tick")
        budgets = budgets.model_copy(update={f"{name}_ms": math.inf for name in timed})
    tick = state.tick
    tick.total_ms = budgets.tick_ms
    extraction, gossip = tick.share(budgets.extraction_tick_ms), tick.share(budgets.gossip_tick_ms)
    upkeep, npcs = services.maintenance, state.registry.npc_order
    decay = DecaySystem(
        PairCursor(npcs, upkeep.decay_pairs_of, urgent=services.relationships.crowded), clock,
        budgets.decay_pairs_per_tick, memory.decay_interval, upkeep.decay_pair,
        tick.share(budgets.decay_tick_ms),
    )  # fmt: skip
    consolidation = ConsolidationSystem(
        PairCursor(npcs, upkeep.pairs_of), clock, budgets.consolidation_pairs_per_tick,
        memory.decay_interval, upkeep.consolidate_pair, tick.share(budgets.consolidation_tick_ms),
        poll=upkeep.poll_summaries,
    )  # fmt: skip
    snapshot = SnapshotSystem(services.persistence, services.health, services.privacy)
    band: list[tuple[esper.Processor, int, str, float | None]] = [
        (ClockSystem(clock, ticks.dt_source, ticks.fixed_step, tick), CLOCK_PRIORITY, "clock", None),
        (LifecycleSystem(services.population), LIFECYCLE_PRIORITY, "lifecycle", None),
        (ExtractionSystem(services.conversations, extraction), EXTRACTION_PRIORITY, "extraction",
         budgets.extraction_tick_ms),
        (GossipSystem(services.knowledge, budgets.gossip_exchanges_per_tick, gossip), GOSSIP_PRIORITY,
         "gossip", budgets.gossip_tick_ms),
        (decay, DECAY_PRIORITY, "decay", budgets.decay_tick_ms),
        (consolidation, CONSOLIDATION_PRIORITY, "consolidation", budgets.consolidation_tick_ms),
        (snapshot, SNAPSHOT_PRIORITY, "snapshot", budgets.snapshot_tick_ms),
        (EventSystem(state.events, tick), EVENT_PRIORITY, "events", None),
    ]  # fmt: skip
    processors = []
    with world_context(state.world, create=True):
        for processor, offset, name, budget_ms in band:
            setattr(processor, "process", services.health.timed(name, processor.process, budget_ms))  # noqa: B010
            esper.add_processor(processor, priority=ticks.priority + offset)
            processors.append(processor)
    return processors
