"""The plugin's own event subscription: strong references, deterministic order.

Unlike esper's weakly referenced, unordered handlers, a handler stays subscribed
until its :class:`Subscription` is cancelled, and handlers run in the order they
subscribed. A handler that raises does not stop the others: after all ran, the
errors are raised together as :class:`EventHandlerError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from npc_memory.errors import EventHandlerError
from npc_memory.events import Event

E = TypeVar("E", bound=Event)


class Subscription:
    """A handle on one subscription; ``cancel()`` ends it (idempotent)."""

    __slots__ = ("_bus", "event_type", "handler", "order")

    def __init__(
        self, bus: EventBus, event_type: type[Event], handler: Callable[[Any], None], order: int
    ) -> None:
        self._bus = bus
        self.event_type = event_type
        self.handler = handler
        self.order = order

    def cancel(self) -> None:
        """Stop delivering events to this handler."""
        self._bus.unsubscribe(self)


class EventBus:
    """Ordered, strongly referenced publish/subscribe over :class:`Event` types."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._order = itertools.count()
        self._by_type: dict[type[Event], list[Callable[[Any], None]]] = {}

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> Subscription:
        """Deliver every event that is an instance of ``event_type`` to ``handler``."""
        if not (isinstance(event_type, type) and issubclass(event_type, Event)):
            raise TypeError(f"event_type must be a subclass of npc_memory.events.Event, got {event_type!r}")
        if not callable(handler):
            raise TypeError(f"handler must be callable, got {handler!r}")
        subscription = Subscription(self, event_type, handler, next(self._order))
        self._subscriptions.append(subscription)
        self._by_type.clear()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """End ``subscription``; a no-op if it already ended."""
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            self._by_type.clear()

    def clear(self) -> None:
        """End every subscription."""
        self._subscriptions.clear()
        self._by_type.clear()

    def has_subscribers(self, event_type: type[Event]) -> bool:
        """Whether any handler would receive an event of ``event_type``."""
        return bool(self._handlers(event_type))

    def publish(self, event: Event) -> None:
        """Deliver ``event`` to its handlers in subscription order."""
        errors: list[BaseException] = []
        for handler in self._handlers(type(event)):
            try:
                handler(event)
            except Exception as exc:  # every handler runs; errors re-raised below
                errors.append(exc)
        if errors:
            raise EventHandlerError(errors) from errors[0]

    def _handlers(self, event_type: type[Event]) -> list[Callable[[Any], None]]:
        handlers = self._by_type.get(event_type)
        if handlers is None:
            handlers = self._by_type[event_type] = [
                s.handler for s in self._subscriptions if issubclass(event_type, s.event_type)
            ]
        return handlers
