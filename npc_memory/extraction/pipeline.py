"""The extraction pipeline: a bounded queue of jobs, LLM calls in flight, results
ready to apply. The ExtractionSystem drives it one budgeted tick at a time; nothing
here waits on the network. LLM calls go through the plugin's one
:class:`~npc_memory.llm.gateway.LLMGateway`, which also serves consolidation summaries
and NPC replies."""

from __future__ import annotations

import concurrent.futures
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import msgspec

from npc_memory.content.schema import Budgets, LlmRules
from npc_memory.extraction.grounding import Grounding, GroundingStats
from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, ExtractionResult, PaidCall
from npc_memory.extraction.rules import Reading, RuleBasedExtractor
from npc_memory.llm.budget import BudgetLimiter, CircuitBreaker
from npc_memory.llm.model import LLMResult, Refusal
from npc_memory.llm.stats import LLMStats

if TYPE_CHECKING:  # importing these imports `anthropic` (~2 s): only when an LLM is configured
    from npc_memory.extraction.anthropic import AnthropicExtractor
    from npc_memory.llm.gateway import LLMGateway


class RuleExtractor(Protocol):
    """What the pipeline needs of a rule-based extractor."""

    def extract(self, job: ExtractionJob) -> tuple[ExtractedMemory, ...]:
        """The memories worth keeping from ``job`` (0–3, validated)."""
        ...


class ExtractionStats:
    """Counters since install: jobs queued, results applied, jobs dropped on overflow,
    duplicates skipped, fallbacks to the rules by reason; and over every LLM call of the
    plugin's gateway (extraction, summaries, replies): calls, failures, tokens and
    their cost in USD. ``llm`` has the gateway's counters per purpose; ``grounding``
    counts what grounding did with the LLM's memories, per outcome and reason (see
    :mod:`npc_memory.extraction.grounding`)."""

    def __init__(self, llm: LLMStats | None = None, grounding: GroundingStats | None = None) -> None:
        self.grounding = grounding if grounding is not None else GroundingStats()
        self.queued = 0
        self.applied = 0
        self.dropped = 0
        self.duplicates = 0
        self.fallbacks: dict[str, int] = {}
        self.llm = llm if llm is not None else LLMStats()

    @property
    def llm_calls(self) -> int:
        """LLM calls made, every purpose."""
        return self.llm.calls

    @property
    def llm_failures(self) -> int:
        """LLM calls that brought no usable answer, every purpose."""
        return self.llm.failures

    @property
    def tokens(self) -> int:
        """Tokens counted against the budgets, every purpose, cache tokens included."""
        return self.llm.tokens

    @property
    def cost_usd(self) -> float:
        """What they cost in USD."""
        return self.llm.cost_usd

    def __repr__(self) -> str:
        return (
            f"ExtractionStats(queued={self.queued}, applied={self.applied}, dropped={self.dropped}, "
            f"duplicates={self.duplicates}, llm_calls={self.llm_calls}, llm_failures={self.llm_failures}, "
            f"fallbacks={self.fallbacks}, tokens={self.tokens}, cost_usd={self.cost_usd:.6f})"
        )


@dataclass
class _InFlight:
    job: ExtractionJob
    future: concurrent.futures.Future[LLMResult[tuple[ExtractedMemory, ...]]]


