"""Budget limiter, price table, circuit breaker and output validation in isolation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npc_memory.extraction.budget import (
    FALLBACK_PRICE,
    PRICES,
    BreakerState,
    BudgetLimiter,
    CircuitBreaker,
    price_of,
)
from npc_memory.extraction.model import MAX_MEMORIES, TokenUsage
from npc_memory.extraction.validate import MalformedOutputError, parse_memories


def test_daily_and_per_npc_budgets_with_settlement_and_a_new_day() -> None:
    now = [86_400.0 * 10 + 5]
    limiter = BudgetLimiter(daily_tokens=1000, npc_daily_tokens=600, requests_per_minute=100, now=lambda: now[0])
    assert limiter.check("hilda", 500) is None
    limiter.reserve("hilda", 500)
    assert limiter.check("hilda", 200) == "budget: daily tokens for hilda (500 of 600 used)"
    limiter.settle("hilda", 500, TokenUsage(input=100, output=50, cache_read=50), cost_usd=0.01)
    assert (limiter.spent_today, limiter.spent_by_npc["hilda"]) == (200, 200)
    limiter.reserve("brandt", 600)
    assert limiter.check("marta", 300) == "budget: daily tokens (800 of 1000 used)"
    limiter.settle("brandt", 600, None)  # failed before any tokens were counted
    assert limiter.spent_today == 200 and limiter.cost_today_usd == 0.01
    now[0] += 86_400  # a new UTC day
    assert limiter.check("hilda", 600) is None and limiter.spent_today == 0


def test_requests_per_minute_slides() -> None:
    now = [0.0]
    limiter = BudgetLimiter(daily_tokens=10**9, npc_daily_tokens=10**9, requests_per_minute=2, now=lambda: now[0])
    for _ in range(2):
        assert limiter.check("n", 1) is None
        limiter.reserve("n", 1)
    assert limiter.check("n", 1) == "budget: 2 requests per minute reached"
    now[0] = 60.5
    assert limiter.check("n", 1) is None


def test_prices() -> None:
    usage = TokenUsage(input=1_000_000, output=1_000_000, cache_write=1_000_000, cache_read=1_000_000)
    assert price_of("claude-haiku-4-5").cost(usage) == pytest.approx(1 + 5 + 1.25 + 0.1)
    assert price_of("claude-haiku-4-5-20251001") is PRICES["claude-haiku-4-5"]
    assert price_of("some-future-model") is FALLBACK_PRICE
    assert usage.total == 4_000_000


def test_breaker_closed_open_half_open() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=3, cooldown=10.0, now=lambda: now[0])
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED
    breaker.record_success()
    assert breaker.failures == 0
    for _ in range(3):
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    now[0] = 10.0
    assert breaker.allow() and breaker.state is BreakerState.HALF_OPEN
    assert not breaker.allow()  # one trial at a time
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    now[0] = 20.0
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.allow() and breaker.allow()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "expected an object with a 'memories' list"),
        ({"memories": "none"}, "expected an object"),
        ({"memories": ["text"]}, r"memories\[0\] is not an object"),
        ({"memories": [{"content": "x", "tags": "trade"}]}, r"memories\[0\]\.tags is not a list"),
        ({"memories": [{"content": "x", "importance": float("nan")}]}, "not a finite number"),
        ({"memories": [{"content": "x", "intensity": True}]}, "not a finite number"),
    ],
)
def test_structurally_wrong_output_is_malformed(payload: object, message: str) -> None:
    with pytest.raises(MalformedOutputError, match=message):
        parse_memories(payload)


item = st.fixed_dictionaries(
    {"content": st.text(max_size=900)},
    optional={
        "kind": st.sampled_from(["episodic", "semantic", "procedural", "dream", ""]),
        "valence": st.sampled_from(["positive", "neutral", "negative", "meh"]),
        "importance": st.floats(-1e6, 1e6),
        "intensity": st.integers(-100, 100),
        "tags": st.lists(st.text(max_size=60), max_size=12),
    },
)


@given(st.lists(item, max_size=8))
def test_whatever_the_llm_says_what_survives_is_clamped(items: list[dict[str, object]]) -> None:
    memories = parse_memories({"memories": items})
    assert len(memories) <= MAX_MEMORIES
    for memory in memories:
        assert memory.content.strip() and len(memory.content) <= 500
        assert 0.0 <= memory.importance <= 1.0 and 0.0 <= memory.intensity <= 1.0
        assert not math.isnan(memory.importance)
        assert memory.kind in ("episodic", "semantic", "procedural")
        assert memory.valence in ("positive", "neutral", "negative")
        assert len(memory.tags) <= 8 and all(t == t.lower() and 0 < len(t) <= 32 for t in memory.tags)
    importances = [m.importance for m in memories]
    assert importances == sorted(importances, reverse=True)
