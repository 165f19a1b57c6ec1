"""``plugin.privacy``: what a player may ask of the game about their data, and what the
game ends — forgetting a player, ending a game, consent, cloning an NPC's general
memories — each recorded in the audit log."""

from __future__ import annotations

from collections.abc import Iterable

from npc_memory.errors import InvalidArgumentError
from npc_memory.plugin.calls import check_installed, delivers
from npc_memory.rules.privacy import CLONE_CATEGORIES
from npc_memory.rules.validation import MAX_KEY_CHARS, check_flag, check_text
from npc_memory.services import Resolver
from npc_memory.services.privacy import ClonePlan, ConsentReport, EndGameReport, ForgetReport, PrivacyService
from npc_memory.state import Ref, WorldState
from npc_memory.store import NpcDocument


class PrivacyCalls:
    """The privacy requests of one installed plugin (``plugin.privacy``)."""

    def __init__(self, state: WorldState, resolve: Resolver, privacy: PrivacyService) -> None:
        self._state = state
        self._resolve = resolve
        self._privacy = privacy
        self.resumed: list[ForgetReport | ConsentReport | EndGameReport] = privacy.resume()
        """Forgetting that a crash interrupted and this start finished (see
        :meth:`forget_player`), and on a world game servers share, the withdrawals of
        consent and ends of games under way that this start did its part of."""

    @delivers
    def forget_player(self, player: Ref, *, actor: str = "plugin") -> ForgetReport:
        """Forget a player everywhere: the player (live or only in the store), every
        NPC's memories about them and relationship with them, facts about them or
        naming them (gossip copies included), their open conversations, conversation
        summaries and waiting extraction work (a result still in flight is dropped when
        it arrives), summaries and habits derived from them, their faction standing,
        and — with a store — every generation on disk: the journal is folded and
        emptied, older generations (``.prev``), damaged copies (``.broken``) and
        temporary files that mention them are scrubbed, and their document is
        deleted. The key and name then appear in no store file and no later export.

        Idempotent (an unknown key is forgotten again harmlessly); takes time in
        proportion to the world and waits for the store. Crash-safe: a kill in the
        middle leaves a record the next ``install`` finds; it finishes the forgetting
        (see :attr:`resumed`) and the audit log says so. ``actor`` names who asked
        (recorded in the audit log, where the player appears only as a salted
        pseudonym)."""
        return self._privacy.forget_player(self._player_key(player), actor=_actor(actor))

    @delivers
    def end_game(self, game_id: str | None = None, *, actor: str = "plugin") -> EndGameReport:
        """End game ``game_id`` (default: the current one, ``install(game_id=...)``):
        its ``session`` and ``anon`` memories and facts are purged — or, with the
        pack's ``privacy.end_game = "compact"``, folded into a few ``social`` memories
        per NPC that name no player — as are the open conversations and summaries of
        players who have not consented and everything held about anonymous
        participants (the stored documents of those no longer in the live world
        included). Saved at once; recorded in the audit log. On a PostgreSQL world
        game servers share, the others end it in their NPCs when they next poll the
        store (the report's ``waiting``: the servers still to)."""
        if game_id is not None:
            game_id = check_text("game_id", game_id, MAX_KEY_CHARS)
        return self._privacy.end_game(game_id, actor=_actor(actor))

    @delivers
    def set_consent(self, player: Ref, consent: bool, *, actor: str = "plugin") -> ConsentReport:
        """Record whether ``player`` agrees to be remembered across games. Withdrawn:
        their ``player`` and ``social`` memories and facts become ``anon`` fragments of
        the current game with their name and key taken out (the next ``end_game``
        removes them), or are purged (pack ``privacy.withdrawn_consent = "purge"``).
        Given again: new memories are ``player``-scoped; nothing already anonymised
        is linked back. Recorded in the audit log. On a PostgreSQL world game
        servers share, a withdrawal reaches the other servers' NPCs when they next
        poll the store (the report's ``waiting``: the servers still to)."""
        check_flag("consent", consent)
        return self._privacy.set_consent(self._player_key(player), consent, actor=_actor(actor))

    @delivers
    def clone(
        self,
        source_npc: Ref,
        target_npc: Ref,
        categories: Iterable[str] = ("profile", "social", "knowledge"),
        *,
        dry_run: bool = True,
        actor: str = "plugin",
    ) -> ClonePlan:
        """Copy ``source_npc``'s general memories to ``target_npc``: ``profile`` and
        ``social`` world memories, and ``knowledge`` (facts about no player). Never
        copied: memories about a player, ``session`` and ``anon`` items, anything
        tagged sensitive or game-only (pack ``privacy.sensitive_tags``), flagged by
        the safety filter, or naming a player who has not consented. Each copy records
        ``cloned_from`` and ``cloned_at``. ``dry_run`` (the default) returns the plan
        without writing; a real run copies exactly what the dry run listed. Both are
        recorded in the audit log."""
        source = self._resolve.npc(source_npc, stored=True)
        target = self._resolve.npc(target_npc, stored=True)
        if source.identity.key == target.identity.key:
            raise InvalidArgumentError("clone needs two different NPCs")
        if isinstance(categories, str) or not isinstance(categories, Iterable):
            raise InvalidArgumentError(f"categories must be a list of names, got {categories!r}")
        chosen = list(dict.fromkeys(categories))
        unknown = [c for c in chosen if c not in CLONE_CATEGORIES]
        if unknown or not chosen:
            raise InvalidArgumentError(
                f"categories must be some of {', '.join(CLONE_CATEGORIES)}, got {list(categories)!r}"
            )
        check_flag("dry_run", dry_run)
        return self._privacy.clone(source, target, chosen, dry_run=dry_run, actor=_actor(actor))

    def _player_key(self, player: Ref) -> str:
        """The key of a live or stored player, or of one known only by key (forgotten)."""
        check_installed(self._state)
        if isinstance(player, str):
            key = check_text("player", player, MAX_KEY_CHARS)
            if self._state.registry.live_npc(key) is not None or isinstance(
                self._state.stored.get(key), NpcDocument
            ):
                raise InvalidArgumentError(f"{key!r} is an NPC, not a player")
            return key
        return self._resolve.player(player).identity.key


def _actor(actor: str) -> str:
    return check_text("actor", actor, MAX_KEY_CHARS)
