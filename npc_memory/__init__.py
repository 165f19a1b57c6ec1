"""esper-npc-memory: persistent memory, relationships and gossip for esper NPCs.

``npc_memory.install(...)`` adds the plugin to an esper world and returns its
:class:`MemoryPlugin` facade; see the README for a tour.
"""

from npc_memory import events
from npc_memory.clock import SECONDS_PER_DAY, GameClock
from npc_memory.collector import FrameCollector, collection_paused
from npc_memory.components import (
    EpisodicMemory,
    Memory,
    ProceduralMemory,
    Relationship,
    SemanticMemory,
    Stage,
    TriggerContext,
)
from npc_memory.content import Pack, load_pack
from npc_memory.context import PromptContext
from npc_memory.errors import (
    AlreadyInstalledError,
    DuplicateKeyError,
    EventHandlerError,
    InvalidArgumentError,
    MemoryCapacityError,
    NotInstalledError,
    NpcMemoryError,
    PackError,
    PrivacyError,
    StoreError,
    UnknownContentError,
    UnknownEntityError,
    VersionConflictError,
)
from npc_memory.installation import get_plugin, install, uninstall
from npc_memory.llm import Reply
from npc_memory.plugin import (
    ClonePlan,
    ConsentReport,
    ConversationEnded,
    EndGameReport,
    ForgetReport,
    Health,
    MemoryPlugin,
    PromptMessages,
    Ref,
)
from npc_memory.query import MemoryQuery
from npc_memory.state import Subscription

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The Anthropic SDK takes ~2 s to import: only games that configure an LLM pay for it.
    if name == "AnthropicExtractor":
        from npc_memory.extraction.anthropic import AnthropicExtractor

        return AnthropicExtractor
    raise AttributeError(f"module 'npc_memory' has no attribute {name!r}")


__all__ = [
    "SECONDS_PER_DAY",
    "AlreadyInstalledError",
    "AnthropicExtractor",
    "ClonePlan",
    "ConsentReport",
    "ConversationEnded",
    "DuplicateKeyError",
    "EndGameReport",
    "EpisodicMemory",
    "EventHandlerError",
    "ForgetReport",
    "FrameCollector",
    "GameClock",
    "Health",
    "InvalidArgumentError",
    "Memory",
    "MemoryCapacityError",
    "MemoryPlugin",
    "MemoryQuery",
    "NotInstalledError",
    "NpcMemoryError",
    "Pack",
    "PackError",
    "PrivacyError",
    "ProceduralMemory",
    "PromptContext",
    "PromptMessages",
    "Ref",
    "Relationship",
    "Reply",
    "SemanticMemory",
    "Stage",
    "StoreError",
    "Subscription",
    "TriggerContext",
    "UnknownContentError",
    "UnknownEntityError",
    "VersionConflictError",
    "collection_paused",
    "events",
    "get_plugin",
    "install",
    "load_pack",
    "uninstall",
]
