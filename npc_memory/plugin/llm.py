"""``plugin.llm``: the model behind one installed plugin — who has their conversations
extracted by it, and the NPC's next line (a prompt for your own client, or a reply from
the configured one)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

from npc_memory.context.builder import PromptContext
from npc_memory.errors import InvalidArgumentError, NpcMemoryError
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.llm import Reply
from npc_memory.plugin.calls import check_installed
from npc_memory.rules.validation import check_flag, check_int, check_text
from npc_memory.services import DialogueService, PromptMessages, Resolver
from npc_memory.state import Ref, WorldState

ContextOf = Callable[[Ref, Ref, str, int], PromptContext]
"""``plugin.context(npc, player, message, max_tokens=...)``."""


class LlmCalls:
    """The LLM of one installed plugin (``plugin.llm``)."""

    def __init__(
        self,
        state: WorldState,
        resolve: Resolver,
        pipeline: ExtractionPipeline,
        dialogue: DialogueService,
        context: ContextOf,
    ) -> None:
        self._state = state
        self._resolve = resolve
        self._pipeline = pipeline
        self._dialogue = dialogue
        self._context = context

    def set_extraction(self, npc: Ref, use: bool | None, *, priority: bool = False) -> None:
        """Choose whether the LLM (when one is configured) extracts ``npc``'s
        conversations: ``True`` always (budgets permitting), ``False`` never (the rule
        reader does), ``None`` as the pack's ``[llm] extraction_archetypes`` says for its
        archetype (the default). ``priority``: it keeps the model once less than the
        pack's ``low_budget_share`` of the day's tokens is left, when others go to the
        rule reader (as do NPCs of ``priority_archetypes``). A game's choice lasts while
        the plugin is installed: make it again after ``add_npc`` when the game starts."""
        check_installed(self._state)
        key = self._resolve.npc(npc).identity.key
        if use is not None and not isinstance(use, bool):
            raise InvalidArgumentError(f"use must be True, False or None, got {use!r}")
        check_flag("priority", priority)
        if use is None:
            self._pipeline.chosen.pop(key, None)
        else:
            self._pipeline.chosen[key] = use
        if priority:
            self._pipeline.priority.add(key)
        else:
            self._pipeline.priority.discard(key)

    def prompt_messages(
        self, npc: Ref, player: Ref, message: str, *, max_tokens: int = 1000
    ) -> PromptMessages:
        """A system prompt (persona from the archetype, what the NPC will and won't
        discuss, the context) and the message list for an Anthropic Messages call: the
        open conversation's lines, then ``message`` from the player."""
        text = check_text("message", message, self._state.pack.limits.query_chars)
        context = self._context(npc, player, text, max_tokens)
        handle, target = self._resolve.npc(npc, stored=True), self._resolve.player(player, stored=True)
        return self._dialogue.prompt_messages(handle, target, text, context)

    def reply(
        self, npc: Ref, player: Ref, message: str, *, max_tokens: int = 1000, reply_tokens: int = 300
    ) -> concurrent.futures.Future[Reply]:
        """Ask the configured LLM for ``npc``'s next line to ``message``; returns at once
        with a future of a :class:`Reply`: ``text``, or ``failure`` (over budget, circuit
        open, timeout, API error, refusal, truncated), with its ``usage`` and ``cost_usd``
        (counted in ``plugin.extraction.stats``). Every future resolves, at the latest
        with "shut down" at uninstall. Raises if no LLM is configured; use
        :meth:`prompt_messages` with your own client then."""
        check_installed(self._state)
        if self._pipeline.gateway is None:
            raise NpcMemoryError(
                "no LLM is configured: install with llm=npc_memory.AnthropicExtractor(...), "
                "or send plugin.llm.prompt_messages(...) with your own client"
            )
        check_int("reply_tokens", reply_tokens, 1, 8192)
        prompt = self.prompt_messages(npc, player, message, max_tokens=max_tokens)
        return self._dialogue.reply(self._resolve.npc(npc), prompt, reply_tokens)
