"""EventSystem: runs last in each tick and delivers the events the tick's systems
queued, once every change of the tick is complete."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.state import EventQueue, TickBudget


class EventSystem(esper.Processor):
    """Closes the plugin's tick (:class:`TickBudget`), then delivers queued events;
    handler errors are raised (one ``EventHandlerError``) or logged after every event
    was delivered, as the plugin was installed to do."""

    def __init__(self, events: EventQueue, tick: TickBudget) -> None:
        self.events = events
        self.tick = tick

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.tick.close()  # the plugin's work is done; handlers run on the host's time
        self.events.deliver()
