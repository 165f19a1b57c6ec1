"""The one path of every LLM call (extraction, consolidation summaries, NPC replies):
budget check → reservation → the call on the worker thread, under a deadline →
settlement → circuit breaker → statistics.

Importing this module imports ``anthropic`` (~2 s): only games that configure an LLM do.

Accounting. A call reserves its estimate (:meth:`LLMRequest.estimate`: the prompt by the
one token estimate, plus ``max_tokens``) before it is sent, and settles when it ends:

- with the usage the API reported, when a response was read (also when the answer
  turned out unusable: malformed, refused, truncated — those were billed);
- with nothing, when the API certainly billed nothing: an error status (429, 529, 5xx…),
  or no connection made;
- with the reservation, when the API may have billed but did not say what: a body cut
  off, stalled or refused for its size, a timeout once the request was sent, a call
  cancelled after it was sent. These count in ``usage_estimated`` / ``estimated_tokens``.

Retries. The SDK's own retries are off (``max_retries=0`` on the client); the gateway
retries itself, under the call's deadline, only attempts known to have cost nothing: an
error status the SDK would retry (408, 409, 429, 5xx, or ``x-should-retry: true``) and
connection failures. It honours ``retry-after`` when it ends before the deadline and
gives up at once when it does not. An attempt that may have been billed (a body cut off
or stalled) is never retried: with the SDK's retries a cut-off body was billed up to
``1 + max_retries`` times (measured: 3 requests for ``max_retries=2``, 0 tokens counted).

Breaker. A call with no usable answer is a failure; a cancelled call (by its caller or
by :meth:`LLMGateway.close`) is neither failure nor success, and frees a half-open
circuit's trial.

Threads. Submitting (check, reserve) happens on the caller's thread; settlement happens
on the worker thread before the call's future resolves, so a future that is done has
been counted. A lock guards the limiter, the breaker and the statistics.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anthropic
import httpx2
import msgspec

from npc_memory.content.schema import LlmRules
from npc_memory.errors import InvalidArgumentError
from npc_memory.llm.budget import BudgetLimiter, CircuitBreaker, Price, price_of
from npc_memory.llm.errors import MalformedOutputError
from npc_memory.llm.http import (
    CURRENT_ATTEMPT,
    MAX_RESPONSE_BYTES,
    Attempt,
    ResponseTooLargeError,
    UnexpectedEncodingError,
    capped_http_client,
)
from npc_memory.llm.model import LLMRequest, LLMResult, Purpose, Refusal, Reply, SummaryOutcome, TokenUsage
from npc_memory.llm.output import text_of
from npc_memory.llm.stats import LLMStats
from npc_memory.llm.summary import summary_request
from npc_memory.llm.worker import WorkerLoop

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_MODEL = "claude-haiku-4-5"

SHUT_DOWN = "shut down"
CANCELLED = "cancelled"

_UNSENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout, httpx2.UnsupportedProtocol)
"""Connection failures after which the request certainly never reached the API."""


@dataclass(frozen=True)
class ClientSettings:
    """How the gateway calls the Messages API: ``model``; ``api_key`` and ``base_url``
    (``None``: the SDK's own resolution, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``…);
    ``deadline`` (real seconds for a whole call, retries and waits included);
    ``max_retries`` (retries of attempts that cost nothing); ``max_tokens`` (output
    limit of extraction and summaries); ``price`` (default: the model's, see
    :func:`~npc_memory.llm.budget.price_of`); ``max_response_bytes`` (the body cap,
    see :mod:`npc_memory.llm.http`)."""

    model: str = DEFAULT_MODEL
    api_key: str | None = None
    base_url: str | None = None
    deadline: float = 20.0
    max_retries: int = 2
    max_tokens: int = 600
    price: Price | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if self.price is None:  # the model's list price (unknown models: the dearest listed)
            object.__setattr__(self, "price", price_of(self.model))

    @property
    def cost(self) -> Price:
        """The price table entry used for costs."""
        assert self.price is not None
        return self.price


@dataclass(eq=False)
class _Call:
    owner: str
    purpose: Purpose
    request: LLMRequest[Any]
    estimate: int
    estimate_usage: TokenUsage
    wrap: Callable[[LLMResult[Any]], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)
    task: asyncio.Task[None] | None = None
    attempt: Attempt | None = None
    attempts: int = 0


def _identity(result: LLMResult[Any]) -> LLMResult[Any]:
    return result


def _to_reply(result: LLMResult[Any]) -> Reply:
    return Reply(result.value, result.failure, result.usage, result.cost_usd)


def _to_summary(result: LLMResult[Any]) -> SummaryOutcome:
    return SummaryOutcome(result.value, result.usage, result.failure, result.cost_usd)


def reply_text(message: Any) -> str:
    """The text of an NPC's reply (all text blocks, stripped; empty is malformed)."""
    text = text_of(message).strip()
    if not text:
        raise MalformedOutputError("the response has no text")
    return text


class LLMGateway:
    """Every LLM call of one plugin goes through here (see the module docstring).

    ``settings`` says how to call the API; ``rules`` (the pack's ``[llm]``) sizes the
    budgets and the breaker unless ``limiter``/``breaker`` are given. Starts the worker
    thread and opens the ``AsyncAnthropic`` client inside its loop; :meth:`close` stops
    both. ``limiter``, ``breaker`` and ``stats`` (:class:`LLMStats`) are public.
    """

    def __init__(
        self,
        settings: ClientSettings,
        rules: LlmRules | None = None,
        *,
        limiter: BudgetLimiter | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        rules = rules or LlmRules()
        self.settings = settings
        self.limiter = limiter or BudgetLimiter(
            rules.daily_tokens, rules.npc_daily_tokens, rules.requests_per_minute
        )
        self.breaker = breaker or CircuitBreaker(rules.breaker_failures, rules.breaker_cooldown)
        self.stats = LLMStats()
        self._lock = threading.Lock()
        self._pending: dict[int, _Call] = {}
        """Calls not yet concluded, by ``id`` of their future."""
        self._inbox: deque[_Call] = deque()
        self._wake_pending = False
        self._closed = False
        self._worker = WorkerLoop()
        self._client: anthropic.AsyncAnthropic = self._worker.run(self._open_client()).result(timeout=30)

    async def _open_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            max_retries=0,  # the gateway retries itself, knowing what each attempt cost
            timeout=self.settings.deadline,
            http_client=capped_http_client(self.settings.max_response_bytes),
        )

    def __repr__(self) -> str:
        model, pending = self.settings.model, len(self._pending)
        return f"LLMGateway(model={model!r}, pending={pending}, closed={self._closed})"

    # ------------------------------------------------------------------ submitting

    def estimate(self, request: LLMRequest[Any]) -> int:
        """The tokens reserved for ``request``: its prompt by the one token estimate,
        plus its ``max_tokens``."""
        prompt, output = request.estimate()
        return prompt + output

    def submit(
        self, owner: str, purpose: Purpose, request: LLMRequest[T]
    ) -> concurrent.futures.Future[LLMResult[T]] | Refusal:
        """Make ``request`` for NPC ``owner`` (whose daily budget it uses), counted under
        ``purpose``. Returns at once: a :class:`Refusal` (budget, circuit open, shut down;
        nothing sent, nothing charged), or a future of the :class:`LLMResult`, which is
        counted and settled before it resolves. Cancelling the future cancels the call."""
        return self._submit(owner, purpose, request, _identity)

    def submit_summary(
        self, owner: str, npc_name: str, player_name: str, theme: str, contents: Sequence[str]
    ) -> concurrent.futures.Future[SummaryOutcome] | Refusal:
        """Ask for one sentence summarising ``contents`` (memories of ``player_name``
        held by ``npc_name``, sharing ``theme``), on ``owner``'s budget. A
        :class:`Refusal` says why no call was made; the future's
        :class:`SummaryOutcome` has ``text`` or ``failure``."""
        request = summary_request(npc_name, player_name, theme, list(contents), self.settings.max_tokens)
        return self._submit(owner, "summary", request, _to_summary)

    def submit_reply(
        self, owner: str, system: str, messages: Sequence[Mapping[str, str]], reply_tokens: int
    ) -> concurrent.futures.Future[Reply]:
        """Ask for an NPC's next line: ``system`` prompt, ``messages`` (role/content
        dicts, ending with the player's), at most ``reply_tokens`` output tokens, on
        ``owner``'s budget. Always a future of a :class:`Reply`; a refusal resolves it
        at once with ``failure`` set and nothing sent."""
        if isinstance(reply_tokens, bool) or not isinstance(reply_tokens, int) or reply_tokens < 1:
            raise InvalidArgumentError(f"reply_tokens must be a positive int, got {reply_tokens!r}")
        request = LLMRequest(system=system, messages=list(messages), max_tokens=reply_tokens,
                             parse=reply_text)
        submitted = self._submit(owner, "reply", request, _to_reply)
        if isinstance(submitted, Refusal):
            refused: concurrent.futures.Future[Reply] = concurrent.futures.Future()
            refused.set_result(Reply(failure=submitted.reason))
            return refused
        return submitted

    def _submit(
        self,
        owner: str,
        purpose: Purpose,
        request: LLMRequest[T],
        wrap: Callable[[LLMResult[T]], R],
    ) -> concurrent.futures.Future[R] | Refusal:
        prompt, output = request.estimate()
        estimate = prompt + output
        with self._lock:
            refusal: str | None = SHUT_DOWN if self._closed else None
            if refusal is None:
                refusal = self.limiter.check(owner, estimate)
                if refusal is None and not self.breaker.allow():
                    refusal = "circuit open"
            if refusal is not None:
                self.stats[purpose].refused += 1
                return Refusal(refusal)
            self.limiter.reserve(owner, estimate)
            self.stats[purpose].calls += 1
            reserved = TokenUsage(input=prompt, output=output)
            call = _Call(owner, purpose, request, estimate, reserved, wrap)
            self._pending[id(call.future)] = call
            # One wake-up of the loop per batch of submissions: waking it is a syscall, during
            # which the worker may take the GIL from the tick.
            self._inbox.append(call)
            wake, self._wake_pending = not self._wake_pending, True
        # Found again through the future, not captured: a closure over ``call`` would make a
        # reference cycle (call -> future -> callback -> call) that only the collector frees.
        call.future.add_done_callback(self._caller_cancelled)
        if wake and not self._worker.call_soon(self._drain):
            self._conclude(call, LLMResult(failure=SHUT_DOWN, cancelled=True))
        return call.future

    def _caller_cancelled(self, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            with self._lock:
                call = self._pending.get(id(future))
            if call is not None:
                self._worker.call_soon(self._cancel, call)

    # ------------------------------------------------------------------ on the worker loop

    def _drain(self) -> None:
        with self._lock:
            calls = list(self._inbox)
            self._inbox.clear()
            self._wake_pending = False
        for call in calls:
            self._start(call)

    def _start(self, call: _Call) -> None:
        if self._closed or call.future.cancelled():
            self._conclude(call, LLMResult(failure=SHUT_DOWN if self._closed else CANCELLED, cancelled=True))
            return
        call.task = self._worker.loop.create_task(self._run(call))

    def _cancel(self, call: _Call) -> None:
        if call.task is not None:
            call.task.cancel()

    async def _run(self, call: _Call) -> None:
        try:
            result = await self._attempts(call)
        except asyncio.CancelledError:
            result = self._unknown(call, SHUT_DOWN if self._closed else CANCELLED, cancelled=True)
        except Exception as exc:  # a bug below (ours or the SDK's) is a failed call, never a lost future
            result = self._unknown(call, f"llm error: {type(exc).__name__}: {exc}")
        self._conclude(call, result)

    def _unknown(self, call: _Call, failure: str, *, cancelled: bool = False) -> LLMResult[Any]:
        """A call that ended with no response read: charged its reservation if the
        current attempt was sent, else nothing."""
        sent = call.attempt is not None and call.attempt.sent
        return LLMResult(
            failure=failure,
            usage=call.estimate_usage if sent else None,
            usage_estimated=sent,
            attempts=call.attempts,
            cancelled=cancelled,
        )

    async def _attempts(self, call: _Call) -> LLMResult[Any]:
        """The call's attempts, under its deadline, until one gives a result."""
        settings, request = self.settings, call.request
        params: dict[str, Any] = {
            "model": settings.model,
            "max_tokens": request.max_tokens,
            "system": request.system if isinstance(request.system, str) else list(request.system),
            "messages": list(request.messages),
            **request.options,
        }
        end = asyncio.get_running_loop().time() + settings.deadline
        try:
            async with asyncio.timeout_at(end):
                while True:
                    outcome = await self._attempt(call, params, end)
                    if isinstance(outcome, LLMResult):
                        return outcome
                    await asyncio.sleep(outcome)
        except TimeoutError:
            stalled = ""
            if call.attempt is not None and call.attempt.status is not None:
                stalled = f" (response body stalled after {call.attempt.received} bytes)"
            return self._unknown(call, f"timeout after {settings.deadline:g} s{stalled}")

    async def _attempt(self, call: _Call, params: dict[str, Any], end: float) -> LLMResult[Any] | float:
        """One HTTP request: the call's result, or how long to wait before retrying."""
        loop = asyncio.get_running_loop()
        call.attempts += 1
        attempt = call.attempt = Attempt()
        token = CURRENT_ATTEMPT.set(attempt)
        try:
            left = max(end - loop.time(), 0.001)
            timeout = httpx2.Timeout(left + 1.0, connect=min(left + 1.0, 5.0))  # the deadline comes first
            message = await self._client.messages.create(**params, timeout=timeout)
        except anthropic.APIStatusError as exc:
            call.attempt = None  # the API answered with an error: nothing billed
            return self._retry_or_fail(call, exc.response, f"api error {exc.status_code}", end - loop.time())
        except anthropic.APIConnectionError as exc:
            if not any(isinstance(link, _UNSENT) for link in _chain(exc)):
                return self._lost(call, attempt, exc)
            call.attempt = None  # never reached the API: nothing billed
            failure = f"connection error: {type(exc.__cause__ or exc).__name__}"
            return self._retry_or_fail(call, None, failure, end - loop.time())
        except Exception as exc:
            if not attempt.complete:
                raise
            # The body was read whole, but the SDK could not make a message of it.
            return LLMResult(
                failure=f"malformed output: unreadable response body ({type(exc).__name__}: {exc})",
                usage=call.estimate_usage,
                usage_estimated=True,
                attempts=call.attempts,
            )
        finally:
            CURRENT_ATTEMPT.reset(token)
        return self._answer(call, message)

    def _retry_or_fail(
        self, call: _Call, response: httpx2.Response | None, failure: str, left: float
    ) -> LLMResult[Any] | float:
        """After an attempt that cost nothing: the wait before the next, or the failure."""
        wait, note = self._retry_wait(response, call.attempts, left)
        if wait is None:
            return LLMResult(failure=failure + note, attempts=call.attempts)
        return wait

    def _retry_wait(
        self, response: httpx2.Response | None, attempts: int, left: float
    ) -> tuple[float | None, str]:
        """How long to wait before retrying an attempt that cost nothing, or ``None``
        (and why, as a note for the failure) when not to retry."""
        if response is not None and not _should_retry(response):
            return None, ""
        if attempts > self.settings.max_retries:
            return None, ""
        retry_after = _retry_after(response.headers) if response is not None else None
        if retry_after is not None:
            if retry_after >= left:
                deadline = self.settings.deadline
                return None, f" (retry-after {retry_after:g} s is past the {deadline:g} s deadline)"
            return max(retry_after, 0.0), ""
        backoff = min(0.5 * 2.0 ** (attempts - 1), 8.0) * (1 - 0.25 * random.random())
        if backoff >= left:
            return None, " (no time left before the deadline to retry)"
        return backoff, ""

    def _lost(self, call: _Call, attempt: Attempt, exc: Exception) -> LLMResult[Any]:
        """An attempt that reached the API but whose response could not be read."""
        status, cause = attempt.status, exc.__cause__ or exc  # the HTTP client's error
        refusals = [e for e in _chain(exc) if isinstance(e, ResponseTooLargeError | UnexpectedEncodingError)]
        if refusals:
            cause = refusals[0]
            what = f"response too large: {cause}" if isinstance(cause, ResponseTooLargeError) else str(cause)
            if status is not None and status >= 400:  # an error (of a proxy, say): nothing billed
                return LLMResult(failure=f"api error {status} ({what})", attempts=call.attempts)
            failure = what if isinstance(cause, ResponseTooLargeError) else f"response refused: {what}"
        elif isinstance(exc, anthropic.APITimeoutError):
            failure = (
                f"timeout (response body stalled after {attempt.received} bytes)"
                if status is not None
                else "timeout waiting for the response"
            )
        elif status is not None:
            failure = f"response cut off after {attempt.received} bytes ({type(cause).__name__})"
        else:
            failure = f"connection lost before the response ({type(cause).__name__})"
        return LLMResult(
            failure=failure, usage=call.estimate_usage, usage_estimated=True, attempts=call.attempts
        )

    def _answer(self, call: _Call, message: Any) -> LLMResult[Any]:
        """A response read in full: its usage, and the parsed answer or why not."""
        call.attempt = None
        if not isinstance(message, anthropic.types.Message):
            return LLMResult(
                failure=f"malformed output: the response is not a message (got {type(message).__name__})",
                usage=call.estimate_usage,
                usage_estimated=True,
                attempts=call.attempts,
            )
        usage = _usage_of(message)
        common: dict[str, Any] = {
            "usage": usage or call.estimate_usage,
            "usage_estimated": usage is None,
            "attempts": call.attempts,
        }
        stop_reason = getattr(message, "stop_reason", None)
        if stop_reason == "refusal":
            return LLMResult(failure="refused by the model (stop_reason 'refusal')", **common)
        if stop_reason == "max_tokens":
            return LLMResult(
                failure=f"truncated: the answer reached max_tokens ({call.request.max_tokens})", **common
            )
        try:
            value = call.request.parse(message)
        except MalformedOutputError as exc:
            return LLMResult(failure=f"malformed output: {exc}", **common)
        except Exception as exc:  # the SDK builds responses without validating them: anything goes
            return LLMResult(failure=f"malformed output: {type(exc).__name__}: {exc}", **common)
        return LLMResult(value=value, **common)

    # ------------------------------------------------------------------ settlement

    def _conclude(self, call: _Call, result: LLMResult[Any]) -> None:
        """Settle ``call`` (once): budgets, statistics, breaker; then resolve its future."""
        cost = self.settings.cost.cost(result.usage) if result.usage is not None else 0.0
        result = msgspec.structs.replace(result, cost_usd=cost)
        with self._lock:
            if self._pending.pop(id(call.future), None) is None:
                return
            self.limiter.settle(call.owner, call.estimate, result.usage, cost)
            counts = self.stats[call.purpose]
            counts.attempts += result.attempts
            tokens = result.usage.total if result.usage is not None else 0
            counts.tokens += tokens
            counts.estimated_tokens += tokens if result.usage_estimated else 0
            counts.cost_usd += cost
            if result.cancelled:
                counts.cancelled += 1
                self.breaker.release()
            elif result.failure is None:
                self.breaker.record_success()
            else:
                counts.failures += 1
                self.breaker.record_failure()
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled by its caller meanwhile
            call.future.set_result(call.wrap(result))

    # ------------------------------------------------------------------ shutdown

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def pending(self) -> int:
        """Calls submitted and not yet settled."""
        return len(self._pending)

    def close(self) -> None:
        """Stop: every call still pending resolves with failure ``"shut down"`` (charged
        its reservation if it was sent), the client is closed inside its loop and the
        worker thread stops. Later submissions are refused. Idempotent."""
        with self._lock:
            already, self._closed = self._closed, True
        if not already and self._worker.alive:
            try:
                self._worker.run(self._shutdown()).result(timeout=15)
            except Exception:  # a stuck loop must not keep the game from shutting down
                pass
            finally:
                self._worker.stop()
        for call in list(self._pending.values()):
            self._conclude(call, self._unknown(call, SHUT_DOWN, cancelled=True))

    async def _shutdown(self) -> None:
        tasks = [call.task for call in list(self._pending.values()) if call.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        await self._client.close()


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _should_retry(response: httpx2.Response) -> bool:
    """The SDK's retry policy for an error status."""
    header = response.headers.get("x-should-retry")
    if header in ("true", "false"):
        return header == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the API asks to wait (``retry-after-ms``, ``retry-after`` in seconds or as
    a date), as the SDK reads them."""
    try:
        return float(headers.get("retry-after-ms", "")) / 1000
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _count(value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _usage_of(message: Any) -> TokenUsage | None:
    """The usage a response reports, cache tokens included; ``None`` if absent or not
    counts (the SDK does not validate responses)."""
    usage = getattr(message, "usage", None)
    if usage is None:
        return None
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counts = [_count(getattr(usage, name, None)) for name in names]
    if any(count is None for count in counts) or not hasattr(usage, "input_tokens"):
        return None
    given = [count or 0 for count in counts]
    return TokenUsage(input=given[0], output=given[1], cache_write=given[2], cache_read=given[3])