class ExtractionPipeline:
    """Queue → (LLM through the gateway | rules) → ready results.

    ``budgets`` and ``llm_rules`` are the pack's ``[budgets]`` and ``[llm]``. ``llm`` is
    ``None`` (offline: the rules extract everything) or an :class:`AnthropicExtractor`
    (the pipeline opens the gateway with its settings and ``llm_rules``). ``gateway``
    passes a gateway opened elsewhere instead (``llm`` then only configures the
    extraction prompt). ``limiter``/``breaker`` replace the ones the gateway would
    build from ``llm_rules``. ``rules`` is the rule-based extractor (default
    :class:`RuleBasedExtractor`), used offline and as the fallback. ``tags`` is the tag
    vocabulary of the extraction prompt, (tag, short description) pairs (default: the
    extractor's).

    ``gateway`` (or ``None``), ``limiter``, ``breaker`` and ``stats`` are public;
    :meth:`close` closes the gateway.
    """

    def __init__(
        self,
        budgets: Budgets,
        llm_rules: LlmRules,
        llm: AnthropicExtractor | None = None,
        *,
        gateway: LLMGateway | None = None,
        limiter: BudgetLimiter | None = None,
        breaker: CircuitBreaker | None = None,
        rules: RuleExtractor | None = None,
        tags: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.budgets = budgets
        self.llm = llm_rules
        self.rules: RuleExtractor = rules if rules is not None else RuleBasedExtractor()
        self.tags: tuple[tuple[str, str], ...] | None = None
        self.extractor: AnthropicExtractor | None = None
        self.gateway: LLMGateway | None = gateway
        if llm is not None or gateway is not None:
            # An LLM is configured, so `anthropic` is imported already (at install).
            from npc_memory.extraction.anthropic import AnthropicExtractor, check_tags
            from npc_memory.llm.gateway import LLMGateway

            self.tags = None if tags is None else check_tags(tags)

            self.extractor = llm or AnthropicExtractor()
            if self.gateway is None:
                self.gateway = LLMGateway(
                    self.extractor.settings(llm_rules), llm_rules, limiter=limiter, breaker=breaker
                )
            self.limiter = self.gateway.limiter
            self.breaker = self.gateway.breaker
        else:
            self.limiter = limiter or BudgetLimiter(
                llm_rules.daily_tokens, llm_rules.npc_daily_tokens, llm_rules.requests_per_minute
            )
            self.breaker = breaker or CircuitBreaker(llm_rules.breaker_failures, llm_rules.breaker_cooldown)
        reader = self.rules if isinstance(self.rules, RuleBasedExtractor) else RuleBasedExtractor()
        self.grounding = Grounding(reader)
        self.stats = ExtractionStats(
            self.gateway.stats if self.gateway is not None else None, self.grounding.stats
        )
        self.queue: deque[ExtractionJob] = deque()
        self.in_flight: list[_InFlight] = []
        self.ready: deque[ExtractionResult] = deque()
        self.parked: list[ExtractionResult] = []
        self.released: deque[tuple[int, ExtractionJob]] = deque()
        """Jobs handed out to be applied, numbered: until a snapshot that captured their
        NPC after they were applied is on disk, they are saved as pending too (applying
        is idempotent per conversation), so a crash never loses one."""
        self.released_total = 0
        """How many jobs were ever handed out (the number of the last in ``released``)."""
        self.enqueued_total = 0
        """How many jobs were ever queued (each is saved as pending from then on)."""
        self.restored: set[str] = set()
        """Conversations of the jobs taken back after a restart and not applied since: a
        snapshot may hold part of their result already (applied a memory per step)."""
        self.archetype_of: Callable[[str], str | None] = lambda npc: None
        """The archetype of an NPC by key (set by the plugin), for :meth:`rules_reason`."""
        self.chosen: dict[str, bool] = {}
        """The game's choice per NPC key: always the model (``True``) or never (``False``)."""
        self.priority: set[str] = set()
        """NPC keys the game marks as keeping the model when the budget runs low."""
        self.reading: Reading | None = None
        """The rules' reading of the job first in the queue, while it is read a line per
        step (see :meth:`advance`): it stays queued, so saved as pending, until read."""

    def enqueue(self, job: ExtractionJob) -> bool:
        """Queue ``job``; ``False`` (and nothing queued) when the queue is full."""
        if len(self.queue) >= self.budgets.extraction_queue:
            return False
        self.queue.append(job)
        self.enqueued_total += 1
        self.stats.queued += 1
        return True

    def restore(self, jobs: Iterable[ExtractionJob]) -> None:
        """Take back the jobs saved before a restart, whatever the queue's bound: a job
        whose LLM call was already paid for is never sent again (its answer is applied
        as it came, or the rules extract it); the others are queued."""
        for job in jobs:
            self.restored.add(job.conversation)
            paid = job.paid
            if paid is None:
                self.queue.append(job)
            elif paid.answer is not None:
                self.ready.append(ExtractionResult(
                    job=job, memories=paid.answer, source="llm", reason="llm",
                    usage=paid.usage, cost_usd=paid.cost_usd,
                ))
            else:
                self.ready.append(self.extract_now(job, f"fallback: {paid.failure or 'llm answer lost'}"))

    def extract_now(self, job: ExtractionJob, reason: str) -> ExtractionResult:
        """Extract ``job`` with the rules, synchronously."""
        return self._by_rules(job, self.rules.extract(job), reason)

    def _by_rules(
        self, job: ExtractionJob, memories: tuple[ExtractedMemory, ...], reason: str
    ) -> ExtractionResult:
        self.stats.fallbacks[reason] = self.stats.fallbacks.get(reason, 0) + 1
        return ExtractionResult(job=job, memories=memories, source="rules", reason=reason)

    def can_advance(self) -> bool:
        """Whether a job waits to be dispatched and may be now: none while twice
        ``extraction_apply_per_tick`` results wait (the queue's bound and overflow policy
        then hold the backlog), nor while ``max_in_flight`` LLM calls are out."""
        if not self.queue or len(self.ready) >= 2 * self.budgets.extraction_apply_per_tick:
            return False
        return self.gateway is None or len(self.in_flight) < self.llm.max_in_flight

    def next_step(self) -> str:
        """What the next :meth:`advance` does, named as a kind of step for its cost
        estimate: "read" (the rules read a line), "gist" (they turn a transcript read to
        its end into memories) or "send" (a job goes to the LLM, or, refused, to the
        rules whole)."""
        if self.gateway is not None and self.extractor is not None:
            return "send"
        reading = self.reading
        if reading is not None and reading.job is self.queue[0] and reading.line >= len(reading.job.turns):
            return "gist"
        return "read"

    def advance(self) -> int:
        """One step of dispatching the job first in the queue (see :meth:`can_advance`):
        offline, the rules read one line of it (the job leaves the queue, its result
        ready, once read to the end); with an LLM, the job is sent (or, refused, the
        rules extract it at once). Returns how many jobs left the queue (0 or 1)."""
        job = self.queue[0]
        if self.gateway is None or self.extractor is None:
            reading = self.reading
            if reading is None or reading.job is not job:  # a new head (the one read was dropped)
                reading = self.reading = self._read(job)
            if not self._step(reading):
                return 0
            self.queue.popleft()
            self.reading = None
            self.ready.append(self._by_rules(job, reading.memories or (), "rules: no llm configured"))
            return 1
        self.queue.popleft()
        reason = self.rules_reason(job.npc)
        if reason is not None:
            self.ready.append(self.extract_now(job, reason))
            return 1
        request = self.extractor.request(job, self.gateway.settings.max_tokens, self.tags)
        submitted = self.gateway.submit(job.npc, "extraction", request)
        if isinstance(submitted, Refusal):
            self.ready.append(self.extract_now(job, f"fallback: {submitted.reason}"))
        else:
            self.in_flight.append(_InFlight(job, submitted))
        return 1

    def rules_reason(self, npc: str) -> str | None:
        """Why the rule reader, not the model, extracts a conversation of ``npc`` (with an
        LLM configured), or ``None`` when the model does: the game's choice for the NPC,
        else its archetype against the pack's ``[llm] extraction_archetypes``; and once
        less than ``low_budget_share`` of the day's tokens is left, priority NPCs only."""
        rules = self.llm
        archetype = self.archetype_of(npc)
        chosen = self.chosen.get(npc)
        if chosen is None:
            chosen = rules.extraction_archetypes is None or archetype in rules.extraction_archetypes
        if not chosen:
            return "rules: not chosen for the llm"
        low = self.limiter.share_left() < rules.low_budget_share
        if low and npc not in self.priority and archetype not in rules.priority_archetypes:
            return "rules: budget low, the llm kept for priority npcs"
        return None

    def _read(self, job: ExtractionJob) -> Reading:
        rules = self.rules
        if isinstance(rules, RuleBasedExtractor):
            return rules.read(job)
        return Reading(job, [], frozenset())  # another extractor: read in one step

    def _step(self, reading: Reading) -> bool:
        rules = self.rules
        if isinstance(rules, RuleBasedExtractor):
            return rules.step(reading)
        reading.memories = rules.extract(reading.job)
        return True

    def release_first(self) -> ExtractionResult:
        """Take the first ready result off the line once it is applied (or set aside),
        handing it out (see :attr:`released`)."""
        result = self.ready.popleft()
        self._release([result])
        return result

    def take_parked(self) -> list[ExtractionResult]:
        """Every parked result, handed out to be applied (see :attr:`released`)."""
        parked, self.parked = self.parked, []
        self._release(parked)
        return parked

    def unsaved(self) -> list[ExtractionJob]:
        """Jobs whose outcome the store may not hold yet: released ones still kept,
        then :meth:`pending`, each conversation once."""
        seen: set[str] = set()
        jobs = []
        for job in [*(job for _, job in self.released), *self.pending()]:
            if job.conversation not in seen:
                seen.add(job.conversation)
                jobs.append(job)
        return jobs

    def forget_released(self, upto: int) -> None:
        """Stop keeping released jobs numbered ``upto`` or lower (a snapshot that
        started after they were applied is on disk)."""
        released = self.released
        while released and released[0][0] <= upto:
            released.popleft()

    def forget_jobs_of(self, key: str) -> None:
        """Drop the queued, parked and released jobs about ``key`` (an NPC or player
        being forgotten)."""
        self.parked = [r for r in self.parked if key not in (r.job.npc, r.job.player)]
        kept = [job for job in self.queue if key not in (job.npc, job.player)]
        if len(kept) != len(self.queue):
            self.queue.clear()
            self.queue.extend(kept)
        released = [(n, job) for n, job in self.released if key not in (job.npc, job.player)]
        if len(released) != len(self.released):
            self.released.clear()
            self.released.extend(released)

    def _release(self, results: list[ExtractionResult]) -> None:
        for result in results:
            self.released_total += 1
            self.released.append((self.released_total, _carrying(result)))  # never paid for twice

    def pending(self) -> list[ExtractionJob]:
        """Every job not yet applied (queued, in flight, ready or parked), oldest first;
        a job whose LLM call has ended carries it (:class:`PaidCall`) if it cost anything."""
        return [
            *(_carrying(r) for r in self.parked),
            *(_carrying(r) for r in self.ready),
            *(f.job for f in self.in_flight),
            *self.queue,
        ]

    def close(self, grace: float = 0.0) -> None:
        """Stop calling the LLM. Extraction calls in flight get up to ``grace`` real
        seconds to finish; then the gateway closes and the rest resolve as shut down.
        Every call that ended is collected, so :meth:`pending` records what each cost
        and the answers that arrived: after a restart those are applied, not paid for
        again. Jobs never sent stay queued."""
        if self.gateway is None:
            return
        if grace > 0 and self.in_flight:
            concurrent.futures.wait([f.future for f in self.in_flight], timeout=grace)
        self.gateway.close()
        self.collect()

    def collect(self) -> None:
        """Take the results of the LLM calls that have ended (fallbacks for the failed)."""
        if not self.in_flight:
            return
        still: list[_InFlight] = []
        for flight in self.in_flight:
            if not flight.future.done():
                still.append(flight)
                continue
            try:
                result = flight.future.result()
            except BaseException as exc:  # a cancelled future is a failed call, never a crash here
                result = LLMResult(failure=f"llm error: {type(exc).__name__}")
            if result.value is not None:
                self.ready.append(ExtractionResult(
                    job=flight.job, memories=self.grounding.ground(flight.job, result.value),
                    source="llm", reason="llm",
                    usage=result.usage, cost_usd=result.cost_usd,
                ))
            else:
                fallback = self.extract_now(flight.job, f"fallback: {result.failure}")
                fallback = msgspec.structs.replace(fallback, usage=result.usage, cost_usd=result.cost_usd)
                self.ready.append(fallback)
        self.in_flight = still


def _carrying(result: ExtractionResult) -> ExtractionJob:
    """The job of ``result``, carrying its LLM call if that cost anything: the answer
    of an LLM result, or why the rules stood in."""
    if result.source == "llm":
        paid = PaidCall(usage=result.usage, cost_usd=result.cost_usd, answer=result.memories)
    elif result.usage is not None:
        failure = result.reason.removeprefix("fallback: ")
        paid = PaidCall(usage=result.usage, cost_usd=result.cost_usd, failure=failure)
    else:
        return result.job
    return msgspec.structs.replace(result.job, paid=paid)
