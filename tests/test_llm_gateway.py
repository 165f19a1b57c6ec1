"""The LLM gateway with the real Anthropic SDK against the local fake Messages API: one
path for extraction, summaries and replies; what each failure costs and how it counts;
cancellation; shutdown; the response-size cap; structured output from pydantic models.
No network, no real key, no ticks needed for futures to resolve."""

from __future__ import annotations

import concurrent.futures
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest

import npc_memory
from npc_memory.content import load_pack
from npc_memory.content.schema import LlmRules
from npc_memory.extraction.anthropic import AnthropicExtractor, memories_schema, system_prompt
from npc_memory.extraction.model import ExtractionJob, Turn
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.extraction.validate import MemoriesOut
from npc_memory.llm import (
    BreakerState,
    LLMGateway,
    LLMRequest,
    LLMResult,
    Refusal,
    Reply,
    SummaryOutcome,
    TokenUsage,
)
from npc_memory.llm.budget import PRICES
from npc_memory.llm.summary import SummaryOut, summary_schema

from .fake_anthropic import FakeMessagesAPI, memory, message
from .fake_anthropic import Reply as Scripted

HAIKU = PRICES["claude-haiku-4-5"]
REPORTED = TokenUsage(input=420, output=80, cache_read=900)  # what the fake server reports
JOB = ExtractionJob(
    conversation="hilda/alice/1", npc="hilda", npc_name="Hilda", npc_role="the village blacksmith",
    player="alice", player_name="Alice", room="forge",
    turns=(Turn("Alice", "Bandits are attacking the village! Help me!"),
           Turn("Hilda", "I'll get my hammer. Together we'll drive them off.")),
)
SYSTEM = "You are Hilda, the village blacksmith. Stay in character."
MESSAGES = [{"role": "user", "content": "Do you remember me?"}]
overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}


pytestmark = pytest.mark.usefixtures("no_anthropic_environment")


Open = Callable[..., tuple[LLMGateway, AnthropicExtractor]]


@pytest.fixture
def open_gateway(api: FakeMessagesAPI) -> Iterator[Open]:
    opened: list[LLMGateway] = []

    def make(base_url: str | None = None, *, deadline: float = 2.0, max_retries: int = 0, mode: str = "json",
             **rules: Any) -> tuple[LLMGateway, AnthropicExtractor]:
        extractor = AnthropicExtractor(api_key="test-key", base_url=base_url or api.base_url, mode=mode,  # type: ignore[arg-type]
                                       deadline=deadline, max_retries=max_retries)
        gateway = extractor.open_gateway(LlmRules(**rules))
        opened.append(gateway)
        return gateway, extractor

    yield make
    for gateway in opened:
        gateway.close()


def extract(gateway: LLMGateway, extractor: AnthropicExtractor) -> LLMResult[Any]:
    future = gateway.submit("hilda", "extraction", extractor.request(JOB, 600))
    assert not isinstance(future, Refusal)
    return future.result(timeout=15)


def reservation(gateway: LLMGateway, extractor: AnthropicExtractor) -> TokenUsage:
    """What an extraction call of JOB reserves (and is charged when its usage is unknown)."""
    prompt, output = extractor.request(JOB, 600).estimate()
    assert gateway.estimate(extractor.request(JOB, 600)) == prompt + output
    return TokenUsage(input=prompt, output=output)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


# ---------------------------------------------------------------------- one path, three purposes


def test_a_reply_is_counted_in_the_gateway_and_the_plugin_statistics(api: FakeMessagesAPI) -> None:
    api.push(Scripted(body=message(text="Aye, Alice. The sword still holds its edge?")))
    llm = AnthropicExtractor(api_key="test-key", base_url=api.base_url)
    plugin = npc_memory.install(world="llm", pack="village", llm=llm)
    try:
        gateway = plugin.extraction.gateway
        assert gateway is not None
        reply = gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300).result(timeout=10)  # no tick needed
        assert reply == Reply("Aye, Alice. The sword still holds its edge?", None, REPORTED, HAIKU.cost(REPORTED))
        body = api.requests[0]["json"]
        assert (body["system"], body["messages"], body["max_tokens"]) == (SYSTEM, MESSAGES, 300)
        assert "output_config" not in body and "temperature" not in body
        # Reply spend reaches the statistics a game reads, and the budgets.
        stats = plugin.extraction.stats
        assert (stats.llm_calls, stats.tokens, stats.cost_usd) == (1, 1400, pytest.approx(HAIKU.cost(REPORTED)))
        assert stats.llm["reply"].tokens == 1400 and stats.llm["extraction"].tokens == 0
        assert plugin.extraction.limiter.spent_by_npc["hilda"] == 1400
        assert plugin.extraction.limiter.cost_today_usd == pytest.approx(HAIKU.cost(REPORTED))
    finally:
        npc_memory.uninstall("llm")


