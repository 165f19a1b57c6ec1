"""The one token estimate: every token budget (prompt context, LLM reservations) uses it."""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """Estimated LLM tokens of ``text``: one per four characters, rounded up."""
    return math.ceil(len(text) / 4)
