"""The read path: relevance-ranked recall and prompt context for an NPC's next line."""

from npc_memory.context.builder import ContextProvider, ContextRequest, PromptContext, TokenBudget
from npc_memory.context.providers import (
    DEFAULT_PROVIDERS,
    KnowledgeProvider,
    MemoryProvider,
    RelationshipProvider,
    WorkingMemoryProvider,
    reputation,
)
from npc_memory.context.recall import BM25, Scorer
from npc_memory.context.text import estimate_tokens, terms

__all__ = [
    "BM25",
    "DEFAULT_PROVIDERS",
    "ContextProvider",
    "ContextRequest",
    "KnowledgeProvider",
    "MemoryProvider",
    "PromptContext",
    "RelationshipProvider",
    "Scorer",
    "TokenBudget",
    "WorkingMemoryProvider",
    "estimate_tokens",
    "reputation",
    "terms",
]
