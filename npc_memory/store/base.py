"""The store protocol every backend implements (TinyDB by default)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from npc_memory.store.documents import AuditEntry, Document, EncodedDocument, StoreMeta
from npc_memory.store.records import Record


class StoreContents(msgspec.Struct, kw_only=True):
    """Everything a store holds: its metadata (``None`` when new) and documents by key;
    ``lsns``: for a journaled store, the log sequence number each document is at."""

    meta: StoreMeta | None
    documents: dict[str, Document]
    lsns: dict[str, int] = msgspec.field(default_factory=dict)


@runtime_checkable
class Store(Protocol):
    """Where snapshots go. Writes are durable when they return; a backend is used by
    one thread at a time and owned by one process (it refuses a second opener).

    Documents arrive already encoded (:class:`EncodedDocument`, canonical JSON), so a
    snapshot never shares live components with the thread that writes them.
    """

    def load(self) -> StoreContents:
        """Every document and the metadata; damage raises ``StoreCorruptError``."""
        ...

    def write(self, documents: Sequence[EncodedDocument], meta: StoreMeta | None = None) -> None:
        """Write or replace ``documents``, then ``meta``; atomic per document."""
        ...

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the documents of ``keys`` (missing keys are ignored)."""
        ...

    def read_meta(self) -> StoreMeta | None:
        """The metadata, or ``None`` for a new store."""
        ...

    def write_meta(self, meta: StoreMeta) -> None:
        """Replace the metadata."""
        ...

    def append_audit(self, entry: AuditEntry) -> None:
        """Append to the append-only audit log."""
        ...

    def audit(self) -> list[AuditEntry]:
        """The audit log, oldest first."""
        ...

    def close(self) -> None:
        """Release the store (idempotent)."""
        ...


class PurgeReport(msgspec.Struct, kw_only=True):
    """What :meth:`PrivacyStore.purge` did: document files deleted (``removed``), older
    generations and leftovers scrubbed, problems folding the journal, journal segments
    left (0: none holds anything any more), and current files that still match."""

    removed: int = 0
    scrubbed: int = 0
    journal: list[str] = msgspec.field(default_factory=list)
    segments_left: int = 0
    remaining: list[str] = msgspec.field(default_factory=list)


class PendingForget(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A privacy operation that began and has not finished: forgetting player ``key``
    (``op`` "forget": what to look for); on a store game servers share also
    withdrawing player ``key``'s consent (``op`` "withdraw": ``purge`` their player and
    social items, else rewrite them as anonymous fragments of game ``game``) and ending
    game ``key`` (``op`` "end-game": ``purge`` its session and anon items, else compact
    them; ``legacy``: items made before games had ids end too; ``anonymous`` and
    ``transient``: the players known to be anonymous, or not to consent, when it
    began). The record exists only while the operation runs (a restart finishes it).
    On a store game servers share, ``acks`` lists the servers (sessions) that have done
    it in what they own. ``actor`` is who asked for it (the audit entry of a restart
    that finishes it names them; empty in records of earlier versions)."""

    key: str
    name: str | None = None
    acks: tuple[int, ...] = ()
    op: str = "forget"
    purge: bool = False
    game: str | None = None
    legacy: bool = False
    anonymous: tuple[str, ...] = ()
    transient: tuple[str, ...] = ()
    actor: str = ""


@runtime_checkable
class PrivacyStore(Store, Protocol):
    """A store that can erase a player from every generation it keeps on disk, and
    keeps the crash-safe record of forgetting still to finish and the audit salt."""

    def pending_forgets(self) -> list[PendingForget]:
        """The players whose forgetting began and has not finished."""
        ...

    def set_pending_forgets(self, pending: Sequence[PendingForget]) -> None:
        """Durably record the forgetting still to finish (empty: none)."""
        ...

    def purge(self, pattern: re.Pattern[str], remove: Sequence[str] = ()) -> PurgeReport:
        """Delete ``remove``'s documents and every older generation matching ``pattern``."""
        ...

    def audit_salt(self) -> bytes:
        """The salt of the pseudonyms in the audit log."""
        ...

    def set_audit_salt(self, salt: bytes) -> None:
        """Make ``salt`` the salt of the pseudonyms (a copied world keeps its own)."""
        ...


@runtime_checkable
class JournalStore(Store, Protocol):
    """A store with an append-only journal: the snapshot writer appends whole
    documents, patches against the version it wrote last (see
    :mod:`npc_memory.store.records`), deletions and metadata, one fsync per batch, and
    lets the store do its upkeep (checkpoints) in idle time."""

    def reserve_lsn(self) -> int:
        """A new log sequence number, higher than any the store holds."""
        ...

    def append(self, records: Iterable[Record]) -> int:
        """Append ``records`` in order, durable when it returns; returns bytes written."""
        ...

    def maintain(self, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        """Upkeep until ``deadline`` (``time.perf_counter()``); whether work remains.
        ``pause`` is called between small units of the work (where the calling thread
        may give other threads the interpreter)."""
        ...

    def versions(self) -> Mapping[str, int]:
        """The lsn of each document as the last ``load`` returned it (empty before)."""
        ...


@runtime_checkable
class SharedStore(Store, Protocol):
    """A store several game servers share, each owning the documents it claimed
    (see :mod:`npc_memory.store.postgres`): an NPC or player is claimed when it is
    added and given up with the write that follows its removal."""

    session: int
    """This game server's session (what the servers' records name it by)."""

    def claim(self, key: str, kind: str) -> Document | None:
        """Own ``key`` (of ``kind``: "npc" or "player") and return its document as
        stored now, or ``None``; raises ``StoreOwnedError`` if another server owns it."""
        ...

    def release_on_write(self, key: str) -> None:
        """Give up ``key`` with its next write."""
        ...

    def other_owners(self) -> list[int]:
        """The other game servers (their sessions) owning documents now."""
        ...

    def acknowledge_forget(self, key: str, op: str = "forget") -> None:
        """Record in ``key``'s pending operation ``op`` that this server has done its part."""
        ...

    def forget_progress(self, key: str, op: str = "forget") -> tuple[list[int], int | None]:
        """The live game servers owning documents that have not done their part of
        ``key``'s pending operation ``op`` yet, and the one to finish it (the first live
        server that did its part; ``None``: none, or no such operation)."""
        ...

    def take_free(self, pattern: re.Pattern[str], kind: str = "npc") -> list[Document]:
        """Own the documents of ``kind`` ("npc" or "player") no live game server owns in
        which ``pattern`` may find a mention, as stored now; each is given up with its
        next write."""
        ...
