"""Moved to :mod:`npc_memory.llm.budget` (budgets, prices and the breaker serve every LLM
call, not only extraction); these names stay importable from here."""

from __future__ import annotations

from npc_memory.llm.budget import (
    FALLBACK_PRICE,
    PRICES,
    BreakerState,
    BudgetLimiter,
    CircuitBreaker,
    Price,
    price_of,
)

__all__ = ["FALLBACK_PRICE", "PRICES", "BreakerState", "BudgetLimiter", "CircuitBreaker", "Price", "price_of"]
