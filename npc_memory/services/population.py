"""Who is in the live world: adding NPCs and players (restoring their stored state),
removing them, and noticing when esper deleted their entities behind the plugin's back."""

from __future__ import annotations

from typing import TypeVar

from npc_memory.components import (
    FactionMember,
    Handle,
    Identity,
    KnowledgeBase,
    Location,
    MemoryBank,
    NpcHandle,
    NpcTraits,
    PlayerHandle,
    PlayerProfile,
    Relationships,
    WorkingMemory,
)
from npc_memory.errors import DuplicateKeyError, PrivacyError, UnknownContentError
from npc_memory.services.conversations import ConversationService
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.persistence import PersistenceService
from npc_memory.state import WorldState
from npc_memory.store import NpcDocument, PlayerDocument

_D = TypeVar("_D", NpcDocument, PlayerDocument)


class PopulationService:
    """Adds and removes the plugin's NPCs and players (arguments checked by the facade)."""

    def __init__(
        self,
        state: WorldState,
        persistence: PersistenceService,
        knowledge: KnowledgeService,
        conversations: ConversationService,
    ) -> None:
        self.state = state
        self.persistence = persistence
        self.knowledge = knowledge
        self.conversations = conversations

    def free_stale_key(self, key: str) -> None:
        """If ``key``'s entity was deleted from esper without ``remove``, keep what it
        held and free the key now (the next tick would have)."""
        stale = self.state.registry.stale(key)
        if stale is not None:
            self.vanish(stale)

    def _claim(self, entity: int | None) -> int:
        """The entity to attach to; a handle whose deleted entity esper reused for it is
        let go first (kept, its key freed)."""
        entity, stale = self.state.registry.claim(entity)
        if stale is not None:
            self.vanish(stale)
        return entity

    def saved(self, key: str, kind: type[_D]) -> _D | None:
        """The stored document of ``key`` if it is of ``kind``; a stored document of the
        other kind is a :class:`DuplicateKeyError`."""
        saved = self.state.stored.get(key)
        if saved is None or isinstance(saved, kind):
            return saved
        what = "NPC" if isinstance(saved, NpcDocument) else "player"
        raise DuplicateKeyError(f"key {key!r} belongs to a stored {what}")

    def add_npc(
        self,
        entity: int | None,
        key: str,
        name: str | None,
        faction: str | None,
        archetype: str | None,
        room: str | None,
    ) -> NpcHandle:
        """Make ``entity`` an NPC: attach its components (restored from the store when it
        holds ``key``), learn the pack's authored facts for it."""
        pack = self.state.pack
        self.saved(key, NpcDocument)
        self.persistence.claim(key, NpcDocument)
        saved = self.saved(key, NpcDocument)
        display = name if name is not None else (saved.name if saved is not None else key)
        if saved is not None:
            archetype = saved.archetype if archetype is None else archetype
            faction = saved.faction if faction is None else faction
            room = saved.room if room is None else room
        traits = NpcTraits()
        if archetype is not None:
            arch = pack.archetypes.get(archetype)
            if arch is None:
                raise UnknownContentError(
                    f"unknown archetype {archetype!r} for NPC {key!r}; pack "
                    f"{pack.pack.name!r} defines: {', '.join(sorted(pack.archetypes))}"
                )
            faction = arch.faction if faction is None else faction
            traits = NpcTraits(archetype=archetype, **arch.traits.model_dump())
        self._check_faction(faction, key)
        handle = NpcHandle(
            entity=None,
            identity=Identity(key=key, name=display),
            faction=FactionMember(faction=faction),
            location=Location(room),
            traits=traits,
            bank=MemoryBank() if saved is None else saved.bank,
            relationships=Relationships() if saved is None else saved.relationships,
            working=WorkingMemory() if saved is None else saved.working,
            knowledge=KnowledgeBase() if saved is None else saved.knowledge,
        )
        self.state.registry.attach(handle, self._claim(entity))
        self.state.stored.pop(key, None)
        self.knowledge.learn_authored(handle)
        if saved is None or (saved.name, saved.faction, saved.archetype) != (
            display,
            faction,
            traits.archetype,
        ):
            self.state.mark(key)
        if saved is not None:
            self.conversations.resume(handle)
        self.conversations.unpark()
        return handle

    def add_player(
        self,
        entity: int | None,
        key: str,
        name: str | None,
        faction: str | None,
        room: str | None,
        consent: bool | None,
        anonymous: bool | None,
    ) -> PlayerHandle:
        """Make ``entity`` a player (restored from the store when it holds ``key``)."""
        self.saved(key, PlayerDocument)
        self.persistence.claim(key, PlayerDocument)
        saved = self.saved(key, PlayerDocument)
        display = name if name is not None else (saved.name if saved is not None else key)
        if saved is not None:
            faction = saved.faction if faction is None else faction
            room = saved.room if room is None else room
            consent = saved.profile.consent if consent is None else consent
            anonymous = saved.profile.anonymous if anonymous is None else anonymous
        self._check_faction(faction, key)
        if consent and anonymous:
            raise PrivacyError(f"player {key!r} cannot be both anonymous and consenting")
        handle = PlayerHandle(
            entity=None,
            identity=Identity(key=key, name=display),
            faction=FactionMember(faction=faction),
            location=Location(room),
            profile=PlayerProfile(consent=bool(consent), anonymous=bool(anonymous)),
        )
        self.state.registry.attach(handle, self._claim(entity))
        self.state.stored.pop(key, None)
        if saved is None or (saved.name, saved.faction, saved.profile) != (display, faction, handle.profile):
            self.state.mark(key)
        self.conversations.unpark()
        return handle

    def remove(self, handle: Handle, *, forget: bool = False) -> None:
        """Take ``handle`` out of the live world; keep its document unless ``forget``."""
        key = handle.identity.key
        self.state.registry.detach(handle)
        if forget:
            self.conversations.drop_jobs_of(key)
            self.persistence.forget(key)
        else:
            self.persistence.keep(handle)

    def forget_stored(self, key: str) -> None:
        """Delete a stored (not live) NPC or player from the store."""
        self.conversations.drop_jobs_of(key)
        self.persistence.forget(key)

    def vanish(self, handle: Handle) -> None:
        """``handle``'s entity is gone from esper: keep what it held, free its key."""
        self.remove(handle)

    def _check_faction(self, faction: str | None, key: str) -> None:
        pack = self.state.pack
        if faction is not None and faction not in pack.factions:
            raise UnknownContentError(
                f"unknown faction {faction!r} for {key!r}; pack {pack.pack.name!r} "
                f"defines: {', '.join(sorted(pack.factions))}"
            )
