"""Counters of every call made through the gateway, per purpose."""

from __future__ import annotations

from dataclasses import dataclass, field

from npc_memory.llm.model import PURPOSES, Purpose


@dataclass
class PurposeStats:
    """Counters for one purpose (extraction, summary or reply) since install.

    ``calls``: calls sent to the API (a call with retries counts once; ``attempts``
    counts its HTTP requests). ``failures``: calls that brought no usable answer (API
    error, timeout, cut-off or oversized body, malformed, refused or truncated answer).
    ``cancelled``: calls cancelled by their caller or by shutdown (neither successes nor
    failures). ``refused``: calls not made (budget, circuit open, shut down).
    ``tokens``: tokens counted against the budgets, cache tokens included; the part of
    them charged without a usage report (the reservation) is ``estimated_tokens``.
    ``cost_usd``: their cost."""

    calls: int = 0
    attempts: int = 0
    failures: int = 0
    cancelled: int = 0
    refused: int = 0
    tokens: int = 0
    estimated_tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class LLMStats:
    """Counters of the gateway: per purpose in ``by_purpose``, totals as properties."""

    by_purpose: dict[Purpose, PurposeStats] = field(
        default_factory=lambda: {purpose: PurposeStats() for purpose in PURPOSES}
    )

    def __getitem__(self, purpose: Purpose) -> PurposeStats:
        return self.by_purpose[purpose]

    @property
    def calls(self) -> int:
        """Calls sent, every purpose."""
        return sum(s.calls for s in self.by_purpose.values())

    @property
    def failures(self) -> int:
        """Failed calls, every purpose."""
        return sum(s.failures for s in self.by_purpose.values())

    @property
    def tokens(self) -> int:
        """Tokens counted, every purpose."""
        return sum(s.tokens for s in self.by_purpose.values())

    @property
    def cost_usd(self) -> float:
        """USD spent, every purpose."""
        return sum(s.cost_usd for s in self.by_purpose.values())
