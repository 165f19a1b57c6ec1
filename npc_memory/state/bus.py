"""The plugin's own events: ordered, strongly referenced subscriptions, and a queue
that delivers events only once the change that caused them is complete.

Unlike esper's weakly referenced, unordered handlers, a handler stays subscribed
until its :class:`Subscription` is cancelled, and handlers run in the order they
subscribed. Changes never call handlers: they :meth:`EventQueue.push` events, and
the queue delivers them when the state is consistent — at the end of each facade
call and in EventSystem, last in each tick. A handler that raises stops neither the
other handlers nor the other events; the errors are raised afterwards as one
:class:`EventHandlerError` (an ``ExceptionGroup``), or logged.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import esper

from npc_memory.errors import EventHandlerError, InvalidArgumentError
from npc_memory.events import Event
from npc_memory.state.world import world_context

log = logging.getLogger("npc_memory.events")

ErrorPolicy = Literal["raise", "log"]

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
            raise InvalidArgumentError(
                f"event_type must be a subclass of npc_memory.events.Event, got {event_type!r}"
            )
        if not callable(handler):
            raise InvalidArgumentError(f"handler must be callable, got {handler!r}")
        subscription = Subscription(self, event_type, handler, next(self._order))
        self._subscriptions.append(subscription)
        self._by_type.clear()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """End ``subscription``; a no-op if it already ended."""
        if not isinstance(subscription, Subscription):
            raise InvalidArgumentError(f"expected a Subscription from on(), got {subscription!r}")
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            self._by_type.clear()

    def clear(self) -> None:
        """End every subscription."""
        self._subscriptions.clear()
        self._by_type.clear()

    def publish(self, event: Event) -> list[Exception]:
        """Deliver ``event`` to its handlers in subscription order; returns what they raised."""
        errors: list[Exception] = []
        for handler in self._handlers(type(event)):
            try:
                handler(event)
            except Exception as exc:  # every handler runs; the caller reports the errors
                errors.append(exc)
        return errors

    def _handlers(self, event_type: type[Event]) -> list[Callable[[Any], None]]:
        handlers = self._by_type.get(event_type)
        if handlers is None:
            handlers = self._by_type[event_type] = [
                s.handler for s in self._subscriptions if issubclass(event_type, s.event_type)
            ]
        return handlers


class EventQueue:
    """Events waiting for delivery, oldest first.

    ``deliver()`` hands every queued event (and any queued by handlers meanwhile) to
    the bus, and to ``esper.dispatch_event`` in ``world`` when ``forward`` is set.
    Re-entrant: a facade call made by a handler only queues; the outer delivery goes
    on with its events. Handler errors are raised together once the queue is empty
    (``errors="raise"``) or logged on ``npc_memory.events`` (``"log"``).
    """

    def __init__(self, bus: EventBus, world: str, *, forward: bool = False, errors: ErrorPolicy = "raise"):
        if errors not in ("raise", "log"):
            raise ValueError(f"errors must be 'raise' or 'log', got {errors!r}")
        self.bus = bus
        self.world = world
        self.forward = forward
        self.errors: ErrorPolicy = errors
        self._queue: deque[Event] = deque()
        self._delivering = False

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, event: Event) -> None:
        """Queue ``event`` for the next delivery."""
        self._queue.append(event)

    def deliver(self) -> None:
        """Deliver every queued event; then raise or log what the handlers raised."""
        if self._delivering or not self._queue:
            return
        self._delivering = True
        failed: list[Exception] = []
        try:
            while self._queue:
                event = self._queue.popleft()
                if self.forward and self.world in esper.list_worlds():
                    with world_context(self.world):
                        try:
                            esper.dispatch_event(type(event).__name__, event)
                        except Exception as exc:  # an esper handler is a handler too
                            failed.append(exc)
                failed.extend(self.bus.publish(event))
        finally:
            self._delivering = False
        if not failed:
            return
        if self.errors == "log":
            for error in failed:
                log.error("npc_memory event handler raised", exc_info=error)
            return
        raise EventHandlerError(failed) from failed[0]

    def clear(self) -> None:
        """Drop every queued event undelivered (uninstall)."""
        self._queue.clear()
