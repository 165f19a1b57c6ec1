"""Errors of the LLM layer."""

from __future__ import annotations

from npc_memory.errors import NpcMemoryError


class MalformedOutputError(NpcMemoryError):
    """The LLM's output is not usable; the message says what is wrong."""
