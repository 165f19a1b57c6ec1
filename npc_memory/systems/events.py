"""EventSystem: runs last in each tick and delivers the events the tick's systems
queued, once every change of the tick is complete."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.state import EventQueue


class EventSystem(esper.Processor):
    """Delivers queued events; handler errors are raised (one ``EventHandlerError``)
    or logged after every event was delivered, as the plugin was installed to do."""

    def __init__(self, events: EventQueue) -> None:
        self.events = events

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.events.deliver()
