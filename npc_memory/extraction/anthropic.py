"""LLM extraction with the official Anthropic SDK, on a worker thread.

:class:`AnthropicExtractor` is the configuration a game passes to
``npc_memory.install(llm=...)``. :class:`LLMWorker` runs one asyncio event loop on one
thread; the ``AsyncAnthropic`` client is created and closed inside that loop. The
tick only submits jobs and polls finished futures. Every call runs under a deadline
that also bounds the SDK's own retries and any ``retry-after`` wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable
from typing import Any, Literal

import anthropic

from npc_memory.extraction.budget import Price, price_of
from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, LLMOutcome, SummaryOutcome, TokenUsage
from npc_memory.extraction.validate import OUTPUT_SCHEMA, MalformedOutputError, parse_memories

DEFAULT_MODEL = "claude-haiku-4-5"

SYSTEM_PROMPT = """You are the memory of a non-player character (NPC) in a fantasy role-playing game.
Read the conversation between the NPC and a player and decide what the NPC will remember
about the player.

Return 0 to 3 memories. Remember:
- specific events and deeds (help, heroism, fights, trades, gifts, threats, insults, betrayals,
  quests, secrets),
- facts the player revealed about themselves,
- habits the NPC noticed ("always haggles").
Do not remember greetings, small talk, or anything the NPC already knows about itself.
Never record real-world personal information, whether the player seems human or automated,
or game puzzle solutions.

For each memory give:
- content: one sentence from the NPC's point of view, naming the player;
- kind: "episodic" (a specific event), "semantic" (a fact about the player) or "procedural" (a habit);
- tags: lower-case words from: trade, helpful, heroic, combat, threat, betrayal, gift, insult, quest,
  secret, theft, personal — plus any other short topic words;
- importance: 0 to 1, how much this matters to the NPC;
- valence: "positive", "neutral" or "negative" for the NPC;
- intensity: 0 to 1, how emotionally charged it was.
Answer with the JSON object only."""

FEW_SHOT = """Example 1
NPC: Hilda, the village blacksmith, at the forge. Player: Alice.
Hilda: Bandits are attacking the village! Help me!
Alice: I'll get my sword. Together we'll drive them off.
Answer: {"memories": [{"content": "Alice offered to fight the bandits attacking the village with me.",
"kind": "episodic", "tags": ["heroic", "combat", "bandits"], "importance": 0.8, "valence": "positive",
"intensity": 0.8}]}

Example 2
NPC: Marta, keeper of the village inn, at the tavern. Player: Cora.
Cora: Good morning, Marta! Lovely weather.
Marta: Morning, dear.
Answer: {"memories": []}

