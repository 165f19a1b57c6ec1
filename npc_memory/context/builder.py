"""Prompt context: what an NPC brings to its next line, within a token budget.

Sections come from context providers (a protocol; built-ins in
:mod:`npc_memory.context.providers`), each given a share of ``max_tokens`` by the
budget manager. What is left of ``max_tokens`` once every provider has had its share
(the safety buffer included) flows to the providers that filled theirs, in the order of
``ContextRules.overflow`` (memories first). Tokens are estimated
with :func:`npc_memory.context.text.estimate_tokens`; the joined text never exceeds
``max_tokens`` by that estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from npc_memory.components import Memory, NpcHandle, PlayerHandle, Relationship
from npc_memory.content.schema import ContextRules
from npc_memory.context.text import estimate_tokens
from npc_memory.errors import InvalidArgumentError

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ContextRequest:
    """What a provider may look at: the NPC's and the player's components (read-only),
    the player's message, game time ``now`` (game seconds), the pack's context rules,
    and ``recall(query, k)``, the NPC's best ``k`` memories of the player (and of the
    world) for ``query`` (recalling strengthens them). ``candidates(query, k)`` ranks
    the same way without strengthening (None: ``recall`` is used), and
    ``strengthen(memories)`` strengthens the ones a provider did show; ``name_of(key)``
    names who told the NPC what it heard."""

    npc: NpcHandle
    player: PlayerHandle
    message: str
    now: float
    rules: ContextRules
    recall: Callable[[str, int], list[Memory]]
    relationship: Relationship | None = None
    """How the NPC regards the player now (drift applied); ``None`` reads the NPC's
    stored record."""
    candidates: Callable[[str, int], list[Memory]] | None = None
    strengthen: Callable[[list[Memory]], object] = lambda memories: None
    shown: dict[str, list[Memory]] = field(default_factory=dict)
    """Memories each provider showed in its latest rendering; strengthened once the
    context is built."""
    name_of: Callable[[str], str] = lambda key: key
    """The display name of an NPC or player by key (the key itself if unknown)."""


class ContextProvider(Protocol):
    """Renders one section of the context in at most ``budget`` estimated tokens
    (``None`` or "" when it has nothing to say). ``name`` keys its share in the pack."""

    name: str

    def render(self, request: ContextRequest, budget: int) -> str | None: ...


class PromptContext(msgspec.Struct, frozen=True, kw_only=True):
    """The context for one NPC line: ``text`` (the sections joined), ``sections`` by
    provider name, ``placeholders`` (``reputation``, ``npc``, ``player``, ``stage``, …)
    and ``tokens``, the estimate of ``text``."""

    text: str
    sections: dict[str, str]
    placeholders: dict[str, str]
    tokens: int


@dataclass
class TokenBudget:
    """Splits ``total`` tokens among providers: named shares first, the rest evenly."""

    total: int
    rules: ContextRules
    budgets: dict[str, int] = field(default_factory=dict)

    def split(self, providers: Sequence[ContextProvider]) -> dict[str, int]:
        """Tokens for each provider (after the safety buffer and the separators)."""
        usable = max(0, self.total - self.rules.safety_buffer - estimate_tokens(SEPARATOR) * len(providers))
        shared = {p.name: self.rules.shares[p.name] for p in providers if p.name in self.rules.shares}
        rest = [p.name for p in providers if p.name not in shared]
        remainder = max(0.0, 1.0 - sum(shared.values()))
        budgets = {name: int(usable * share) for name, share in shared.items()}
        for name in rest:
            budgets[name] = int(usable * remainder / len(rest))
        self.budgets = budgets
        return budgets


_FULL_WITHIN = 48
"""A section within this many tokens of its budget may have had more to say."""


def _render(request: ContextRequest, provider: ContextProvider, budget: int) -> str:
    text = provider.render(request, budget)
    if text is not None and not isinstance(text, str):
        raise InvalidArgumentError(
            f"context provider {provider.name!r} rendered {type(text).__name__}, not text or None"
        )
    return text or ""


def fit(lines: Iterable[str], budget: int, header: str = "") -> str:
    """``header`` and as many of ``lines`` (in order, consumed lazily) as fit in
    ``budget`` tokens; "" if not even one line fits."""
    text = header
    for line in lines:
        candidate = f"{text}\n{line}" if text else line
        if estimate_tokens(candidate) > budget:
            break
        text = candidate
    return text if text != header else ""


def build(
    request: ContextRequest,
    providers: Sequence[ContextProvider],
    max_tokens: int,
    rules: ContextRules,
    placeholders: dict[str, str],
) -> PromptContext:
    """Ask each provider for its section within its budget, let what is left flow to
    the providers that filled theirs, and join the sections in the providers' order."""
    budgets = TokenBudget(max_tokens, rules).split(providers)
    spent: dict[str, int] = {}
    first: list[str] = []
    for provider in providers:
        text = _render(request, provider, budgets[provider.name])
        spent[provider.name] = estimate_tokens(text)
        first += [text] if text else []
    # What is left of the whole budget (one token kept for each separator a section may add).
    left = max_tokens - estimate_tokens(SEPARATOR.join(first)) - len(providers)
    order = {name: i for i, name in enumerate(rules.overflow)}
    sections: dict[str, str] = {}
    for provider in sorted(providers, key=lambda p: order.get(p.name, len(order))):
        budget = budgets[provider.name]
        if left > 0 and spent[provider.name] > budget - _FULL_WITHIN:  # it had more to say
            budget = spent[provider.name] + left
        text = _render(request, provider, budget)
        left -= estimate_tokens(text) - spent[provider.name]
        if text:
            sections[provider.name] = text
    sections = {p.name: sections[p.name] for p in providers if p.name in sections}
    request.strengthen([memory for shown in request.shown.values() for memory in shown])
    joined = SEPARATOR.join(sections.values())
    while estimate_tokens(joined) > max_tokens and sections:  # a provider overspent: drop from the end
        last = list(sections)[-1]
        kept = sections[last].rsplit("\n", 1)[0] if "\n" in sections[last] else ""
        if kept:
            sections[last] = kept
        else:
            del sections[last]
        joined = SEPARATOR.join(sections.values())
    tokens = estimate_tokens(joined)
    return PromptContext(text=joined, sections=sections, placeholders=placeholders, tokens=tokens)
