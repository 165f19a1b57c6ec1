"""Content safety on entry: every text that enters an NPC's memory passes the pack's
screen (or a game's own) once; redactions and flags are counted, and each flag is
written to the audit log (where it entered, the rule families, the redacted types;
never the text itself)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec

from npc_memory.components import Turn
from npc_memory.safety import FLAG_MARK, Screen, Screener, ScreenResult, is_marked, quote
from npc_memory.state import WorldState

CACHED_LINES = 1024
"""Screen results kept for repeated texts (pack facts given to many NPCs, gossip)."""


class SafetyStats(msgspec.Struct, kw_only=True):
    """Counts since install: texts screened, texts with personal data redacted,
    injection attempts flagged, and flagged texts dropped (pack ``flagged = "drop"``)."""

    screened: int = 0
    redacted: int = 0
    flagged: int = 0
    dropped: int = 0


def marked(result: ScreenResult) -> str:
    """The text a flagged line is kept as: marked and quoted, so it reads as something
    said, never as an instruction."""
    return FLAG_MARK + quote(result.text)


def said(turn: Turn) -> str:
    """A flagged line of a conversation as a marked memory: who said what, quoted."""
    return f"{FLAG_MARK}{turn.speaker} said {turn.text.removeprefix(FLAG_MARK)}"


class SafetyService:
    """The screen in force for one plugin, with its counts."""

    def __init__(
        self, state: WorldState, audit: Callable[..., None] | None = None, screener: Screener | None = None
    ) -> None:
        self.state = state
        self.audit = audit
        self.stats = SafetyStats()
        self.screener: Screener = screener or Screen(state.pack.safety)
        self._cached: Callable[[str], ScreenResult] = functools.lru_cache(maxsize=CACHED_LINES)(self.screener)

    def use(self, screener: Screener) -> None:
        """Screen with ``screener`` from now on (a game's own, or a :class:`Screen`)."""
        self.screener = screener
        self._cached = functools.lru_cache(maxsize=CACHED_LINES)(screener)

    @property
    def drops(self) -> bool:
        """Whether the pack drops flagged lines rather than keeping them quoted."""
        return self.state.pack.safety.flagged == "drop"

    def check(self, text: str, where: str, target: str) -> ScreenResult:
        """Screen ``text`` entering at ``where`` (``"say"``, ``"remember"``, …) for
        ``target`` (an NPC key or a room); count it and audit a flag."""
        if is_marked(text):
            return ScreenResult(text=text)
        result = self._cached(text)
        stats = self.stats
        stats.screened += 1
        if result.findings:
            stats.redacted += 1
        if result.flagged:
            stats.flagged += 1
            if self.audit is not None:
                details: dict[str, Any] = {"where": where, "reasons": list(result.reasons)}
                if result.findings:
                    details["redacted"] = sorted({finding.type for finding in result.findings})
                self.audit("safety-flag", target, details=details)
        return result

    def kept(self, result: ScreenResult) -> str | None:
        """The text to keep for a screened line: redacted, marked and quoted if flagged,
        or ``None`` when the pack drops flagged lines (counted)."""
        if not result.flagged:
            return result.text
        if self.drops:
            self.stats.dropped += 1
            return None
        return marked(result)
