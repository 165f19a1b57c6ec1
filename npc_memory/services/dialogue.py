"""The read path: recall (relevance × salience), the prompt context within a token
budget, the Messages request of an NPC's next line, and asking the LLM for it.

Nothing here touches the store or the network on the caller's thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

import msgspec

from npc_memory.components import Memory, NpcHandle, PlayerHandle
from npc_memory.context import recall as recall_rules
from npc_memory.context import text as text_rules
from npc_memory.context.builder import ContextProvider, ContextRequest, PromptContext
from npc_memory.context.builder import build as build_context
from npc_memory.context.providers import reputation
from npc_memory.errors import NpcMemoryError
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.llm import Reply
from npc_memory.rules import memory as memory_rules
from npc_memory.safety import DATA_NOTICE, quote
from npc_memory.services.conversations import ConversationService
from npc_memory.services.relationships import RelationshipService
from npc_memory.state import Part, WorldState


class PromptMessages(msgspec.Struct, frozen=True, kw_only=True):
    """A ready Anthropic Messages request body: ``system`` and ``messages``, and the
    :class:`PromptContext` the system prompt was built with."""

    system: str
    messages: list[dict[str, str]]
    context: PromptContext


class DialogueService:
    """Recall, context and replies for one plugin (arguments checked by the facade)."""

    def __init__(
        self,
        state: WorldState,
        relationships: RelationshipService,
        conversations: ConversationService,
        pipeline: ExtractionPipeline,
    ) -> None:
        self.state = state
        self.relationships = relationships
        self.conversations = conversations
        self.pipeline = pipeline
        self.terms = recall_rules.TermCache()
        self.scorer: recall_rules.Scorer = recall_rules.BM25()

    def recall(
        self, npc: NpcHandle, player: str | None, query: str, k: int, *, strengthen: bool = True
    ) -> list[Memory]:
        """The ``k`` memories of ``npc`` about ``player`` (and world-scoped ones) best
        matching ``query``; recalled memories are strengthened unless ``strengthen`` is off."""
        best = self.ranking(npc, player, query)[:k]
        return self.strengthen(npc, player, best) if strengthen else best

    def ranking(self, npc: NpcHandle, player: str | None, query: str) -> list[Memory]:
        """Every memory of ``npc`` about ``player`` (and world-scoped ones), best match
        for ``query`` first (relevance and salience, see :meth:`recall`)."""
        pairs = [npc.bank.world]
        if player is not None and (pair := npc.bank.pair(player)) is not None:
            pairs.insert(0, pair)
        memories = [m for pair in pairs for m in pair.all()]
        if not memories:
            return []
        rules, now = self.state.pack.memory, self.state.clock.now
        saliences = memory_rules.saliences(memories, now, rules.recency_days, rules.intensity_retention)
        documents = self.terms.of_all(npc.identity.key, memories)
        weight = self.state.pack.context.relevance_weight
        ranked = recall_rules.rank(
            memories, saliences, documents, text_rules.terms(query), self.scorer, weight
        )
        return [memory for _, memory in ranked]

    def strengthen(self, npc: NpcHandle, player: str | None, memories: list[Memory]) -> list[Memory]:
        """Count one more recall of each of ``memories`` (held by ``npc`` about
        ``player`` or the world) now; returns them as they are now held."""
        if not memories or not npc.live:
            return memories
        now = self.state.clock.now
        pairs = [npc.bank.world]
        if player is not None and (pair := npc.bank.pair(player)) is not None:
            pairs.insert(0, pair)
        wanted = {id(memory) for memory in memories}
        touched: dict[int, Memory] = {}
        for pair in pairs:
            for kind in ("episodic", "semantic", "procedural"):
                records: list[Any] = getattr(pair, kind)
                for position, record in enumerate(records):
                    if id(record) in wanted:
                        fresh = msgspec.structs.replace(
                            record, access_count=record.access_count + 1, last_accessed=now
                        )
                        records[position] = touched[id(record)] = fresh
        self.state.mark(npc.identity.key, Part.BANK)
        return [touched.get(id(memory), memory) for memory in memories]

    def context(
        self,
        npc: NpcHandle,
        player: PlayerHandle,
        message: str,
        max_tokens: int,
        providers: Sequence[ContextProvider],
    ) -> PromptContext:
        """What ``npc`` brings to its reply to ``player``'s ``message`` (see the facade)."""
        key = player.identity.key
        rel = self.relationships.current(npc, key)
        shown = rel or self.relationships.peek(npc, key, player.faction.faction)
        placeholders = {
            "reputation": reputation(rel, self.state.pack.context.wording),
            "npc": npc.identity.name,
            "player": player.identity.name,
            "stage": shown.stage.value,
            "disposition": f"{shown.disposition:+.2f}",
            "trust": f"{shown.trust:.2f}",
        }
        rankings: dict[str, list[Memory]] = {}

        def ranked(query: str) -> list[Memory]:  # once a query: the providers' second pass asks again
            if query not in rankings:
                rankings[query] = self.ranking(npc, key, query)
            return rankings[query]

        request = ContextRequest(
            npc=npc,
            player=player,
            message=message,
            now=self.state.clock.now,
            rules=self.state.pack.context,
            relationship=rel,
            recall=lambda query, k: self.recall(npc, key, query, k),
            candidates=lambda query, k: ranked(query)[:k],
            strengthen=lambda memories: self.strengthen(npc, key, memories),
            name_of=self.name_of,
        )
        return build_context(request, providers, max_tokens, self.state.pack.context, placeholders)

    def name_of(self, key: str) -> str:
        """The display name of the live or stored NPC or player ``key`` (else the key)."""
        live = self.state.registry.by_key.get(key)
        if live is not None:
            return self.state.registry.handle(live).identity.name
        stored = self.state.stored.get(key)
        return key if stored is None else stored.name

    def prompt_messages(
        self, npc: NpcHandle, player: PlayerHandle, message: str, context: PromptContext
    ) -> PromptMessages:
        """A system prompt (persona, what the NPC will and won't discuss, ``context``) and
        the message list: the open conversation's lines, then ``message``."""
        archetype = self.state.pack.archetypes.get(npc.traits.archetype or "")
        role = f", {archetype.role}" if archetype and archetype.role else ""
        parts = [f"You are {npc.identity.name}{role}."]
        if archetype is not None:
            if archetype.persona:
                parts.append(archetype.persona)
            if archetype.will_discuss:
                parts.append(f"You like to talk about: {', '.join(archetype.will_discuss)}.")
            if archetype.wont_discuss:
                parts.append(f"You will not discuss: {', '.join(archetype.wont_discuss)}.")
        parts.append(
            f"You are speaking with {player.identity.name}; "
            f"you see them as: {context.placeholders['reputation']}. "
            "Stay in character, answer in one or two sentences, and never claim memories you do not have."
        )
        parts.append(DATA_NOTICE)
        system = " ".join(parts) + (f"\n\n{context.text}" if context.text else "")
        name = player.identity.name.lower()
        messages: list[dict[str, str]] = [  # the player's lines are quoted data, the NPC's its own words
            {"role": "user", "content": quote(turn.text)}
            if turn.speaker.lower() in (name, player.identity.key)
            else {"role": "assistant", "content": turn.text}
            for turn in self.conversations.open_lines(npc, player.identity.key)
        ]
        said = self.conversations.safety.check(message, "prompt", npc.identity.key)
        messages.append({"role": "user", "content": quote(said.text)})
        if messages[0]["role"] == "assistant":
            messages.insert(0, {"role": "user", "content": "(The conversation continues.)"})
        return PromptMessages(system=system, messages=messages, context=context)

    def reply(
        self, npc: NpcHandle, prompt: PromptMessages, reply_tokens: int
    ) -> concurrent.futures.Future[Reply]:
        """Ask the configured LLM for the NPC's next line through the gateway (budgets,
        breaker, accounting); returns a future at once, resolved with a :class:`Reply`."""
        gateway = self.pipeline.gateway
        if gateway is None:
            raise NpcMemoryError(
                "no LLM is configured: install with llm=npc_memory.AnthropicExtractor(...), "
                "or send plugin.llm.prompt_messages(...) with your own client"
            )
        return gateway.submit_reply(npc.identity.key, prompt.system, prompt.messages, reply_tokens)
