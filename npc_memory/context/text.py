"""Text normalisation for lexical retrieval (see :mod:`npc_memory.rules.text`)."""

from npc_memory.rules.text import STOP_WORDS, estimate_tokens, stem, terms

__all__ = ["STOP_WORDS", "estimate_tokens", "stem", "terms"]
