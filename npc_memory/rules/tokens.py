"""The one token estimate: every token budget (prompt context, LLM reservations) uses it."""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """Estimated LLM tokens of ``text``: one per four characters, rounded up."""
    return tokens_of_length(len(text))


def tokens_of_length(characters: int) -> int:
    """Estimated LLM tokens of a text of ``characters`` characters (see :func:`estimate_tokens`)."""
    return math.ceil(characters / 4)
