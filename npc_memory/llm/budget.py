"""Cost control for LLM calls: token budgets, request rate, prices, a circuit breaker.

Budgets are in real (wall-clock) time, because they guard real money: a UTC day for
token budgets, a sliding minute for the request rate. The limiter and the breaker are
thread-safe (settlement happens on the LLM worker thread while ticks check and reserve).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from npc_memory.llm.model import TokenUsage


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, usage: TokenUsage) -> float:
        """The USD cost of ``usage``."""
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_write * self.cache_write
            + usage.cache_read * self.cache_read
        ) / 1_000_000


PRICES: dict[str, Price] = {
    "claude-haiku-4-5": Price(input=1.00, output=5.00, cache_write=1.25, cache_read=0.10),
    "claude-sonnet-4-5": Price(input=3.00, output=15.00, cache_write=3.75, cache_read=0.30),
    "claude-opus-4-5": Price(input=5.00, output=25.00, cache_write=6.25, cache_read=0.50),
}
"""Anthropic list prices in USD per million tokens (5-minute cache writes), as published
for these models in late 2025. A model not listed is costed at ``FALLBACK_PRICE``; pass
``prices=`` to ``AnthropicExtractor`` to use your own."""

FALLBACK_PRICE = PRICES["claude-opus-4-5"]
"""Price for unknown models: the most expensive listed, so costs are never understated."""


def price_of(model: str, prices: dict[str, Price] | None = None) -> Price:
    """The price of ``model`` (a dated snapshot name matches its base name)."""
    table = prices or PRICES
    for name, price in table.items():
        if model == name or model.startswith(name + "-"):
            return price
    return FALLBACK_PRICE


@dataclass
class BudgetLimiter:
    """Checks a call against the budgets before it is made, and settles it with the
    tokens it really used. Token counts include cache reads and writes."""

    daily_tokens: int
    npc_daily_tokens: int
    requests_per_minute: int
    now: Callable[[], float] = time.time
    spent_today: int = 0
    spent_by_npc: dict[str, int] = field(default_factory=dict)
    cost_today_usd: float = 0.0
    _day: int = -1
    _requests: deque[float] = field(default_factory=deque)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def check(self, npc: str, estimate: int) -> str | None:
        """``None`` if a call of ``estimate`` tokens for ``npc`` fits every budget now,
        else why not. Changes nothing."""
        with self._lock:
            self._roll_day()
            now = self.now()
            while self._requests and self._requests[0] <= now - 60.0:
                self._requests.popleft()
            if len(self._requests) >= self.requests_per_minute:
                return f"budget: {self.requests_per_minute} requests per minute reached"
            if self.spent_today + estimate > self.daily_tokens:
                return f"budget: daily tokens ({self.spent_today} of {self.daily_tokens} used)"
            npc_spent = self.spent_by_npc.get(npc, 0)
            if npc_spent + estimate > self.npc_daily_tokens:
                return f"budget: daily tokens for {npc} ({npc_spent} of {self.npc_daily_tokens} used)"
            return None

    def share_left(self) -> float:
        """The share of today's ``daily_tokens`` not yet spent or reserved, in [0, 1]."""
        with self._lock:
            self._roll_day()
            return max(0.0, 1.0 - self.spent_today / self.daily_tokens)

    def reserve(self, npc: str, estimate: int) -> None:
        """Count one request and ``estimate`` tokens for ``npc`` (after :meth:`check`)."""
        with self._lock:
            self._requests.append(self.now())
            self._charge(npc, estimate)

    def settle(self, npc: str, estimate: int, usage: TokenUsage | None, cost_usd: float = 0.0) -> None:
        """Replace a reservation by what the call really used (``None``: nothing, because
        it failed before the API counted anything)."""
        with self._lock:
            self._roll_day()
            self._charge(npc, (usage.total if usage else 0) - estimate)
            self.cost_today_usd += cost_usd

    def _charge(self, npc: str, tokens: int) -> None:
        self.spent_today = max(0, self.spent_today + tokens)
        self.spent_by_npc[npc] = max(0, self.spent_by_npc.get(npc, 0) + tokens)

    def _roll_day(self) -> None:
        day = int(self.now() // 86_400)
        if day != self._day:
            self._day = day
            self.spent_today = 0
            self.spent_by_npc.clear()
            self.cost_today_usd = 0.0


class BreakerState(StrEnum):
    """Closed: calls flow. Open: calls are refused until the cooldown ends. Half-open:
    one trial call decides between closed and open."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass
class CircuitBreaker:
    """Stops calling a failing API: ``failure_threshold`` consecutive failures open the
    circuit for ``cooldown`` seconds; then one trial call is let through."""

    failure_threshold: int = 5
    cooldown: float = 60.0
    now: Callable[[], float] = time.time
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0
    opened_at: float = 0.0
    _trial_in_flight: bool = False
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def allow(self) -> bool:
        """Whether a call may be made now (in half-open state, only one at a time)."""
        with self._lock:
            if self.state is BreakerState.OPEN:
                if self.now() - self.opened_at < self.cooldown:
                    return False
                self.state = BreakerState.HALF_OPEN
            if self.state is BreakerState.HALF_OPEN:
                if self._trial_in_flight:
                    return False
                self._trial_in_flight = True
            return True

    def record_success(self) -> None:
        """A call succeeded: close the circuit."""
        with self._lock:
            self.state, self.failures, self._trial_in_flight = BreakerState.CLOSED, 0, False

    def record_failure(self) -> None:
        """A call failed: count it, and open the circuit at the threshold (at once when
        the trial call of a half-open circuit fails)."""
        with self._lock:
            self.failures += 1
            if self.state is BreakerState.HALF_OPEN or self.failures >= self.failure_threshold:
                self.state, self.opened_at = BreakerState.OPEN, self.now()
            self._trial_in_flight = False

    def release(self) -> None:
        """A call ended without a verdict on the API (cancelled, shut down): count
        nothing, and let a half-open circuit try another trial call."""
        with self._lock:
            self._trial_in_flight = False