def test_a_summary_goes_through_the_gateway(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.push(Scripted(body=message(text=json.dumps({"summary": "  Alice is a loyal customer.  "}))))
    gateway, _ = open_gateway()
    future = gateway.submit_summary("hilda", "Hilda", "Alice", "trade", ["Alice bought horseshoes", "Alice bought nails"])
    assert not isinstance(future, Refusal)
    outcome = future.result(timeout=10)
    assert outcome == SummaryOutcome("Alice is a loyal customer.", REPORTED, None, HAIKU.cost(REPORTED))
    body = api.requests[0]["json"]
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": summary_schema()}}
    assert "- «Alice bought nails»" in body["messages"][0]["content"] and body["max_tokens"] == 200
    assert gateway.stats["summary"].calls == 1 and gateway.stats["summary"].tokens == 1400


def test_refusals_say_why_and_send_nothing(api: FakeMessagesAPI, open_gateway: Open) -> None:
    gateway, extractor = open_gateway(npc_daily_tokens=100)
    reply = gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300)
    assert reply.done() and reply.result().failure == "budget: daily tokens for hilda (0 of 100 used)"
    refused = gateway.submit("hilda", "extraction", extractor.request(JOB, 600))
    assert isinstance(refused, Refusal) and refused.reason.startswith("budget: daily tokens for hilda")
    assert isinstance(gateway.submit_summary("hilda", "Hilda", "Alice", "trade", ["x"]), Refusal)
    assert api.requests == [] and gateway.limiter.spent_today == 0
    assert [gateway.stats[p].refused for p in ("extraction", "summary", "reply")] == [1, 1, 1]
    assert gateway.stats.calls == 0


def test_an_open_circuit_refuses_every_purpose(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.default = Scripted(status=529, body=overloaded)
    gateway, extractor = open_gateway(breaker_failures=1)
    assert extract(gateway, extractor).failure == "api error 529"
    assert gateway.breaker.state is BreakerState.OPEN
    assert gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300).result().failure == "circuit open"
    assert gateway.submit_summary("hilda", "Hilda", "Alice", "trade", ["x"]) == Refusal("circuit open")
    assert len(api.requests) == 1


# ---------------------------------------------------------------------- what failures cost


def test_a_cut_off_body_is_charged_its_reservation_once(api: FakeMessagesAPI, open_gateway: Open) -> None:
    """Before: the SDK retried the cut-off body twice (3 requests billed) and 0 tokens were counted."""
    body = json.dumps(message([memory()])).encode()
    api.default = Scripted(body=body, cut_after=100)
    gateway, extractor = open_gateway(max_retries=2)
    result = extract(gateway, extractor)
    assert result.failure == "response cut off after 100 bytes (RemoteProtocolError)"
    charged = reservation(gateway, extractor)
    assert (result.usage, result.usage_estimated, result.attempts) == (charged, True, 1)
    assert len(api.requests) == 1  # never retried: a retry would be billed again
    assert gateway.limiter.spent_today == charged.total == gateway.stats.tokens
    assert gateway.stats["extraction"].estimated_tokens == charged.total
    assert gateway.stats.cost_usd == pytest.approx(HAIKU.cost(charged)) == pytest.approx(result.cost_usd)
    assert gateway.stats.failures == 1 and gateway.breaker.failures == 1


