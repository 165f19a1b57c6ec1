"""The registry: which entities are the plugin's NPCs and players, by entity and by key.

The handles' components are the truth; the registry only maps entities and keys to
them, and tells its listeners (the services keeping derived indexes: rooms, facts,
faction standing) when an NPC enters, leaves or changes room, so those indexes
follow the components whoever changed them.
"""

from __future__ import annotations

import functools
from typing import Protocol

import esper

from npc_memory.components import Identity, NpcHandle, PlayerHandle, PlayerProfile
from npc_memory.components.handles import Handle
from npc_memory.errors import DuplicateKeyError, InvalidArgumentError, UnknownEntityError
from npc_memory.state.world import world_context

Ref = int | str
"""An NPC or player: its esper entity id in the plugin's world, or its stable key."""


class RegistryListener(Protocol):
    """Keeps a derived index in step with the live NPCs."""

    def npc_added(self, npc: NpcHandle) -> None: ...

    def npc_removed(self, npc: NpcHandle) -> None: ...

    def npc_moved(self, npc: NpcHandle, old: str | None, new: str | None) -> None: ...


class Registry:
    """Live NPCs and players of one plugin's esper world."""

    def __init__(self, world: str) -> None:
        self.world = world
        self.npcs: dict[int, NpcHandle] = {}
        self.players: dict[int, PlayerHandle] = {}
        self.by_key: dict[str, int] = {}
        self.listeners: list[RegistryListener] = []
        self.npc_order: list[str] = []
        """Keys of the live NPCs (order changes on removal: swap with the last, O(1))."""
        self._npc_position: dict[str, int] = {}
        self.order: list[str] = []
        """Keys of every live NPC and player (order changes on removal, as ``npc_order``)."""
        self._position: dict[str, int] = {}
        self.by_name: dict[str, set[str]] = {}
        """Keys of the live NPCs and players by their display name, case-folded."""

    def __len__(self) -> int:
        return len(self.by_key)

    # ------------------------------------------------------------------ membership

    def claim(self, entity: int | None) -> tuple[int, Handle | None]:
        """The entity to attach to (created in the plugin's world when ``None``), checked,
        and the registered handle whose entity esper deleted and reused for it, if any
        (the caller lets that one go before attaching)."""
        with world_context(self.world):
            if entity is None:
                entity = esper.create_entity()
            elif isinstance(entity, bool) or not isinstance(entity, int):
                raise InvalidArgumentError(f"entity must be an int, got {entity!r}")
            elif not esper.entity_exists(entity):
                raise UnknownEntityError(f"entity {entity} does not exist in esper world {self.world!r}")
            held = self.npcs.get(entity) or self.players.get(entity)
            if held is not None and self._owns(entity, held):
                raise DuplicateKeyError(f"entity {entity} is already {held.identity.key!r}")
        return entity, held

    def attach(self, handle: Handle, entity: int) -> int:
        """Attach ``handle``'s components to ``entity`` (see :meth:`claim`) and register it."""
        key = handle.identity.key
        if key in self.by_key:
            raise DuplicateKeyError(f"key {key!r} is already used by entity {self.by_key[key]}")
        with world_context(self.world):
            if entity in self.npcs or entity in self.players:
                held = self.npcs.get(entity) or self.players[entity]
                raise DuplicateKeyError(f"entity {entity} is already {held.identity.key!r}")
            for component in handle.components():
                esper.add_component(entity, component)
        handle.entity = entity
        self.by_key[key] = entity
        self.by_name.setdefault(handle.identity.name.casefold(), set()).add(key)
        self._position[key] = len(self.order)
        self.order.append(key)
        if isinstance(handle, NpcHandle):
            self.npcs[entity] = handle
            self._npc_position[key] = len(self.npc_order)
            self.npc_order.append(key)
            handle.location.listen(functools.partial(self._moved, handle))
            for listener in self.listeners:
                listener.npc_added(handle)
        else:
            self.players[entity] = handle
        return entity

    def replace_profile(self, handle: PlayerHandle, profile: PlayerProfile) -> None:
        """Give a player a new privacy profile (a frozen component: its entity gets the
        new one, which esper counts as a structural change; consent changes are rare)."""
        if handle.entity is not None:
            with world_context(self.world):
                esper.add_component(handle.entity, profile)
        handle.profile = profile

    def detach(self, handle: Handle) -> None:
        """Unregister ``handle`` and take its components off its entity if it still
        exists (the entity itself stays)."""
        entity = handle.entity
        assert entity is not None
        if isinstance(handle, NpcHandle):
            for listener in self.listeners:
                listener.npc_removed(handle)
            handle.location.listen(None)
            _swap_remove(self.npc_order, self._npc_position, handle.identity.key)
        if self.world in esper.list_worlds():
            with world_context(self.world):
                if esper.entity_exists(entity) and self._owns(entity, handle):
                    for component in handle.components():
                        esper.try_remove_component(entity, type(component))
        self.npcs.pop(entity, None)
        self.players.pop(entity, None)
        del self.by_key[handle.identity.key]
        named = self.by_name.get(handle.identity.name.casefold())
        if named is not None:
            named.discard(handle.identity.key)
            if not named:
                del self.by_name[handle.identity.name.casefold()]
        _swap_remove(self.order, self._position, handle.identity.key)
        handle.entity = None

    def _owns(self, entity: int, handle: Handle) -> bool:
        """Whether ``entity`` still carries ``handle``'s identity (call in the world)."""
        return esper.try_component(entity, Identity) is handle.identity

    def _moved(self, npc: NpcHandle, old: str | None, new: str | None) -> None:
        for listener in self.listeners:
            listener.npc_moved(npc, old, new)

    # ------------------------------------------------------------------ esper's lifecycle

    def stale(self, key: str) -> Handle | None:
        """The handle registered under ``key`` if its entity no longer carries it (deleted
        or cleared from esper without the plugin being told), else ``None``."""
        entity = self.by_key.get(key)
        if entity is None or self.world not in esper.list_worlds():
            return None
        handle = self.npcs.get(entity) or self.players[entity]
        with world_context(self.world):
            alive = esper.entity_exists(entity) and self._owns(entity, handle)
        return None if alive else handle

    def vanished(self, start: int, count: int) -> tuple[list[Handle], int]:
        """Of the ``count`` handles from position ``start`` of :attr:`order` (wrapping
        round), those whose entity esper deleted; and the position to start from next."""
        if not self.order or self.world not in esper.list_worlds():
            return [], 0
        gone: list[Handle] = []
        size = len(self.order)
        start %= size
        with world_context(self.world):
            for step in range(min(count, size)):
                key = self.order[(start + step) % size]
                entity = self.by_key[key]
                handle = self.npcs.get(entity) or self.players[entity]
                if not (esper.entity_exists(entity) and self._owns(entity, handle)):
                    gone.append(handle)
        return gone, (start + min(count, size)) % size

    # ------------------------------------------------------------------ lookups

    def entity(self, ref: Ref) -> int:
        """The live entity of ``ref``; :class:`UnknownEntityError` if it is none."""
        if isinstance(ref, str):
            entity = self.by_key.get(ref)
            if entity is None:
                raise UnknownEntityError(f"no NPC or player with key {ref!r} in world {self.world!r}")
            return entity
        if isinstance(ref, bool) or not isinstance(ref, int):
            raise InvalidArgumentError(f"expected an entity id or a key, got {ref!r}")
        if ref not in self.npcs and ref not in self.players:
            raise UnknownEntityError(f"entity {ref} is not an NPC or player of world {self.world!r}")
        return ref

    def handle(self, ref: Ref) -> Handle:
        """The live handle of ``ref``."""
        entity = self.entity(ref)
        return self.npcs.get(entity) or self.players[entity]

    def live(self, key: str) -> Handle | None:
        """The live handle registered under ``key``, if any."""
        entity = self.by_key.get(key)
        if entity is None:
            return None
        return self.npcs.get(entity) or self.players.get(entity)

    def live_npc(self, key: str) -> NpcHandle | None:
        """The live NPC registered under ``key``, if any."""
        entity = self.by_key.get(key)
        return None if entity is None else self.npcs.get(entity)

    def live_player(self, key: str) -> PlayerHandle | None:
        """The live player registered under ``key``, if any."""
        entity = self.by_key.get(key)
        return None if entity is None else self.players.get(entity)

    def npc_keys(self) -> list[str]:
        """Keys of every live NPC, in the order they were added."""
        return [h.identity.key for h in self.npcs.values()]

    def player_keys(self) -> list[str]:
        """Keys of every live player, in the order they were added."""
        return [h.identity.key for h in self.players.values()]


def _swap_remove(order: list[str], positions: dict[str, int], key: str) -> None:
    """Remove ``key`` from ``order`` in O(1): the last key takes its place."""
    position = positions.pop(key)
    last = order.pop()
    if position < len(order):
        order[position] = last
        positions[last] = position
