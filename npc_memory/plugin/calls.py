"""What every part of the facade shares: calls refused once the plugin is uninstalled,
and the events a call queued delivered once it returns."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from npc_memory.errors import EventHandlerError, NotInstalledError
from npc_memory.state import WorldState

F = TypeVar("F", bound=Callable[..., Any])


class HasState(Protocol):
    """A part of the facade: it holds the plugin's shared state."""

    _state: WorldState


def check_installed(state: WorldState) -> None:
    """Raise :class:`NotInstalledError` once the plugin of ``state`` is uninstalled."""
    if not state.installed:
        raise NotInstalledError(f"this npc_memory plugin was uninstalled from {state.world!r}")


def delivers(method: F) -> F:
    """A facade call that changes state: refused once uninstalled; once it returns, the
    events it queued are delivered. Handler errors are raised after the change is whole,
    as an :class:`EventHandlerError` whose ``result`` is what the call returned."""

    @functools.wraps(method)
    def call(self: HasState, *args: Any, **kwargs: Any) -> Any:
        state = self._state
        check_installed(state)
        result = method(self, *args, **kwargs)
        try:
            state.events.deliver()
        except EventHandlerError as error:
            error.result = result  # the call itself succeeded: its answer is not lost
            raise
        return result

    return cast(F, call)
