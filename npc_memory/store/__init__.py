"""Persistence: snapshots of NPC and player components in a local document store.

``TinyDBStore`` (a directory of TinyDB databases) is the default backend; any object
following the :class:`Store` protocol can take its place.
"""

from npc_memory.store.base import Store, StoreContents
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    EncodedDocument,
    NpcDocument,
    PlayerDocument,
    StoreMeta,
    encode_document,
)
from npc_memory.store.migrations import MigrationContext
from npc_memory.store.tinydb_store import MsgspecStorage, TinyDBStore

__all__ = [
    "SCHEMA_VERSION",
    "AuditEntry",
    "Document",
    "EncodedDocument",
    "MigrationContext",
    "MsgspecStorage",
    "NpcDocument",
    "PlayerDocument",
    "Store",
    "StoreContents",
    "StoreMeta",
    "TinyDBStore",
    "encode_document",
]
