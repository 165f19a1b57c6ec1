"""Persistence: snapshots of NPC and player components in a local document store.

``TinyDBStore`` (a directory of TinyDB databases and a journal) is the default
backend; any object following the :class:`Store` protocol can take its place (one
following :class:`JournalStore` also gets patches and one fsync per batch). The
PostgreSQL store, :class:`npc_memory.store.postgres.PostgresStore` (the ``postgres``
extra), is a :class:`SharedStore`: several game servers share a world, each owning the
NPCs and players it added.
"""

from npc_memory.store.audit import AuditProblem, AuditReadout
from npc_memory.store.base import (
    JournalStore,
    PendingForget,
    PrivacyStore,
    PurgeReport,
    SharedStore,
    Store,
    StoreContents,
)
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    EncodedDocument,
    NpcDocument,
    Part,
    PlayerDocument,
    StoreMeta,
    encode_document,
)
from npc_memory.store.migrations import MigrationContext
from npc_memory.store.tinydb_store import MsgspecStorage, TinyDBStore, check_unlocked

__all__ = [
    "SCHEMA_VERSION",
    "AuditEntry",
    "AuditProblem",
    "AuditReadout",
    "Document",
    "EncodedDocument",
    "JournalStore",
    "MigrationContext",
    "MsgspecStorage",
    "NpcDocument",
    "Part",
    "PendingForget",
    "PlayerDocument",
    "PrivacyStore",
    "PurgeReport",
    "SharedStore",
    "Store",
    "StoreContents",
    "StoreMeta",
    "TinyDBStore",
    "check_unlocked",
    "encode_document",
]