Example 3
NPC: Oswin, a trader in the market, at the market. Player: Cora.
Oswin: You always haggle over every copper, don't you?
Cora: Of course. Twelve silver for the rope, not fifteen.
Answer: {"memories": [{"content": "Cora always haggles hard over prices.", "kind": "procedural",
"tags": ["trade"], "importance": 0.3, "valence": "neutral", "intensity": 0.2}]}"""


SUMMARY_PROMPT = """You keep the long-term memory of a non-player character (NPC) in a fantasy
role-playing game. You are given several things the NPC remembers about one player that share
a theme. Write one short sentence of general knowledge the NPC draws from them, from the NPC's
point of view, naming the player (for example "Cora is a regular customer who buys supplies").
Never include real-world personal information. Answer with the JSON object only."""

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}

MAX_SUMMARY = 300


class AnthropicExtractor:
    """Configuration for LLM extraction through the Anthropic Messages API.

    ``api_key`` and ``base_url`` default to the SDK's own resolution
    (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``, …). ``mode`` is ``"json"``
    (structured output, ``output_config`` json_schema) or ``"tool"`` (a forced tool
    call with the same schema). ``deadline``, ``max_retries`` and ``max_tokens``
    default to the pack's ``[llm]`` settings. ``prices`` overrides the price table
    (USD per million tokens) used for cost accounting.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        mode: Literal["json", "tool"] = "json",
        deadline: float | None = None,
        max_retries: int | None = None,
        max_tokens: int | None = None,
        prices: dict[str, Price] | None = None,
    ) -> None:
        if mode not in ("json", "tool"):
            raise ValueError(f"mode must be 'json' or 'tool', got {mode!r}")
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.mode = mode
        self.deadline = deadline
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.price = price_of(model, prices)

    def __repr__(self) -> str:
        return f"AnthropicExtractor(model={self.model!r}, mode={self.mode!r})"

    def request(self, job: ExtractionJob, max_tokens: int) -> dict[str, Any]:
        """Keyword arguments of ``messages.create`` for ``job``: the fixed system prompt
        and examples marked for prompt caching, then the transcript."""
        lines = "\n".join(f"{turn.speaker}: {turn.text}" for turn in job.turns)
        where = f", at the {job.room}" if job.room else ""
        role = f", {job.npc_role}" if job.npc_role else ""
        transcript = f"NPC: {job.npc_name}{role}{where}. Player: {job.player_name}.\n{lines}\nAnswer:"
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": [
                {"type": "text", "text": SYSTEM_PROMPT},
                {"type": "text", "text": FEW_SHOT, "cache_control": {"type": "ephemeral"}},
            ],
            "messages": [{"role": "user", "content": transcript}],
        }
        if self.mode == "tool":
            request["tools"] = [
                {
                    "name": "record_memories",
                    "description": "Record what the NPC remembers from the conversation.",
                    "input_schema": OUTPUT_SCHEMA,
                }
            ]
            request["tool_choice"] = {"type": "tool", "name": "record_memories"}
        else:
            request["output_config"] = {"format": {"type": "json_schema", "schema": OUTPUT_SCHEMA}}
        return request

    def summary_request(
        self, npc_name: str, player_name: str, theme: str, contents: list[str], max_tokens: int
    ) -> dict[str, Any]:
        """Keyword arguments of ``messages.create`` summarising a cluster of memories."""
        lines = "\n".join(f"- {content}" for content in contents)
        prompt = f"NPC: {npc_name}. Player: {player_name}. Theme: {theme}.\nMemories:\n{lines}\nAnswer:"
        return {
            "model": self.model,
            "max_tokens": min(max_tokens, 200),
            "system": [{"type": "text", "text": SUMMARY_PROMPT, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": prompt}],
            "output_config": {"format": {"type": "json_schema", "schema": SUMMARY_SCHEMA}},
        }

    def parse_summary(self, message: Any) -> str:
        """The summary sentence in a response (cut to 300 characters)."""
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise MalformedOutputError(f"the response is not a message (got {type(message).__name__})")
        for block in content:
            if getattr(block, "type", None) == "text":
                try:
                    payload = json.loads(block.text)
                except json.JSONDecodeError as exc:
                    raise MalformedOutputError(f"not JSON: {exc}") from exc
                summary = payload.get("summary") if isinstance(payload, dict) else None
                if not isinstance(summary, str) or not summary.strip():
                    raise MalformedOutputError("expected an object with a non-empty 'summary'")
                return summary.strip()[:MAX_SUMMARY]
        raise MalformedOutputError("no text block in the response")

    def estimate_tokens(self, job: ExtractionJob, max_tokens: int) -> int:
        """A generous estimate of a call's tokens, reserved against budgets beforehand."""
        turns = sum(len(t.text) + len(t.speaker) + 2 for t in job.turns)
        prompt_chars = len(SYSTEM_PROMPT) + len(FEW_SHOT) + turns
        return prompt_chars // 3 + 50 + max_tokens

    def parse(self, message: Any) -> tuple[ExtractedMemory, ...]:
        """The memories in a Messages API response (validated and clamped)."""
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise MalformedOutputError(f"the response is not a message (got {type(message).__name__})")
        for block in content:
            if self.mode == "tool" and getattr(block, "type", None) == "tool_use":
                return parse_memories(block.input)
            if self.mode == "json" and getattr(block, "type", None) == "text":
                try:
                    return parse_memories(json.loads(block.text))
                except json.JSONDecodeError as exc:
                    raise MalformedOutputError(f"not JSON: {exc}") from exc
        wanted = "tool_use" if self.mode == "tool" else "text"
        raise MalformedOutputError(f"no {wanted} block in the response")


def plain_text(message: Any) -> str:
    """The text of a response, all text blocks joined."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise MalformedOutputError(f"the response is not a message (got {type(message).__name__})")
    text = "".join(getattr(block, "text", "") for block in content if getattr(block, "type", None) == "text")
    if not text.strip():
        raise MalformedOutputError("the response has no text")
    return text.strip()


def usage_of(message: Any) -> TokenUsage | None:
    """The token usage a response reports, cache tokens included."""
    usage = getattr(message, "usage", None)
    if usage is None:
        return None
    return TokenUsage(
        input=usage.input_tokens or 0,
        output=usage.output_tokens or 0,
        cache_write=usage.cache_creation_input_tokens or 0,
        cache_read=usage.cache_read_input_tokens or 0,
    )


class LLMWorker:
    """One thread with one asyncio loop and one ``AsyncAnthropic`` client."""

    def __init__(
        self, extractor: AnthropicExtractor, *, deadline: float, max_retries: int, max_tokens: int
    ) -> None:
        self.extractor = extractor
        self.deadline = extractor.deadline if extractor.deadline is not None else deadline
        self.max_retries = extractor.max_retries if extractor.max_retries is not None else max_retries
        self.max_tokens = extractor.max_tokens if extractor.max_tokens is not None else max_tokens
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="npc-memory-llm", daemon=True)
        self._thread.start()
        self._client: anthropic.AsyncAnthropic = asyncio.run_coroutine_threadsafe(
            self._open_client(), self._loop
        ).result(timeout=30)

    async def _open_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self.extractor.api_key,
            base_url=self.extractor.base_url,
            max_retries=self.max_retries,
            timeout=self.deadline,
        )

    def submit(self, job: ExtractionJob) -> concurrent.futures.Future[LLMOutcome]:
        """Start extracting ``job``; returns at once with a future to poll."""
        return asyncio.run_coroutine_threadsafe(self._extract(job), self._loop)

    def submit_text(self, request: dict[str, Any]) -> concurrent.futures.Future[SummaryOutcome]:
        """Start a plain call whose answer is the text of the response (an NPC's line)."""
        return asyncio.run_coroutine_threadsafe(self._text(request), self._loop)

    async def _text(self, request: dict[str, Any]) -> SummaryOutcome:
        value, usage, failure = await self._call(request, plain_text)
        return SummaryOutcome(value, usage, failure)

    def submit_summary(self, request: dict[str, Any]) -> concurrent.futures.Future[SummaryOutcome]:
        """Start a summarising call (see ``AnthropicExtractor.summary_request``)."""
        return asyncio.run_coroutine_threadsafe(self._summarise(request), self._loop)

    async def _extract(self, job: ExtractionJob) -> LLMOutcome:
        request = self.extractor.request(job, self.max_tokens)
        value, usage, failure = await self._call(request, self.extractor.parse)
        return LLMOutcome(value, usage, failure)

    async def _summarise(self, request: dict[str, Any]) -> SummaryOutcome:
        value, usage, failure = await self._call(request, self.extractor.parse_summary)
        return SummaryOutcome(value, usage, failure)

    async def _call(
        self, request: dict[str, Any], parse: Callable[[Any], Any]
    ) -> tuple[Any, TokenUsage | None, str | None]:
        """One Messages API call under the deadline; (parsed value, usage, failure)."""
        try:
            message = await asyncio.wait_for(self._client.messages.create(**request), timeout=self.deadline)
        except TimeoutError:
            return None, None, f"timeout after {self.deadline:g} s"
        except anthropic.APIStatusError as exc:
            return None, None, f"api error {exc.status_code}"
        except anthropic.APIConnectionError as exc:
            return None, None, f"connection error: {type(exc).__name__}"
        except anthropic.APIResponseValidationError as exc:
            return None, None, f"malformed output: invalid response body ({type(exc).__name__})"
        except Exception as exc:  # anything else the SDK raises is a failed call, not a crash
            return None, None, f"llm error: {type(exc).__name__}: {exc}"
        usage = usage_of(message)
        try:
            return parse(message), usage, None
        except MalformedOutputError as exc:
            return None, usage, f"malformed output: {exc}"

    def close(self) -> None:
        """Close the client inside its loop, then stop the thread (idempotent)."""
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self._loop.close()
