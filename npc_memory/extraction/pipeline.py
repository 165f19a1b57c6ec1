"""The extraction pipeline: a bounded queue of jobs, LLM calls in flight, results
ready to apply. The ExtractionSystem drives it one budgeted tick at a time; nothing
here waits on the network."""

from __future__ import annotations

import concurrent.futures
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from npc_memory.content.schema import Budgets, LlmRules
from npc_memory.extraction.budget import BudgetLimiter, CircuitBreaker
from npc_memory.extraction.model import ExtractionJob, ExtractionResult, LLMOutcome
from npc_memory.extraction.rules import RuleBasedExtractor

if TYPE_CHECKING:  # importing the worker imports `anthropic` (~2 s): only when an LLM is configured
    from npc_memory.extraction.anthropic import LLMWorker


@dataclass
class ExtractionStats:
    """Counters since install: jobs queued, results applied, jobs dropped on overflow,
    duplicates skipped, LLM calls and their failures, fallbacks to the rules by reason,
    tokens used and their cost in USD."""

    queued: int = 0
    applied: int = 0
    dropped: int = 0
    duplicates: int = 0
    llm_calls: int = 0
    llm_failures: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class _InFlight:
    job: ExtractionJob
    estimate: int
    future: concurrent.futures.Future[LLMOutcome]


class ExtractionPipeline:
    """Queue → (LLM worker | rules) → ready results. ``worker`` is ``None`` offline."""

    def __init__(
        self,
        budgets: Budgets,
        llm: LlmRules,
        worker: LLMWorker | None = None,
        limiter: BudgetLimiter | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.budgets = budgets
        self.llm = llm
        self.worker = worker
        self.limiter = limiter or BudgetLimiter(
            llm.daily_tokens, llm.npc_daily_tokens, llm.requests_per_minute
        )
        self.breaker = breaker or CircuitBreaker(llm.breaker_failures, llm.breaker_cooldown)
        self.rules = RuleBasedExtractor()
        self.stats = ExtractionStats()
        self.queue: deque[ExtractionJob] = deque()
        self.in_flight: list[_InFlight] = []
        self.ready: deque[ExtractionResult] = deque()
        self.parked: list[ExtractionResult] = []

    def enqueue(self, job: ExtractionJob) -> bool:
        """Queue ``job``; ``False`` (and nothing queued) when the queue is full."""
        if len(self.queue) >= self.budgets.extraction_queue:
            return False
        self.queue.append(job)
        self.stats.queued += 1
        return True

    def restore(self, jobs: Iterable[ExtractionJob]) -> None:
        """Queue jobs saved before a restart, whatever the queue's bound."""
        self.queue.extend(jobs)

    def extract_now(self, job: ExtractionJob, reason: str) -> ExtractionResult:
        """Extract ``job`` with the rules, synchronously."""
        self.stats.fallbacks[reason] = self.stats.fallbacks.get(reason, 0) + 1
        return ExtractionResult(job=job, memories=self.rules.extract(job), source="rules", reason=reason)

    def tick(self) -> list[ExtractionResult]:
        """Collect finished calls, dispatch at most ``extraction_dispatch_per_tick`` jobs,
        and return at most ``extraction_apply_per_tick`` results to apply."""
        self._collect()
        self._dispatch()
        count = min(self.budgets.extraction_apply_per_tick, len(self.ready))
        return [self.ready.popleft() for _ in range(count)]

    def pending(self) -> list[ExtractionJob]:
        """Every job not yet applied (queued, in flight, ready or parked), oldest first."""
        return [
            *(r.job for r in self.parked),
            *(r.job for r in self.ready),
            *(f.job for f in self.in_flight),
            *self.queue,
        ]

    def close(self) -> None:
        """Stop the LLM worker (calls in flight are abandoned; their jobs stay pending)."""
        if self.worker is not None:
            for flight in self.in_flight:
                flight.future.cancel()
            self.worker.close()

    def _dispatch(self) -> None:
        for _ in range(self.budgets.extraction_dispatch_per_tick):
            if not self.queue:
                return
            job = self.queue[0]
            if self.worker is None:
                self.ready.append(self.extract_now(self.queue.popleft(), "rules: no llm configured"))
                continue
            if len(self.in_flight) >= self.llm.max_in_flight:
                return
            self.queue.popleft()
            estimate = self.worker.extractor.estimate_tokens(job, self.worker.max_tokens)
            refusal = self.limiter.check(job.npc, estimate)
            if refusal is None and not self.breaker.allow():
                refusal = "circuit open"
            if refusal is not None:
                self.ready.append(self.extract_now(job, f"fallback: {refusal}"))
                continue
            self.limiter.reserve(job.npc, estimate)
            self.stats.llm_calls += 1
            self.in_flight.append(_InFlight(job, estimate, self.worker.submit(job)))

    def _collect(self) -> None:
        if not self.in_flight:
            return
        still: list[_InFlight] = []
        for flight in self.in_flight:
            if not flight.future.done():
                still.append(flight)
                continue
            try:
                outcome = flight.future.result()
            except BaseException as exc:  # a cancelled or crashed call is a failed call, never a crash here
                outcome = LLMOutcome(None, None, f"llm error: {type(exc).__name__}")
            assert self.worker is not None
            cost = self.worker.extractor.price.cost(outcome.usage) if outcome.usage else 0.0
            self.limiter.settle(flight.job.npc, flight.estimate, outcome.usage, cost)
            self.stats.tokens += outcome.usage.total if outcome.usage else 0
            self.stats.cost_usd += cost
            if outcome.memories is not None:
                self.breaker.record_success()
                self.ready.append(ExtractionResult(
                    job=flight.job, memories=outcome.memories, source="llm", reason="llm",
                    usage=outcome.usage, cost_usd=cost,
                ))
            else:
                self.breaker.record_failure()
                self.stats.llm_failures += 1
                fallback = self.extract_now(flight.job, f"fallback: {outcome.failure}")
                self.ready.append(msgspec.structs.replace(fallback, usage=outcome.usage, cost_usd=cost))
        self.in_flight = still
