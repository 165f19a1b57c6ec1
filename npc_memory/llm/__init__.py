"""The one LLM gateway of the plugin and what it deals in.

Every LLM call — extraction, consolidation summaries, NPC replies — goes through one
:class:`LLMGateway` per plugin: budget check, reservation, the call on the one worker
thread under a deadline, settlement, circuit breaker, statistics (see
:mod:`npc_memory.llm.gateway`).

Layering: this package imports only the ground floor of ``npc_memory`` (``rules``,
``components``, ``content``, ``events``, ``errors``, ``clock``) and third-party
libraries. Importing it does not import ``anthropic``; :class:`LLMGateway` and
:class:`ClientSettings` are loaded on first use (``import anthropic`` takes ~2 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npc_memory.llm.budget import (
    FALLBACK_PRICE,
    PRICES,
    BreakerState,
    BudgetLimiter,
    CircuitBreaker,
    Price,
    price_of,
)
from npc_memory.llm.errors import MalformedOutputError
from npc_memory.llm.model import (
    PURPOSES,
    LLMRequest,
    LLMResult,
    Purpose,
    Refusal,
    Reply,
    SummaryOutcome,
    TokenUsage,
)
from npc_memory.llm.stats import LLMStats, PurposeStats

if TYPE_CHECKING:
    from npc_memory.llm.gateway import ClientSettings, LLMGateway


def __getattr__(name: str) -> object:
    # The gateway imports the Anthropic SDK (~2 s): only games that configure an LLM pay for it.
    if name in ("LLMGateway", "ClientSettings"):
        from npc_memory.llm import gateway

        return getattr(gateway, name)
    raise AttributeError(f"module 'npc_memory.llm' has no attribute {name!r}")


__all__ = [
    "FALLBACK_PRICE",
    "PRICES",
    "PURPOSES",
    "BreakerState",
    "BudgetLimiter",
    "CircuitBreaker",
    "ClientSettings",
    "LLMGateway",
    "LLMRequest",
    "LLMResult",
    "LLMStats",
    "MalformedOutputError",
    "Price",
    "Purpose",
    "PurposeStats",
    "Refusal",
    "Reply",
    "SummaryOutcome",
    "TokenUsage",
    "price_of",
]
