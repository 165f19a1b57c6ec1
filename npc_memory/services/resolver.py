"""Turning what callers pass (entity ids, keys) into handles: live NPCs and players,
or, for reads, ones the store holds that are not in the live world."""

from __future__ import annotations

from npc_memory.components import SELF, NpcHandle, PlayerHandle
from npc_memory.errors import UnknownEntityError
from npc_memory.rules.validation import MAX_KEY_CHARS, check_text
from npc_memory.services.persistence import handle_of
from npc_memory.state import Ref, WorldState


class Resolver:
    """Resolves refs against the registry, then (``stored=True``) the stored documents."""

    def __init__(self, state: WorldState) -> None:
        self.state = state

    def npc(self, ref: Ref, *, stored: bool = False) -> NpcHandle:
        """The NPC ``ref`` names: live, or with ``stored`` a read-only stored one."""
        registry = self.state.registry
        entity = registry.by_key.get(ref) if isinstance(ref, str) else ref
        live = registry.npcs.get(entity) if type(entity) is int else None
        if live is not None:
            return live
        handle = self._stored(ref) if stored else None
        if handle is None:
            handle = self.state.registry.handle(ref)
        if not isinstance(handle, NpcHandle):
            raise UnknownEntityError(f"{handle.identity.key!r} is a player, not an NPC")
        return handle

    def player(self, ref: Ref, *, stored: bool = False) -> PlayerHandle:
        """The player ``ref`` names: live, or with ``stored`` a read-only stored one."""
        registry = self.state.registry
        entity = registry.by_key.get(ref) if isinstance(ref, str) else ref
        live = registry.players.get(entity) if type(entity) is int else None
        if live is not None:
            return live
        handle = self._stored(ref) if stored else None
        if handle is None:
            handle = self.state.registry.handle(ref)
        if not isinstance(handle, PlayerHandle):
            raise UnknownEntityError(f"{handle.identity.key!r} is an NPC, not a player")
        return handle

    def subject(self, subject: Ref) -> str:
        """The key a fact about ``subject`` is filed under (an NPC, a player, or any name)."""
        if isinstance(subject, str) and subject not in self.state.registry.by_key:
            return check_text("subject", subject, MAX_KEY_CHARS)  # a stored or absent player, or a name
        return self.state.registry.handle(subject).identity.key

    def speaker(self, speaker: str, npc: NpcHandle, player: PlayerHandle) -> str:
        """Who said a line of ``npc``'s conversation with ``player``, as the transcript
        names them: either of the two by name, key or first name ("Oswin" for "Oswin
        Brook": then their name), or another NPC or player the plugin knows (live: by
        name or key; stored: by key) as given. Anyone else raises
        :class:`UnknownEntityError`."""
        folded = speaker.casefold()
        for handle in (npc, player):
            name = handle.identity.name
            if folded in (name.casefold(), handle.identity.key.casefold()):
                return speaker
            if folded == name.split(maxsplit=1)[0].casefold():
                return name
        registry = self.state.registry
        if speaker in registry.by_key or speaker in self.state.stored or folded in registry.by_name:
            return speaker
        raise UnknownEntityError(
            f"speaker {speaker!r} is neither {npc.identity.name!r} ({npc.identity.key!r}) nor "
            f"{player.identity.name!r} ({player.identity.key!r}), nor another NPC or player the plugin knows"
        )

    def actor(self, ref: Ref | None, what: str = "actor") -> str | None:
        """The ``actor`` (or ``teller``) of a memory ``ref`` names: :data:`SELF` (the NPC
        holding it), ``None`` (unknown), or the key of an NPC or player, live or stored."""
        if ref is None or ref == SELF:
            return ref
        problem = f"{what} must be 'self', None, or a known NPC or player (entity or key), got {ref!r}"
        if isinstance(ref, str) and ref not in self.state.registry.by_key:
            if ref in self.state.stored:
                return ref
            raise UnknownEntityError(problem)
        try:
            return self.state.registry.handle(ref).identity.key
        except UnknownEntityError:
            raise UnknownEntityError(problem) from None

    def _stored(self, ref: Ref) -> NpcHandle | PlayerHandle | None:
        if not isinstance(ref, str) or ref in self.state.registry.by_key:
            return None
        document = self.state.stored.get(ref)
        return None if document is None else handle_of(document)
