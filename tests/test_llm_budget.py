"""Budget limiter, price table, circuit breaker, statistics and output validation in isolation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npc_memory.extraction.model import MAX_MEMORIES
from npc_memory.extraction.validate import MAX_READ, parse_memories, parse_memories_json
from npc_memory.llm import (
    FALLBACK_PRICE,
    PRICES,
    BreakerState,
    BudgetLimiter,
    CircuitBreaker,
    LLMRequest,
    LLMStats,
    MalformedOutputError,
    TokenUsage,
    price_of,
)
from npc_memory.llm.summary import MAX_SUMMARY, SummaryOut
from npc_memory.rules.tokens import estimate_tokens
from npc_memory.rules.validation import MAX_TAG_CHARS


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


def test_a_released_trial_lets_another_through_without_a_verdict() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, cooldown=10.0, now=lambda: now[0])
    breaker.record_failure()
    now[0] = 10.0
    assert breaker.allow() and not breaker.allow()
    breaker.release()  # the trial was cancelled
    assert breaker.state is BreakerState.HALF_OPEN and breaker.failures == 1
    assert breaker.allow()


def test_the_reservation_is_the_one_token_estimate_of_everything_sent() -> None:
    request = LLMRequest(
        system=({"type": "text", "text": "a" * 400},), messages=({"role": "user", "content": "b" * 40},),
        max_tokens=300, parse=str, options={"output_config": {"format": {"type": "json_schema", "schema": {}}}},
    )
    prompt, output = request.estimate()
    assert output == 300 and prompt == estimate_tokens(request.prompt_text())
    assert "a" * 400 in request.prompt_text() and "json_schema" in request.prompt_text()
    assert LLMRequest(system="s" * 8, messages=[], max_tokens=1, parse=str).estimate() == (2, 1)


def test_statistics_add_up_over_purposes() -> None:
    stats = LLMStats()
    stats["extraction"].tokens, stats["reply"].tokens, stats["summary"].cost_usd = 10, 5, 0.5
    stats["reply"].calls = stats["reply"].failures = 2
    assert (stats.tokens, stats.calls, stats.failures, stats.cost_usd) == (15, 2, 2, 0.5)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "expected an object with a 'memories' list"),
        ({"memories": "none"}, "expected an object"),
        ({"memories": ["text"]}, r"memories\[0\] is not an object"),
        ({"memories": [{"content": "x", "tags": "trade"}]}, r"memories\[0\]\.tags is not a list"),
        ({"memories": [{"content": "x", "importance": float("nan")}]}, "not a finite number"),
        ({"memories": [{"content": "x", "intensity": True}]}, "not a finite number"),
        ({"memories": [{"content": "x", "importance": "very"}]}, r"^memories\[0\]\.importance is not a finite number: 'very'$"),
        ({"memories": [{"content": "x", "importance": None}, {"content": "y", "intensity": "z"}]}, r"\(and 1 more problem\)$"),
    ],
)
def test_structurally_wrong_output_is_malformed(payload: object, message: str) -> None:
    with pytest.raises(MalformedOutputError, match=message):
        parse_memories(payload)


def test_json_answers_name_what_is_wrong() -> None:
    with pytest.raises(MalformedOutputError, match=r"^not JSON: "):
        parse_memories_json("Sure! Here are the memories: {oops")
    with pytest.raises(MalformedOutputError, match=r"^expected an object with a 'memories' list$"):
        parse_memories_json('{"memory": []}')
    assert parse_memories_json('{"memories": [], "note": "extra keys are ignored"}') == ()


def test_missing_fields_take_their_defaults() -> None:
    [memory] = parse_memories({"memories": [{"content": "  Alice waved.  "}]})
    assert (memory.content, memory.kind, memory.tags, memory.importance, memory.valence, memory.intensity) == (
        "Alice waved.", "episodic", (), 0.5, "neutral", 0.0)


def test_only_the_first_items_of_a_long_list_are_read() -> None:
    items = [{"content": f"m{i}", "importance": 0.1} for i in range(MAX_READ)] + [{"content": "late", "importance": 1.0}]
    items += [{"content": "broken", "importance": "x"}] * 1000
    memories = parse_memories({"memories": items})
    assert len(memories) == MAX_MEMORIES and "late" not in {m.content for m in memories}


def test_summaries_are_stripped_cut_and_never_empty() -> None:
    assert SummaryOut.model_validate({"summary": "  " + "s" * 400}).summary == "s" * MAX_SUMMARY
    with pytest.raises(ValueError, match="is empty"):
        SummaryOut.model_validate({"summary": "   "})


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
        assert len(memory.tags) <= 8 and all(t == t.lower() and 0 < len(t) <= MAX_TAG_CHARS for t in memory.tags)
    importances = [m.importance for m in memories]
    assert importances == sorted(importances, reverse=True)
