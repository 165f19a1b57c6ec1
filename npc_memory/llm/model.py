"""What goes into and comes out of one LLM call: requests, token usage, results, replies,
summaries and refusals. Plain data; importing this module never imports ``anthropic``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import msgspec

from npc_memory.components.jobs import TokenUsage as TokenUsage  # (the store reads it too)
from npc_memory.rules.tokens import estimate_tokens

T = TypeVar("T")

Purpose = Literal["extraction", "summary", "reply"]
"""What a call is for; the gateway's statistics are kept per purpose."""

PURPOSES: tuple[Purpose, ...] = ("extraction", "summary", "reply")


class Refusal(msgspec.Struct, frozen=True):
    """A call the gateway did not make, and why: over a budget (``"budget: …"``), the
    circuit open (``"circuit open"``) or the gateway shut down (``"shut down"``).
    Nothing was sent and nothing is charged."""

    reason: str


@dataclass(frozen=True)
class LLMRequest(Generic[T]):
    """One Messages API call to make: the prompt, the output limit, extra parameters
    (``output_config``, ``tools``, ``tool_choice``) and ``parse``, which turns the SDK's
    ``Message`` into the value wanted. ``parse`` runs on the worker thread, never on the
    tick; it raises :class:`~npc_memory.llm.errors.MalformedOutputError` for an unusable
    answer."""

    system: str | Sequence[Mapping[str, Any]]
    messages: Sequence[Mapping[str, Any]]
    max_tokens: int
    parse: Callable[[Any], T]
    options: Mapping[str, Any] = field(default_factory=dict)
    options_text: str | None = None
    """``options`` as JSON, when the builder has it at hand (a fixed schema's text, made
    once): saves encoding it for every estimate."""

    def prompt_text(self) -> str:
        """Everything the call sends as input, as text: system, messages and options
        (schemas and tool definitions count as input tokens too)."""
        parts: list[str] = []
        if isinstance(self.system, str):
            parts.append(self.system)
        else:
            parts.extend(str(block.get("text", "")) for block in self.system)
        for message in self.messages:
            content = message.get("content", "")
            parts.append(content if isinstance(content, str) else json.dumps(content))
        if self.options_text is not None:
            parts.append(self.options_text)
        elif self.options:
            parts.append(options_json(self.options))
        return "\n".join(parts)

    def estimate(self) -> tuple[int, int]:
        """(input tokens, output tokens) reserved before the call: the one token estimate
        (:func:`npc_memory.rules.tokens.estimate_tokens`) of the prompt, and ``max_tokens``."""
        return estimate_tokens(self.prompt_text()), self.max_tokens


def options_json(options: Mapping[str, Any]) -> str:
    """The JSON text of call options, as counted in a reservation."""
    return json.dumps(options, sort_keys=True, default=str)


class LLMResult(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """What one call through the gateway came to: ``value`` (the parsed answer) or
    ``failure`` (why not), the tokens counted and their cost in USD. ``usage_estimated``
    when the API could not tell the usage (a body cut off, stalled, too large or
    unreadable, a call cancelled after it was sent): the reservation was charged instead.
    ``attempts`` counts HTTP requests made (retries included)."""

    value: T | None = None
    failure: str | None = None
    usage: TokenUsage | None = None
    cost_usd: float = 0.0
    usage_estimated: bool = False
    attempts: int = 0
    cancelled: bool = False


class Reply(msgspec.Struct, frozen=True):
    """An NPC's line from :meth:`~npc_memory.llm.gateway.LLMGateway.submit_reply`:
    ``text``, or ``failure`` (over budget, circuit open, timeout, API error, refused or
    truncated answer, cancelled, shut down); the tokens counted and their cost in USD."""

    text: str | None = None
    failure: str | None = None
    usage: TokenUsage | None = None
    cost_usd: float = 0.0


class SummaryOutcome(msgspec.Struct, frozen=True):
    """What one summarising call produced: a sentence, or why it failed; usage when known,
    and its cost in USD."""

    text: str | None
    usage: TokenUsage | None
    failure: str | None = None
    cost_usd: float = 0.0
