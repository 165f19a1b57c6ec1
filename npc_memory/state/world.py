"""Running code inside a named esper world and restoring the caller's world."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import esper

from npc_memory.errors import NotInstalledError


@contextmanager
def world_context(name: str, *, create: bool = False) -> Iterator[None]:
    """Make esper world ``name`` current for the block, then restore the previous one.

    esper's ``switch_world`` silently creates unknown worlds; this refuses to unless
    ``create`` is set, so a deleted world is an error rather than a fresh empty one.
    No switch happens when ``name`` is already current.
    """
    previous = esper.current_world
    if previous == name:
        yield
        return
    if not create and name not in esper.list_worlds():
        raise NotInstalledError(f"esper world {name!r} no longer exists")
    esper.switch_world(name)
    try:
        yield
    finally:
        esper.switch_world(previous)
