"""The plugin's esper Processors and the priorities they are installed with.

esper runs higher priorities first. The plugin's systems sit in a band around
``PRIORITY_BASE`` so a host can order its own processors before or after them.
"""

from npc_memory.systems.clock import DEFAULT_FIXED_STEP, ClockSystem, DtSource, first_positional, keyword

PRIORITY_BASE = 0
"""Default base priority; ``install(priority=...)`` moves the whole band."""

CLOCK_PRIORITY = 100
"""Offset of ClockSystem from the base: it runs before every other plugin system."""

LIFECYCLE_PRIORITY = 90
"""Offset of LifecycleSystem from the base: right after the clock."""

EXTRACTION_PRIORITY = 50
"""Offset of ExtractionSystem from the base."""

GOSSIP_PRIORITY = 30
"""Offset of GossipSystem from the base."""

DECAY_PRIORITY = 20
"""Offset of DecaySystem from the base."""

CONSOLIDATION_PRIORITY = 10
"""Offset of ConsolidationSystem from the base."""

SNAPSHOT_PRIORITY = -100
"""Offset of SnapshotSystem from the base: after the systems that change state."""

EVENT_PRIORITY = -200
"""Offset of EventSystem from the base: it runs last and delivers the tick's events."""

__all__ = [
    "CLOCK_PRIORITY",
    "CONSOLIDATION_PRIORITY",
    "DECAY_PRIORITY",
    "DEFAULT_FIXED_STEP",
    "EVENT_PRIORITY",
    "EXTRACTION_PRIORITY",
    "GOSSIP_PRIORITY",
    "LIFECYCLE_PRIORITY",
    "PRIORITY_BASE",
    "SNAPSHOT_PRIORITY",
    "ClockSystem",
    "DtSource",
    "first_positional",
    "keyword",
]