def test_a_stalled_body_is_charged_its_reservation(api: FakeMessagesAPI, open_gateway: Open) -> None:
    gate = threading.Event()
    api.default = Scripted(body=message([memory()]), stall_after=100, gate=gate)
    gateway, extractor = open_gateway(deadline=1.0)
    try:
        result = extract(gateway, extractor)
    finally:
        gate.set()
    assert result.failure == "timeout after 1 s (response body stalled after 100 bytes)"
    assert result.usage == reservation(gateway, extractor) and result.usage_estimated
    assert gateway.limiter.spent_today == result.usage.total and gateway.stats.failures == 1


def test_a_timeout_before_any_response_is_charged_its_reservation(api: FakeMessagesAPI, open_gateway: Open) -> None:
    gate = threading.Event()
    api.default = Scripted(body=message([memory()]), gate=gate)
    gateway, extractor = open_gateway(deadline=1.0)
    try:
        result = extract(gateway, extractor)
    finally:
        gate.set()
    assert result.failure == "timeout after 1 s"
    assert result.usage == reservation(gateway, extractor) and result.usage_estimated  # the API is still at work


def test_error_statuses_and_refused_connections_cost_nothing(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.default = Scripted(status=529, body=overloaded, headers={"retry-after": "0"})
    gateway, extractor = open_gateway(max_retries=2)
    result = extract(gateway, extractor)
    assert (result.failure, result.usage, result.attempts, len(api.requests)) == ("api error 529", None, 3, 3)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    nowhere, extractor = open_gateway(closed, max_retries=1)
    result = extract(nowhere, extractor)
    assert result.failure == "connection error: ConnectError" and result.usage is None and result.attempts == 2
    assert gateway.limiter.spent_today == nowhere.limiter.spent_today == 0
    assert gateway.stats.tokens == nowhere.stats.tokens == 0


@pytest.mark.parametrize(
    ("scripted", "failure"),
    [
        (Scripted(body=message(text="I can't help with that.", stop_reason="refusal")),
         "refused by the model (stop_reason 'refusal')"),
        (Scripted(body=message([], stop_reason="refusal")), "refused by the model (stop_reason 'refusal')"),
        (Scripted(body=message(text='{"memories": [{"content": "Alice off', stop_reason="max_tokens")),
         "truncated: the answer reached max_tokens (600)"),
        (Scripted(body=message(text='{"memories": []}', stop_reason="max_tokens")),
         "truncated: the answer reached max_tokens (600)"),
        (Scripted(body=message(text=123)), "malformed output: content[0].text is not a string (got int)"),
        (Scripted(body=message(content=None)), "malformed output: the response has no content list (got NoneType)"),
        (Scripted(body=message(content=[{"type": "text"}])), "malformed output: content[0].text is not a string (got NoneType)"),
        (Scripted(body=message(content=[])), "malformed output: no text block in the response"),
    ],
    ids=["refusal-text", "refusal-json", "max-tokens-cut", "max-tokens-complete", "text-int", "content-null",
         "text-absent", "content-empty"],
)
def test_unusable_answers_are_failures_charged_what_they_used(
    api: FakeMessagesAPI, open_gateway: Open, scripted: Scripted, failure: str
) -> None:
    api.default = scripted
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert (result.value, result.failure, result.usage, result.usage_estimated) == (None, failure, REPORTED, False)
    assert gateway.stats.failures == 1 and gateway.breaker.failures == 1
    assert gateway.limiter.spent_today == 1400


def test_a_truncated_or_refused_reply_is_a_failure_not_a_line(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.push(Scripted(body=message(text="Aye, I remember you, Alice, the one who", stop_reason="max_tokens")),
             Scripted(body=message(text="I won't say that.", stop_reason="refusal")),
             Scripted(body=message(text="   ")))
    gateway, _ = open_gateway()
    replies = [gateway.submit_reply("hilda", SYSTEM, MESSAGES, 20).result(timeout=10) for _ in range(3)]
    assert [(r.text, r.failure) for r in replies] == [
        (None, "truncated: the answer reached max_tokens (20)"),
        (None, "refused by the model (stop_reason 'refusal')"),
        (None, "malformed output: the response has no text"),
    ]
    assert gateway.stats["reply"].failures == 3 and gateway.stats["reply"].tokens == 3 * 1400


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        (b"{oops", "malformed output: unreadable response body (JSONDecodeError: Expecting property name"),
        (b"[]", "malformed output: the response is not a message (got list)"),
        (b"null", "malformed output: the response is not a message (got NoneType)"),
        (b'{"type": "error"}', "malformed output: the response has no content list (got NoneType)"),
    ],
    ids=["invalid-json", "list", "null", "no-content"],
)
def test_a_200_that_is_no_message_is_a_failure_charged_its_reservation(
    api: FakeMessagesAPI, open_gateway: Open, body: bytes, failure: str
) -> None:
    api.default = Scripted(body=body)
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert result.failure is not None and result.failure.startswith(failure)
    assert (result.usage, result.usage_estimated) == (reservation(gateway, extractor), True)  # no usage said


