"""The plugin's behaviour, one service per concern. Each gets the world's shared state
and the services it needs in its constructor; the facade checks arguments and calls
one of them, the systems call them each tick."""

from npc_memory.services.board import GossipBoard
from npc_memory.services.conversations import ConversationEnded, ConversationService
from npc_memory.services.dialogue import DialogueService, PromptMessages
from npc_memory.services.health import Health, HealthService
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.maintenance import MaintenanceService
from npc_memory.services.memories import MemoryService
from npc_memory.services.persistence import PersistenceService
from npc_memory.services.population import PopulationService
from npc_memory.services.relationships import RelationshipService
from npc_memory.services.resolver import Resolver
from npc_memory.services.safety import SafetyService, SafetyStats

__all__ = [
    "ConversationEnded",
    "ConversationService",
    "DialogueService",
    "GossipBoard",
    "Health",
    "HealthService",
    "KnowledgeService",
    "MaintenanceService",
    "MemoryService",
    "PersistenceService",
    "PopulationService",
    "PromptMessages",
    "RelationshipService",
    "Resolver",
    "SafetyService",
    "SafetyStats",
]
