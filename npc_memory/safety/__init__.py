"""Content safety: a pure, deterministic, offline screen for text entering an NPC's
memory. It replaces real-world personal data by typed placeholders (``[email]``,
``[card]``, …) and flags text that tries to instruct a language model; :func:`quote`
presents remembered text as data inside delimiters a model is told never to follow."""

from npc_memory.safety.pii import Finding
from npc_memory.safety.screen import (
    DATA_NOTICE,
    FLAG_MARK,
    QUOTE_CLOSE,
    QUOTE_OPEN,
    Screen,
    Screener,
    ScreenResult,
    is_marked,
    quote,
    redact_texts,
    screen,
)

__all__ = [
    "DATA_NOTICE",
    "FLAG_MARK",
    "QUOTE_CLOSE",
    "QUOTE_OPEN",
    "Finding",
    "Screen",
    "ScreenResult",
    "Screener",
    "is_marked",
    "quote",
    "redact_texts",
    "screen",
]