def test_an_answer_without_usage_is_charged_its_reservation(api: FakeMessagesAPI, open_gateway: Open) -> None:
    body = message([memory()])
    del body["usage"]
    api.push(Scripted(body=body), Scripted(body=message([memory()], usage={"input_tokens": "lots"})))  # type: ignore[dict-item]
    gateway, extractor = open_gateway()
    charged = reservation(gateway, extractor)
    for _ in range(2):
        result = extract(gateway, extractor)
        assert result.value is not None and (result.usage, result.usage_estimated) == (charged, True)
    assert gateway.stats.tokens == gateway.stats["extraction"].estimated_tokens == 2 * charged.total


# ---------------------------------------------------------------------- the response-size cap

FOUR_MB = 4 * 1024 * 1024


def huge_answer() -> bytes:
    """A well-formed 4 MB answer (a proxy's doing): thousands of memories."""
    text = json.dumps({"memories": [memory(content="x" * 400)] * (FOUR_MB // 520)})
    return json.dumps(message(text=text)).encode()


def test_a_body_announced_over_the_cap_is_refused_unread(api: FakeMessagesAPI, open_gateway: Open) -> None:
    body = huge_answer()
    api.default = Scripted(body=body)
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert result.failure == f"response too large: Content-Length {len(body)} is over the 262144-byte cap"
    assert result.usage == reservation(gateway, extractor) and result.usage_estimated  # billed, usage unread
    assert len(api.requests) == 1


def test_a_body_without_length_is_read_up_to_the_cap_only(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.default = Scripted(body=huge_answer(), no_length=True)
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert result.failure == "response too large: body longer than 262144 bytes"
    assert result.usage_estimated and len(api.requests) == 1


def test_a_huge_error_page_costs_nothing(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.default = Scripted(status=502, body=b"<html>" + b"x" * FOUR_MB + b"</html>", content_type="text/html")
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert result.failure == f"api error 502 (response too large: Content-Length {FOUR_MB + 13} is over the 262144-byte cap)"
    assert result.usage is None and gateway.limiter.spent_today == 0


def test_the_cap_is_configurable_and_answers_below_it_pass(api: FakeMessagesAPI) -> None:
    answer = message([memory(content="y" * 400)] * 3)
    api.default = Scripted(body=answer, no_length=True)
    small = AnthropicExtractor(api_key="k", base_url=api.base_url, max_response_bytes=1024, deadline=2.0)
    roomy = AnthropicExtractor(api_key="k", base_url=api.base_url, deadline=2.0)
    for extractor, failure in [(small, "response too large: body longer than 1024 bytes"), (roomy, None)]:
        gateway = extractor.open_gateway(LlmRules())
        try:
            assert extract(gateway, extractor).failure == failure
        finally:
            gateway.close()
    with pytest.raises(ValueError, match="max_response_bytes"):
        AnthropicExtractor(max_response_bytes=10)


def test_compressed_bodies_are_not_asked_for_and_refused(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.default = Scripted(body=message([memory()]), headers={"content-encoding": "gzip"})
    gateway, extractor = open_gateway()
    result = extract(gateway, extractor)
    assert api.requests[0]["headers"]["Accept-Encoding"] == "identity"
    assert result.failure == "response refused: Content-Encoding 'gzip' was not asked for"


# ---------------------------------------------------------------------- cancellation and shutdown


def test_cancelled_replies_are_not_breaker_failures(api: FakeMessagesAPI, open_gateway: Open) -> None:
    """Before: five cancelled replies opened the breaker, and extraction fell back to the rules."""
    gate = threading.Event()
    api.push(*(Scripted(gate=gate, body=message(text="Hello.")) for _ in range(5)))
    gateway, extractor = open_gateway(breaker_failures=2, deadline=30.0)
    try:
        futures = [gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300) for _ in range(5)]
        wait_for(lambda: len(api.requests) == 5)  # all five sent: the API will bill them
        assert all(f.cancel() for f in futures)
        wait_for(lambda: gateway.pending() == 0)
    finally:
        gate.set()
    assert gateway.breaker.state is BreakerState.CLOSED and gateway.breaker.failures == 0
    counts = gateway.stats["reply"]
    assert (counts.calls, counts.cancelled, counts.failures) == (5, 5, 0)
    per_reply = gateway.estimate(LLMRequest(system=SYSTEM, messages=MESSAGES, max_tokens=300, parse=str))
    assert counts.tokens == counts.estimated_tokens == 5 * per_reply  # sent, so charged their reservations
    assert extract(gateway, extractor).value is not None  # extraction still goes to the LLM


def test_a_cancelled_trial_call_frees_the_half_open_circuit(api: FakeMessagesAPI, open_gateway: Open) -> None:
    now = [1000.0]
    api.push(Scripted(status=529, body=overloaded))
    gateway, extractor = open_gateway(breaker_failures=1, breaker_cooldown=30.0, deadline=30.0)
    gateway.breaker.now = lambda: now[0]
    assert extract(gateway, extractor).failure == "api error 529"
    now[0] += 31
    gate = threading.Event()
    api.push(Scripted(gate=gate, body=message(text="Hello.")))
    try:
        trial = gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300)
        assert gateway.breaker.state is BreakerState.HALF_OPEN
        assert gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300).result().failure == "circuit open"
        wait_for(lambda: len(api.requests) == 2)
        trial.cancel()
        wait_for(lambda: gateway.pending() == 0)
    finally:
        gate.set()
    assert gateway.breaker.state is BreakerState.HALF_OPEN
    assert extract(gateway, extractor).value is not None and gateway.breaker.state is BreakerState.CLOSED


def test_close_resolves_every_pending_future(api: FakeMessagesAPI, open_gateway: Open) -> None:
    gate = threading.Event()
    api.default = Scripted(gate=gate, body=message(text=json.dumps({"summary": "Too late."})))
    gateway, extractor = open_gateway(deadline=30.0)
    try:
        replies = [gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300) for _ in range(3)]
        summary = gateway.submit_summary("hilda", "Hilda", "Alice", "trade", ["x"])
        extraction = gateway.submit("hilda", "extraction", extractor.request(JOB, 600))
        assert not isinstance(summary, Refusal) and not isinstance(extraction, Refusal)
        wait_for(lambda: len(api.requests) == 5)
        gateway.close()
        futures: list[concurrent.futures.Future[Any]] = [*replies, summary, extraction]
        assert all(f.done() and not f.cancelled() for f in futures)
        assert {r.result().failure for r in replies} == {"shut down"}
        assert summary.result().failure == "shut down" and extraction.result().failure == "shut down"
    finally:
        gate.set()
    assert gateway.pending() == 0 and gateway.stats.failures == 0 and gateway.stats["reply"].cancelled == 3
    # After close: refused at once, nothing pending, nothing sent.
    assert gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300).result().failure == "shut down"
    assert gateway.submit_summary("hilda", "Hilda", "Alice", "trade", ["x"]) == Refusal("shut down")
    assert len(api.requests) == 5
    gateway.close()  # idempotent


def test_uninstall_resolves_a_pending_reply_and_keeps_the_job(api: FakeMessagesAPI) -> None:
    gate = threading.Event()
    api.default = Scripted(gate=gate, body=message(text="Hello."))
    llm = AnthropicExtractor(api_key="test-key", base_url=api.base_url, deadline=30.0)
    plugin = npc_memory.install(world="llm", pack="village", llm=llm)
    try:
        assert plugin.extraction.gateway is not None
        reply = plugin.extraction.gateway.submit_reply("hilda", SYSTEM, MESSAGES, 300)
        wait_for(lambda: len(api.requests) == 1)
        npc_memory.uninstall("llm")
        assert reply.done() and reply.result().failure == "shut down"
    finally:
        gate.set()


# ---------------------------------------------------------------------- structured output


def test_the_schema_sent_is_what_messages_parse_sends(api: FakeMessagesAPI, open_gateway: Open) -> None:
    for model in (MemoriesOut, SummaryOut):
        api.push(Scripted(body=message(text=json.dumps({"memories": []} if model is MemoriesOut else {"summary": "s"}))))
        with anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client:
            client.messages.parse(model="claude-haiku-4-5", max_tokens=10, messages=MESSAGES, output_format=model)  # type: ignore[arg-type]
    by_parse = [r["json"]["output_config"]["format"]["schema"] for r in api.requests]
    assert by_parse == [memories_schema(), summary_schema()]
    schema = memories_schema()
    item = schema["$defs"]["MemoryOut"]
    assert schema["required"] == ["memories"] and schema["additionalProperties"] is False
    assert item["required"] == ["content", "kind", "tags", "importance", "valence", "intensity", "actor",
                                "evidence"]
    assert item["properties"]["kind"]["enum"] == ["episodic", "semantic", "procedural"]


def test_tool_mode_sends_the_same_schema_as_a_forced_tool(api: FakeMessagesAPI, open_gateway: Open) -> None:
    api.push(Scripted(body=message([memory(content="Alice gave me a whetstone.", tags=["gift"])], tool=True)),
             Scripted(body=message(text="no tool call here")))
    gateway, extractor = open_gateway(mode="tool")
    result = extract(gateway, extractor)
    assert [m.content for m in result.value] == ["Alice gave me a whetstone."]
    body = api.requests[0]["json"]
    assert body["tools"][0]["input_schema"] == memories_schema() and "output_config" not in body
    assert body["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert extract(gateway, extractor).failure == "malformed output: no tool_use block for 'record_memories' in the response"


def test_the_tag_vocabulary_reaches_the_prompt(api: FakeMessagesAPI) -> None:
    tags = [("smithing", "forging, repairs and tools"), ("debt", "money owed")]
    assert "  - smithing: forging, repairs and tools\n  - debt: money owed" in system_prompt(tags)
    extractor = AnthropicExtractor(api_key="k", base_url=api.base_url, tags=tags, deadline=2.0)
    assert "  - debt: money owed" in str(extractor.request(JOB, 600).system[0]["text"])  # type: ignore[index]
    pack = load_pack("village")
    pipeline = ExtractionPipeline(pack.budgets, pack.llm, extractor, tags=[("loyalty", "standing by someone")])
    try:
        pipeline.enqueue(JOB)
        pipeline.advance()  # the LLM call goes out on the worker thread
        wait_for(lambda: len(api.requests) == 1)
        sent = api.requests[0]["json"]["system"][0]["text"]
        assert "  - loyalty: standing by someone" in sent and "smithing" not in sent
    finally:
        pipeline.close()
    with pytest.raises(ValueError, match="pairs"):
        AnthropicExtractor(tags=["trade"])  # type: ignore[list-item]


def test_the_pipeline_takes_its_rule_extractor(api: FakeMessagesAPI) -> None:
    class Silent:
        def extract(self, job: ExtractionJob) -> tuple[Any, ...]:
            return ()

    pack = load_pack("village")
    pipeline = ExtractionPipeline(pack.budgets, pack.llm, rules=Silent())
    pipeline.enqueue(JOB)
    while pipeline.can_advance():
        pipeline.advance()
    [result] = pipeline.ready
    assert (result.source, result.memories) == ("rules", ())
    assert pipeline.gateway is None and api.requests == []


def test_the_llm_package_does_not_import_the_sdk_until_the_gateway_is_used() -> None:
    code = (
        "import sys, npc_memory, npc_memory.llm, npc_memory.extraction.pipeline; "
        "assert 'anthropic' not in sys.modules; "
        "npc_memory.llm.Reply, npc_memory.llm.TokenUsage; assert 'anthropic' not in sys.modules; "
        "npc_memory.llm.LLMGateway; assert 'anthropic' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
