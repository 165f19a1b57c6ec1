"""The default store: TinyDB databases (one per NPC or player) and a journal.

Layout of a store directory (``village.db/``)::

    LOCK                  held by the one process that owns the store
    LOCK.checkpoint       held by its checkpoint process while that folds the journal
    meta.json             TinyDB database, table "meta": the StoreMeta document
    docs/<slug>.json      TinyDB database per NPC (table "npcs") or player ("players")
    docs/<slug>.json.prev the previous good generation of that file
    journal/<n>.log       append-only journal segments (see npc_memory.store.journal)
    audit/<day>.jsonl     append-only audit log, a checksum per line (npc_memory.store.audit)
    privacy-pending.json  players whose forgetting has not finished yet (exists only
                          while it runs: a restart finishes it)

Writes go to the journal: a batch of records (whole documents, patches, deletions,
metadata) is appended and made durable with one fsync, whatever the number of
documents. A *checkpoint* (:meth:`TinyDBStore.maintain`) folds sealed journal segments into the
document files, replacing each atomically (``.prev`` keeps the previous generation),
then deletes the segments. It runs in a checkpoint process of its own when
``checkpoint_process`` is on (the plugin's store: folding takes CPU that a busy game's
interpreter does not have to spare), else a slice at a time on the writer thread.
Loading reads the document files and replays the journal over them.

Every data file is valid TinyDB JSON (``TinyDB(path)`` reads it). Besides its table,
each holds a table ``journal`` with the log sequence number (lsn) of the last journal
record folded into it, so replay skips what a file already holds, also after a crash
in the middle of a checkpoint. The document files show the state as of the last
checkpoint; the store (``load``, every ``npc-memory`` tool) shows the journal's too.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import filelock
import msgspec
from tinydb import Storage

from npc_memory.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreLostError,
    StoreOwnershipError,
    StoreVersionError,
)
from npc_memory.store.audit import AUDIT_DIR, AuditLog, AuditReadout
from npc_memory.store.base import PendingForget, PurgeReport, StoreContents
from npc_memory.store.checks import consistency_problems, document_problems, meta_problems
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
from npc_memory.store.files import (
    PREVIOUS_SUFFIX,
    TEMP_SUFFIX,
    fsync_dir,
    previous_of,
    remove_durably,
    write_atomic,
)
from npc_memory.store.journal import Journal
from npc_memory.store.migrations import OLDEST_JOURNAL, MigrationContext, migrate_document, migrate_record
from npc_memory.store.records import (
    Delete,
    DeleteHead,
    MetaHead,
    MetaRecord,
    NpcPatch,
    PatchHead,
    Put,
    Record,
    SegmentHead,
    SegmentHeader,
    apply_patch,
    document_decoder,
    head_decoder,
    record_decoder,
    record_encoder,
)

log = logging.getLogger("npc_memory.store")

META_FILE = "meta.json"
DOCS_DIR = "docs"
JOURNAL_DIR = "journal"
PENDING_FILE = "privacy-pending.json"
DEFAULT_CHECKPOINT_BYTES = 64 * 1024 * 1024
"""Journal bytes after which :meth:`TinyDBStore.maintain` starts a checkpoint."""
PAUSE_EVERY_RECORDS = 128
"""Journal records read between two calls of a checkpoint's ``pause`` (~0.1 ms)."""
CLOSE_CHECKPOINT_KEYS = 256
"""``close`` folds the journal when it changes at most this many documents (a small
world's files are then current after a clean shutdown; a large one closes at once)."""
LOCK_FILE = "LOCK"
OWNER_FILE = "LOCK.owner"
"""Holds the process id of the store's owner, for the error a second opener gets."""
CHECKPOINT_LOCK_FILE = "LOCK.checkpoint"
"""Held by a checkpoint process while it folds. An owner that dies leaves its
checkpoint process running to the end of its fold; the next owner waits for it when it
opens the store, so the two never fold the same documents at once."""
ORPHAN_WAIT = 120.0
"""Seconds an opener waits for such a process before giving up (StoreLockedError)."""
CHILD_TRIES = 3
"""Checkpoint processes that may fail in a row before checkpoints go back to the
writer thread for the rest of the session."""
CHILD_DEADLINE = 600.0
"""Seconds after which a checkpoint process still running is stopped, and checkpoints
go back to the writer thread (one folds a 64 MB journal in about 2 s of CPU)."""
_TABLES = {"npc": "npcs", "player": "players"}


class MsgspecStorage(Storage):
    """A TinyDB ``Storage`` that encodes with msgspec and writes atomically, keeping
    the previous generation: ``TinyDB(path, storage=MsgspecStorage)``."""

    def __init__(self, path: str | os.PathLike[str], **_: Any) -> None:
        self.path = Path(path)

    def read(self) -> dict[str, dict[str, Any]] | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if not raw.strip():
            return None
        try:
            data = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise StoreCorruptError(str(self.path), f"invalid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise StoreCorruptError(str(self.path), "not a TinyDB database (top level is not an object)")
        return data

    def write(self, data: dict[str, dict[str, Any]]) -> None:
        write_atomic(self.path, msgspec.json.encode(data))


class _Lsn(msgspec.Struct):
    lsn: int


class _DocFile(msgspec.Struct, omit_defaults=True):
    npcs: dict[str, NpcDocument] = msgspec.field(default_factory=dict)
    players: dict[str, PlayerDocument] = msgspec.field(default_factory=dict)
    journal: dict[str, _Lsn] = msgspec.field(default_factory=dict)


class _MetaFile(msgspec.Struct):
    meta: dict[str, StoreMeta]
    journal: dict[str, _Lsn] = msgspec.field(default_factory=dict)


class _LsnOnly(msgspec.Struct):
    journal: dict[str, _Lsn] = msgspec.field(default_factory=dict)


def _lsn_of(table: dict[str, _Lsn]) -> int:
    return max((entry.lsn for entry in table.values()), default=0)


_doc_file_decoder = msgspec.json.Decoder(_DocFile)
_meta_decoder = msgspec.json.Decoder(_MetaFile)
_lsn_decoder = msgspec.json.Decoder(_LsnOnly)
_HEADER = record_encoder.encode(SegmentHeader())
_pending_decoder = msgspec.json.Decoder(list[PendingForget])
_NOT_SLUG = re.compile(r"[^a-z0-9_-]+")


def file_name(key: str) -> str:
    """The file holding the document of ``key``: a readable slug plus a hash of the key."""
    slug = _NOT_SLUG.sub("-", key.lower()).strip("-")[:40] or "doc"
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
    return f"{slug}-{digest}.json"


@dataclass(slots=True)
class _Entry:
    """One journal record of a key in the segments being folded: where it is, not its
    bytes (read again as it is folded), so a checkpoint holds a few dozen bytes per
    record rather than the whole journal."""

    lsn: int
    kind: str  # "put", "patch" or "delete"
    segment: int
    offset: int  # of the record's frame in its segment
    length: int  # of its payload


@dataclass
class _Scan:
    """The start of a checkpoint: reading the sealed segments' records (in slices)."""

    segments: list[int]
    records: Iterator[tuple[int, int, Any, memoryview]]
    strict: bool
    entries: dict[str, list[_Entry]] = field(default_factory=dict)
    meta: tuple[int, bytes] | None = None
    meta_at: tuple[int, int, int] | None = None
    """Where the last metadata record is: segment, frame offset, payload length."""
    top: int = 0


class FoldResult(msgspec.Struct, frozen=True):
    """What a checkpoint process reports of its fold: the highest lsn read, where the
    last metadata record is (segment, frame offset, payload length: the owner reads it
    there, so no game data passes outside the store), problems, and whether a document
    could not be folded."""

    top: int
    meta_at: tuple[int, int, int] | None
    problems: list[str]
    keep: bool


_fold_result_decoder = msgspec.json.Decoder(FoldResult)


@dataclass
class _Child:
    """A checkpoint process folding ``segments``; its output goes to temporary files."""

    process: subprocess.Popen[bytes]
    segments: list[int]
    stdout: IO[bytes]
    stderr: IO[bytes]
    files: contextlib.ExitStack
    started: float  # time.monotonic()


@dataclass
class _Fold:
    """A checkpoint in progress: sealed segments folded into the document files."""

    segments: list[int]
    entries: dict[str, list[_Entry]]
    keys: list[str]
    meta: MetaRecord | None
    top: int
    strict: bool
    position: int = 0
    problems: list[str] = field(default_factory=list)
    keep: bool = False  # a document could not be folded: keep the segments


class TinyDBStore:
    """The TinyDB-format store directory at ``path`` (created if missing).

    The store is locked for as long as it is open: a second opener, in this process
    or another, gets :class:`StoreLockedError`. Documents older than the current
    schema are migrated when read (``migration`` supplies what a migration needs).
    ``checkpoint_bytes``: journal size past which :meth:`maintain` starts a checkpoint;
    ``checkpoint_on_close``: let :meth:`close` fold a small journal (off for readers
    that must not write, such as ``export`` and ``inspect``). ``read_only``: the
    opener only reads (a store on read-only media is then opened without its lock).
    ``checkpoint_process``: :meth:`maintain` folds in a checkpoint process
    (``python -P -m npc_memory.store.checkpointer``, run by :attr:`checkpoint_python`,
    at the lowest priority, in a session of its own) rather than in slices on the
    caller's thread. It is on only where this interpreter can start another (not
    frozen, ``sys.executable`` a ``python`` or ``pypy``: an embedding game engine's
    executable is not one). A failed process is logged and its checkpoint retried in a
    new one; after ``CHILD_TRIES`` failures in a row, or one that runs past
    ``CHILD_DEADLINE``, the store folds on the caller's thread from then on.
    ``checkpointer``: the opener *is* such a process (see :meth:`fold_sealed`): it
    takes none of the owner's locks and writes nothing but document files.

    Before each journal append the store checks it still owns its directory: a
    removed directory is recreated (:class:`StoreLostError`: the caller writes
    everything again); a lock file removed or replaced under it stops every further
    write (:class:`StoreOwnershipError`), so another owner's data is never overwritten.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        migration: MigrationContext | None = None,
        checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES,
        checkpoint_on_close: bool = True,
        read_only: bool = False,
        checkpoint_process: bool = False,
        checkpointer: bool = False,
    ) -> None:
        self.path = Path(path)
        self.migration = migration or MigrationContext()
        self.checkpoint_bytes = checkpoint_bytes
        self.checkpoint_on_close = checkpoint_on_close and not (read_only or checkpointer)
        self.read_only = read_only
        python = _python_for_checkpoints()
        writes = not (read_only or checkpointer)
        self.checkpoint_process = checkpoint_process and python is not None and writes
        self.checkpoint_python = python or ""
        """The interpreter that runs checkpoint processes."""
        self._child: _Child | None = None
        self._child_failures = 0  # in a row
        self._lock: filelock.BaseFileLock | None = None
        self._lock_id: tuple[int, int] | None = None
        self._disowned: str | None = None  # why this process stopped writing, once it has
        self._lost: str | None = None  # what removed the store's contents, until a write hears it
        self._found: list[tuple[str, str]] = []  # damage seen while opening, reported by load
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path} is a file, not a store directory")
        if self.path.is_dir() and any(self.path.iterdir()) and not is_store(self.path):
            raise StoreError(f"{self.path} is not empty and is not an npc-memory store; refusing to use it")
        self._audit = AuditLog(self.path)
        try:
            if not self.path.exists():
                if not create:
                    raise StoreError(f"no store at {self.path}")
                self.path.mkdir(parents=True)
            docs = self.path / DOCS_DIR
            if not docs.is_dir() and (self.path / META_FILE).exists():
                self._found.append((str(docs), "missing: every NPC and player document is gone"))
            if not checkpointer:
                self._acquire()
            if not (read_only or checkpointer):
                if not self._found:  # a removed docs/ stays reported until repaired
                    docs.mkdir(exist_ok=True)
                self._clean_temporaries()
            self._journal = Journal(self.path / JOURNAL_DIR, create=not (read_only or checkpointer))
        except OSError as exc:
            if self._lock is not None:
                self._lock.release()
            raise StoreError(f"cannot open store {self.path}: {_os_problem(exc)}") from exc
        self._lsn: int | None = None  # the highest lsn in use, once known
        self._fold: _Fold | None = None
        self._scan: _Scan | None = None
        """The journal being read for a checkpoint (before :attr:`_fold` starts)."""
        self._unfolded = self._journal.bytes_on_disk()
        self._leftover = bool(self._journal.segments())  # an earlier session's journal
        self._segment_keys: dict[int, set[str]] = {}  # keys each known segment changes
        self._segment_versions: dict[int, int] = {}  # schema of each segment read, if older
        self._versions: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"TinyDBStore({str(self.path)!r})"

    # ------------------------------------------------------------------ reading

    def load(self) -> StoreContents:
        """Every document and the metadata: the document files with the journal
        replayed over them. Raises :class:`StoreCorruptError` naming the first damaged
        file, :class:`StoreVersionError` for a newer schema; nothing is dropped or
        reset (but a torn last journal record, which was never acknowledged)."""
        found = list(self._found)
        meta, meta_lsn = None, 0
        try:
            meta, meta_lsn = self._read_meta_and_lsn(self.path / META_FILE)
        except StoreCorruptError as exc:
            found.append((exc.path, exc.problem))
        documents: dict[str, Document] = {}
        lsns: dict[str, int] = {}
        for path in self._document_paths():
            try:
                document, lsn = self._read_document_and_lsn(path)
            except StoreCorruptError as exc:
                found.append((exc.path, exc.problem))
                continue
            documents[document.key] = document
            lsns[document.key] = lsn
        if found:  # also what the readable documents hold, before stopping
            docs = self.path / DOCS_DIR
            for key, document in documents.items():
                found += [(str(docs / file_name(key)), p) for p in document_problems(document)]
            raise self._damage(found)
        folded = max(lsns.values(), default=0) > 0  # documents a checkpoint wrote
        with self._naming():
            meta, top = self._replay(documents, lsns, meta, meta_lsn)
        found += self._value_problems(documents, meta, folded=folded)
        if found:
            raise self._damage(found)
        self._lsn = max(self._lsn or 0, top, *lsns.values())
        self._versions = {key: lsns[key] for key in documents}
        return StoreContents(meta=meta, documents=documents, lsns=dict(self._versions))

    def _value_problems(
        self, documents: dict[str, Document], meta: StoreMeta | None, *, folded: bool
    ) -> list[tuple[str, str]]:
        """Values the schema's types cannot rule out, and files that disagree."""
        found: list[tuple[str, str]] = []
        docs = self.path / DOCS_DIR
        for key, document in documents.items():
            found += [(str(docs / file_name(key)), problem) for problem in document_problems(document)]
        if meta is not None:
            found += [(str(self.path / META_FILE), problem) for problem in meta_problems(meta)]
        found += consistency_problems(
            self.path, documents, meta, folded=folded and not self._journal.segments(),
            read=self.previous_key,
            forgotten=self.forgotten,
        )
        return found

    def forgotten(self) -> set[str]:
        """Keys the audit log says were forgotten (empty if it cannot be read)."""
        try:
            return {entry.target for entry in self.audit() if entry.action == "forget"}
        except StoreError:
            return set()

    def previous_key(self, path: Path) -> str | None:
        """The key of the document the previous generation ``path`` holds (``None``:
        unreadable)."""
        try:
            return self._read_document(path, name=path.name.removesuffix(PREVIOUS_SUFFIX)).key
        except StoreError:
            return None

    def _damage(self, found: list[tuple[str, str]]) -> StoreCorruptError:
        error = StoreCorruptError(found[0][0], found[0][1], store=str(self.path))
        error.found = found
        return error

    @contextlib.contextmanager
    def _naming(self) -> Iterator[None]:
        """Name this store in the repair hint of damage found inside the block."""
        try:
            yield
        except StoreCorruptError as exc:
            exc.store = str(self.path)
            raise

    def versions(self) -> dict[str, int]:
        """The lsn of each document as the last :meth:`load` returned it."""
        return self._versions

    def read_meta(self) -> StoreMeta | None:
        """The store metadata (the journal's latest), or ``None`` for a new store."""
        with self._naming():
            meta, meta_lsn = self._read_meta_and_lsn(self.path / META_FILE)
            latest: memoryview | None = None
            for _, _, head, payload in self._journal_records():
                if isinstance(head, MetaHead) and head.lsn > meta_lsn:
                    latest, meta_lsn = payload, head.lsn
        if latest is not None:
            record = record_decoder.decode(latest)
            assert isinstance(record, MetaRecord)
            meta = self._checked_meta(record.meta, str(self.path / JOURNAL_DIR))
        return meta

    def _read_meta_file(self, path: Path) -> StoreMeta | None:
        return self._read_meta_and_lsn(path)[0]

    def _read_meta_and_lsn(self, path: Path) -> tuple[StoreMeta | None, int]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None, 0
        try:
            parsed = _meta_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            raise StoreCorruptError(str(path), _describe(exc)) from exc
        lsn = _lsn_of(parsed.journal)
        if not parsed.meta:  # checkpointed before any metadata was written
            return None, lsn
        return self._checked_meta(next(iter(parsed.meta.values())), str(path)), lsn

    def _checked_meta(self, meta: StoreMeta, source: str) -> StoreMeta:
        if meta.schema_version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"store {self.path} has schema version {meta.schema_version}, newer than this "
                f"npc-memory understands ({SCHEMA_VERSION}); upgrade npc-memory to open it"
            )
        return meta

    def audit(self) -> list[AuditEntry]:
        """Every readable audit entry, oldest first (see :meth:`read_audit`)."""
        return self._audit.read().entries

    def read_audit(self) -> AuditReadout:
        """The audit log: readable entries, oldest first, and the damaged lines that
        were skipped (a bad checksum or a torn last line never stops reading)."""
        return self._audit.read()

    def repair_audit(self) -> int:
        """Rewrite damaged audit files without their unreadable lines; returns how
        many lines were dropped (the damaged files are kept as ``.broken``)."""
        return len(self._audit.repair())

    def audit_salt(self) -> bytes:
        """The salt of the pseudonyms that stand for players in the audit log (made on
        first use; a read-only store without one returns ``b""``)."""
        return self._audit.salt(create=not self.read_only)

    def set_audit_salt(self, salt: bytes) -> None:
        """Make ``salt`` the audit log's salt (a world copied here keeps its pseudonyms)."""
        self._audit.set_salt(salt)

    def check_file(self, path: Path, *, as_name: str | None = None) -> None:
        """Decode one data file (metadata or document) as loading would, and check its
        values, raising the same errors; ``as_name`` is the file name it stands for
        (for a ``.prev`` copy)."""
        name = as_name or path.name
        with self._naming():
            if name == META_FILE:
                meta = self._read_meta_file(path)
                problems = [] if meta is None else meta_problems(meta)
            else:
                problems = document_problems(self._read_document(path, name=name))
        if problems:
            raise StoreCorruptError(str(path), "; ".join(problems), store=str(self.path))

    def check_journal(self) -> list[str]:
        """Problems in the journal segments (damaged records), without raising."""
        problems = []
        for number in self._journal.segments():
            path = self._journal.path(number)
            try:
                for _ in self._journal.records(number):
                    pass
            except StoreCorruptError as exc:
                problems.append(f"{path}: {exc.problem}")
        return problems

    def keys(self) -> list[str]:
        """Keys of every stored document (loads the store)."""
        return sorted(self.load().documents)

    # ------------------------------------------------------------------ writing

    def reserve_lsn(self) -> int:
        """A new log sequence number, higher than any the store holds."""
        if self._lsn is None:
            self._lsn = self._scan_lsn()
        self._lsn += 1
        return self._lsn

    def append(self, records: Iterable[Record]) -> int:
        """Append ``records`` to the journal and fsync once; returns the bytes
        written. Durable when it returns; on an error nothing is acknowledged and the
        segment is sealed (its tail may be torn; the next append starts a new one)."""
        self.verify()
        if not self._journal.current:
            self._journal.open_segment(_HEADER)
        keys = self._segment_keys.setdefault(self._journal.current, set())
        try:
            written = self._journal.write(_encoded(records, keys))
            self._journal.sync()
        except BaseException:
            self._journal.seal()
            raise
        self._unfolded += written
        return written

    def verify(self) -> None:
        """Check that this process still owns the store before a write. Raises
        :class:`StoreLostError` (once) after recreating a removed directory (what it
        held is gone: write everything again) and :class:`StoreOwnershipError` once the
        lock file was removed or replaced (this store then never writes again)."""
        self._check_owner()
        if self._disowned is not None:
            raise StoreOwnershipError(self._disowned)
        if self._lost is not None:
            lost, self._lost = self._lost, None
            raise StoreLostError(lost)

    def _check_owner(self) -> None:
        """Notice a removed directory (recreate it, remember it for :meth:`verify`) or
        a lock lost to another process (stop writing for good)."""
        if self._disowned is not None:
            return
        if self._lock is None:
            if self.read_only:
                raise StoreError(f"store {self.path} was opened read-only")
            self._recreate(f"store directory {self.path} was removed while in use")  # again: it failed before
            return
        try:
            current: tuple[int, int] | None = _file_id(self.path / LOCK_FILE)
        except FileNotFoundError:
            current = None
        if current == self._lock_id:
            if not (self._journal.directory.is_dir() and (self.path / DOCS_DIR).is_dir()):
                self._recreate(f"part of store {self.path} was removed while in use")
            return
        if current is None and not is_store(self.path):
            self._recreate(f"store directory {self.path} was removed while in use")
            return
        self._disown(
            f"store {self.path} lost its lock while in use (the lock file was removed or replaced): "
            "this process stopped writing to it, so another owner's data is never overwritten"
        )

    def _disown(self, why: str) -> None:
        self._disowned = why
        self._stop_child()
        self._fold = self._scan = None
        self._journal.close_readers()
        log.error("%s", why)

    @property
    def disowned(self) -> bool:
        """Whether this process lost the store's lock and stopped writing."""
        return self._disowned is not None

    def _recreate(self, what: str) -> None:
        """Make the directory again after it was removed, and own it again."""
        self._stop_child()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / DOCS_DIR).mkdir(exist_ok=True)
        self._journal.close()  # segment numbers start again: no reader may outlive its file
        self._journal.directory.mkdir(exist_ok=True)
        self._fold = self._scan = None
        self._segment_keys.clear()
        self._segment_versions.clear()
        self._unfolded = 0
        self._leftover = False
        try:
            self._acquire()
        except StoreLockedError as exc:  # someone else took the new directory first
            self._disown(f"{what}, and another process owns it now ({exc})")
            return
        self._lost = f"{what}; it was recreated and everything in memory is written again"
        log.error("%s", self._lost)

    def write(self, documents: Sequence[EncodedDocument], meta: StoreMeta | None = None) -> None:
        """Write ``documents`` (then ``meta``), each replacing the previous version of
        its key; durable when it returns (one journal append)."""
        records: list[Record] = [
            Put(lsn=self.reserve_lsn(), key=d.key, kind=d.kind, data=d.data) for d in documents
        ]
        if meta is not None:
            records.append(MetaRecord(lsn=self.reserve_lsn(), meta=meta))
        if records:
            self.append(records)

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the documents of ``keys`` (missing keys are ignored)."""
        records: list[Record] = [Delete(lsn=self.reserve_lsn(), key=key) for key in keys]
        if records:
            self.append(records)

    def write_meta(self, meta: StoreMeta) -> None:
        """Replace the store metadata."""
        self.append([MetaRecord(lsn=self.reserve_lsn(), meta=meta)])

    def append_audit(self, entry: AuditEntry) -> None:
        """Append one entry to the audit log and fsync it."""
        self._audit.append(entry)

    # ------------------------------------------------------------------ forgetting

    def pending_forgets(self) -> list[PendingForget]:
        """The players whose forgetting began and has not finished."""
        try:
            return _pending_decoder.decode((self.path / PENDING_FILE).read_bytes())
        except FileNotFoundError:
            return []
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StoreCorruptError(str(self.path / PENDING_FILE), _describe(exc)) from exc

    def set_pending_forgets(self, pending: Sequence[PendingForget]) -> None:
        """Durably record the forgetting still to finish (an empty list removes the file)."""
        path = self.path / PENDING_FILE
        if pending:
            write_atomic(path, msgspec.json.encode(list(pending)), keep_previous=False)
        else:
            remove_durably(path)

    def purge(self, pattern: re.Pattern[str], remove: Sequence[str] = ()) -> PurgeReport:
        """Leave no trace that ``pattern`` finds in any generation on disk.

        The journal is folded into the document files and its segments deleted; the
        files of ``remove`` (and their previous generations) are deleted without a
        journal record, last; before that every other file is searched: a previous generation
        (``.prev``) that matches is replaced by a copy of its current file (or deleted
        if that matches too), a damaged copy (``.broken``) or a temporary file that
        matches is deleted. Current files that still match are reported, not touched.
        The audit log and lock files are not searched (the log holds pseudonyms)."""
        report = PurgeReport()
        report.journal = self.checkpoint(strict=False)
        report.segments_left = len(self._journal.segments())
        removed = {self.path / DOCS_DIR / file_name(key) for key in remove}
        skip = {self.path / name for name in (LOCK_FILE, OWNER_FILE, CHECKPOINT_LOCK_FILE, PENDING_FILE)}
        skip |= removed | {previous_of(p) for p in removed}
        candidates = [
            p
            for p in sorted(self.path.rglob("*"))
            if p.is_file() and p not in skip and AUDIT_DIR not in p.relative_to(self.path).parts
        ]
        for path in candidates:
            if not _matches(pattern, path):
                continue
            name = path.name
            if name.endswith(PREVIOUS_SUFFIX):
                current = path.with_name(name.removesuffix(PREVIOUS_SUFFIX))
                if current.exists() and not _matches(pattern, current):
                    write_atomic(path, current.read_bytes(), keep_previous=False, sync_dir=False)
                else:
                    path.unlink()
                report.scrubbed += 1
            elif name.endswith((".broken", TEMP_SUFFIX)):
                path.unlink()
                report.scrubbed += 1
            else:
                report.remaining.append(str(path.relative_to(self.path)))
        # Last: until they go, the documents of ``remove`` say whom a restart must forget.
        for key, path in zip(remove, [self.path / DOCS_DIR / file_name(k) for k in remove], strict=True):
            if path.exists() or previous_of(path).exists():
                remove_durably(path, sync_dir=False)
                report.removed += 1
            self._versions.pop(key, None)
        for directory in {self.path, self.path / DOCS_DIR, self.path / JOURNAL_DIR}:
            if directory.is_dir():
                fsync_dir(directory)
        return report

    # ------------------------------------------------------------------ checkpoints

    def maintain(self, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        """Checkpoint work until ``deadline`` (``time.perf_counter()``), if due: the
        journal outgrew ``checkpoint_bytes`` or an earlier session left segments.
        Returns whether work remains for the caller: not while a checkpoint process
        folds (see :attr:`checkpointing`; the next call after it exits finishes its
        checkpoint). Safe to stop anywhere (a crash too)."""
        self._check_owner()
        if self._disowned is not None or self._lost is not None:
            return False  # (the next append reports it)
        if self._child is not None:
            if self._child.process.poll() is None:
                if time.monotonic() - self._child.started <= CHILD_DEADLINE:
                    return False  # nothing for this thread: the writer sleeps until its next batch
                self._stop_child()
                self._child_failed(f"it ran over {CHILD_DEADLINE:.0f} s", give_up=True)
            else:
                self._end_child()
            return self._leftover or self._unfolded >= self.checkpoint_bytes
        if self._fold is None:
            if self._scan is None:
                if not (self._leftover or self._unfolded >= self.checkpoint_bytes):
                    return False
                self._scan = self._start_scan(strict=True)
                if self._scan is None:
                    return False
                if self.checkpoint_process and self._start_child(self._scan.segments):
                    self._scan = None
                    return False
            try:
                if not self._scan_step(self._scan, deadline, pause):
                    return True
            except BaseException:  # a scan that stopped half-way must never be folded
                self._scan = None
                raise
            self._fold, self._scan = self._fold_of(self._scan), None
        if not self._fold_step(self._fold, deadline, pause):
            return True
        self._finish_fold(self._fold)
        self._fold = None
        return self._unfolded >= self.checkpoint_bytes

    @property
    def checkpointing(self) -> bool:
        """Whether a checkpoint process is folding (or has exited and waits for
        :meth:`maintain` to finish its checkpoint)."""
        return self._child is not None

    def checkpoint(self, *, strict: bool = True) -> list[str]:
        """Fold the whole journal into the document files now. With ``strict`` off
        (repair), damaged records and changes that no longer apply are skipped and
        described in the returned list instead of raising."""
        with self._naming():
            return self._checkpoint(strict)

    def _checkpoint(self, strict: bool) -> list[str]:
        self._end_or_stop_child()  # what it folded stays folded: the fold below skips it
        self._scan = None  # (read again below, with every segment)
        if self._fold is not None and self._fold.strict != strict:
            self._fold = None
            self._journal.close_readers()
        problems: list[str] = []
        while True:  # a checkpoint in progress first, then what was appended since
            fold = self._fold or self._begin_fold(strict=strict, all_segments=True)
            self._fold = None
            if fold is None:
                return problems
            self._fold_step(fold, float("inf"))
            self._finish_fold(fold)
            problems += fold.problems
            if fold.keep:  # what could not be folded stays in the journal
                return problems

    def fold_sealed(self, segments: Sequence[int]) -> FoldResult:
        """Fold the sealed journal ``segments`` into the document files (strictly: a
        damaged record raises), without removing them or touching the metadata file:
        the work of a checkpoint process, whose owner finishes the checkpoint."""
        scan = _Scan(list(segments), self._journal_records(segments), strict=True)
        self._scan_step(scan, float("inf"))
        fold = self._fold_of(scan)
        try:
            self._fold_step(fold, float("inf"))
        finally:
            self._journal.close_readers()
        return FoldResult(top=fold.top, meta_at=scan.meta_at, problems=fold.problems, keep=fold.keep)

    def _start_child(self, segments: list[int]) -> bool:
        """Start a checkpoint process folding ``segments``; whether it started."""
        assert self._lock_id is not None
        command = [
            self.checkpoint_python,
            "-P",  # (the game's working directory is not on its import path)
            "-m",
            "npc_memory.store.checkpointer",
            str(self.path),
            "--owner",
            f"{os.getpid()}:{self._lock_id[0]}:{self._lock_id[1]}",
            "--thresholds",
            msgspec.json.encode([t.model_dump() for t in self.migration.thresholds]).decode(),
            *map(str, segments),
        ]
        files = contextlib.ExitStack()  # closed when the process has ended (``_Child.files``)
        stdout = files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        stderr = files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        try:
            with _children_born_normal():
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    env=_child_environment(),
                    **_background_options(),
                )
        except (OSError, ValueError) as exc:
            files.close()
            problem = _os_problem(exc) if isinstance(exc, OSError) else str(exc)
            self._child_failed(f"cannot start it ({problem})", give_up=True)
            return False
        _lower_priority(process.pid)
        self._child = _Child(process, segments, stdout, stderr, files, time.monotonic())
        return True

    def _end_child(self) -> None:
        """Finish the checkpoint of the process that has exited (or, if it failed, leave
        its segments to a fold on this thread)."""
        child, self._child = self._child, None
        assert child is not None
        code = child.process.wait()
        child.stdout.seek(0)
        child.stderr.seek(0)
        output, errors = child.stdout.read(), child.stderr.read()
        child.files.close()
        said = " / ".join(errors.decode("utf-8", "replace").strip().splitlines()[-5:]) or "no message"
        result: FoldResult | None = None
        if code == 0:
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                result = _fold_result_decoder.decode(output)
        if result is None:
            self._child_failed(f"it exited with status {code}: {said}")
            return
        self._child_failures = 0
        for problem in result.problems:  # (the fold goes on past a document it cannot write)
            log.error("checkpoint process for %r: %s", self, problem)
        meta_record = None
        if result.meta_at is not None:
            record = record_decoder.decode(self._journal.read_record(*result.meta_at))
            assert isinstance(record, MetaRecord)
            meta_record = record
        fold = _Fold(child.segments, {}, [], meta_record, result.top, True, problems=result.problems)
        fold.keep = result.keep
        self._finish_fold(fold)

    def _child_failed(self, why: str, *, give_up: bool = False) -> None:
        self._child_failures += 1
        if give_up or self._child_failures >= CHILD_TRIES:
            self.checkpoint_process = False
            then = "checkpoints run on the writer thread from now on"
        else:
            then = "its checkpoint is retried in a new one"
        log.error("checkpoint process for %r failed: %s; %s", self, why, then)
        self._leftover = True  # the sealed segments are folded next

    def _end_or_stop_child(self) -> None:
        """Finish the checkpoint of a process that has exited; stop one still folding
        (what it folded is in the files; its segments stay until a later checkpoint)."""
        if self._child is not None and self._child.process.poll() is not None:
            self._end_child()
        self._stop_child()

    def _stop_child(self) -> None:
        """Stop a checkpoint process at once (see :meth:`_end_or_stop_child`)."""
        child, self._child = self._child, None
        if child is not None:
            child.process.kill()
            child.process.wait()
            child.files.close()

    def _begin_fold(self, *, strict: bool, all_segments: bool = False) -> _Fold | None:
        scan = self._start_scan(strict=strict, all_segments=all_segments)
        if scan is None:
            return None
        self._scan_step(scan, float("inf"))
        return self._fold_of(scan)

    def _start_scan(self, *, strict: bool, all_segments: bool = False) -> _Scan | None:
        """Seal the journal's current segment (appends go to a new one) and start
        reading the sealed ones; ``None`` if there are none."""
        journal = self._journal
        if journal.current and (all_segments or journal.size > len(_HEADER) + 12):
            journal.seal()  # appends go to a new segment from here
        sealed = [n for n in journal.segments() if n != journal.current]
        self._leftover = False
        if not sealed:
            return None
        self._unfolded = journal.size  # what is appended from now on counts towards the next one
        records = self._journal_records(sealed, skip_damage=not strict)
        return _Scan(sealed, records, strict)

    def _scan_step(self, scan: _Scan, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        """Read the scan's records until ``deadline`` (looking at the clock and calling
        ``pause`` every ``PAUSE_EVERY_RECORDS``); whether all are read."""
        entries = scan.entries
        for count, (segment, offset, head, payload) in enumerate(scan.records, 1):
            scan.top = max(scan.top, head.lsn)
            if isinstance(head, MetaHead):
                if scan.meta is None or head.lsn > scan.meta[0]:
                    scan.meta = (head.lsn, bytes(payload))
                    scan.meta_at = (segment, offset, len(payload))
            elif not isinstance(head, SegmentHead):
                kind = "patch" if isinstance(head, PatchHead) else "put"
                if isinstance(head, DeleteHead):
                    kind = "delete"
                entries.setdefault(head.key, []).append(_Entry(head.lsn, kind, segment, offset, len(payload)))
            if count % PAUSE_EVERY_RECORDS == 0:
                if pause is not None:
                    pause()
                if time.perf_counter() >= deadline:
                    return False
        return True

    def _fold_of(self, scan: _Scan) -> _Fold:
        """The checkpoint of what ``scan`` read."""
        meta_record = None
        if scan.meta is not None:
            record = record_decoder.decode(scan.meta[1])
            assert isinstance(record, MetaRecord)
            meta_record = record
        entries = scan.entries
        return _Fold(scan.segments, entries, list(entries), meta_record, scan.top, scan.strict)

    def _fold_step(self, fold: _Fold, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        while fold.position < len(fold.keys):
            if pause is not None:
                pause()
            key = fold.keys[fold.position]
            try:
                self._fold_key(fold, key, fold.entries[key], pause)
            except StoreCorruptError as exc:
                if fold.strict:
                    raise
                fold.problems.append(f"{key}: {exc.path}: {exc.problem} (its journal changes were kept)")
                fold.keep = True
            except OSError as exc:  # one document that cannot be written never blocks the others
                log.error("checkpoint of %s in %r failed: %s; the journal keeps it", key, self, exc)
                fold.problems.append(f"{key}: {_os_problem(exc)} (its journal changes were kept)")
                fold.keep = True
            fold.position += 1
            if time.perf_counter() >= deadline:
                break
        return fold.position >= len(fold.keys)

    def _fold_key(
        self, fold: _Fold, key: str, entries: list[_Entry], pause: Callable[[], None] | None = None
    ) -> None:
        """Fold ``entries`` into ``key``'s file; calls ``pause`` between the steps (reading
        the file, decoding it, each change, encoding it): a large document's fold takes
        tenths of a millisecond."""
        path = self.path / DOCS_DIR / file_name(key)
        shard_lsn = self._shard_lsn(path)
        entries = [e for e in entries if e.lsn > shard_lsn]  # the rest is in the file already
        if not entries:
            return
        last_whole = max((i for i, e in enumerate(entries) if e.kind != "patch"), default=-1)
        if last_whole >= 0 and entries[last_whole].kind == "delete":
            if last_whole + 1 < len(entries):
                later = entries[last_whole + 1].lsn
                self._fold_problem(fold, key, f"changes at lsn {later} after its deletion")
            remove_durably(path, sync_dir=False)
            return
        if last_whole < 0 and not path.exists():
            self._fold_problem(fold, key, "changes a document whose file is missing")
            return
        if pause is not None:
            pause()
        folded = self._folded(fold, key, path, shard_lsn, entries, last_whole, pause or _no_pause)
        self._write_shard(path, *folded)

    def _folded(
        self,
        fold: _Fold,
        key: str,
        path: Path,
        shard_lsn: int,
        entries: list[_Entry],
        last_whole: int,
        pause: Callable[[], None],
    ) -> tuple[str, bytes, int]:
        """``(kind, JSON, lsn)`` of ``key``'s document with ``entries`` applied."""
        document: Document
        if last_whole < 0:
            document, lsn, patches = self._read_document(path), shard_lsn, entries
        else:
            put = self._decode_record(entries[last_whole].segment, self._payload(entries[last_whole]))
            assert isinstance(put, Put)
            patches = entries[last_whole + 1 :]
            if not patches:
                return put.kind, put.data, put.lsn
            document, lsn = document_decoder.decode(put.data), put.lsn
        for entry in patches:
            pause()
            patch = self._decode_record(entry.segment, self._payload(entry))
            assert isinstance(patch, NpcPatch)
            problem = _misfit(document, patch, lsn)
            if problem is None:
                try:
                    apply_patch(cast(NpcDocument, document), patch)
                except ValueError as exc:
                    problem = str(exc)
            if problem is not None:
                self._fold_problem(fold, key, f"change at lsn {patch.lsn} does not apply: {problem}")
                break
            lsn = patch.lsn
        pause()
        encoded = encode_document(document)
        return encoded.kind, encoded.data, lsn

    def _fold_problem(self, fold: _Fold, key: str, problem: str) -> None:
        if fold.strict:
            raise StoreCorruptError(str(self.path / JOURNAL_DIR), f"document {key!r}: {problem}")
        fold.problems.append(f"{key}: {problem} (skipped)")

    def _finish_fold(self, fold: _Fold) -> None:
        fsync_dir(self.path / DOCS_DIR)
        meta, meta_lsn = self._read_meta_and_lsn(self.path / META_FILE)
        if fold.meta is not None and fold.meta.lsn > meta_lsn:
            meta = fold.meta.meta
        self._journal.close_readers()
        if fold.keep:  # the journal still holds what a damaged file could not take
            return
        self._write_meta_file(meta, max(meta_lsn, fold.top))
        self._journal.remove(fold.segments)
        for number in fold.segments:
            self._segment_keys.pop(number, None)
            self._segment_versions.pop(number, None)

    def _payload(self, entry: _Entry) -> bytes:
        return self._journal.read_record(entry.segment, entry.offset, entry.length)

    def _write_shard(self, path: Path, kind: str, data: bytes, lsn: int) -> None:
        table = _TABLES[kind].encode()
        body = b'{"' + table + b'":{"1":' + data + b'},"journal":{"1":{"lsn":' + str(lsn).encode() + b"}}}"
        write_atomic(path, body, sync_dir=False)

    def _write_meta_file(self, meta: StoreMeta | None, lsn: int) -> None:
        if meta is None and not lsn:
            return
        tables: dict[str, Any] = {"meta": {} if meta is None else {"1": meta}}
        if lsn:
            tables["journal"] = {"1": {"lsn": lsn}}
        write_atomic(self.path / META_FILE, msgspec.json.encode(tables))

    def _shard_lsn(self, path: Path) -> int:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return 0
        try:
            return _lsn_of(_lsn_decoder.decode(raw).journal)
        except msgspec.DecodeError as exc:
            raise StoreCorruptError(str(path), _describe(exc)) from exc

    # ------------------------------------------------------------------ journal replay

    def _journal_records(
        self,
        numbers: Sequence[int] | None = None,
        *,
        skip_damage: bool = False,
    ) -> Iterator[tuple[int, int, Any, memoryview]]:
        """``(segment, offset, head, payload)`` of every record of the segments, in
        order (``offset``: of the record's frame in its segment)."""
        for number in self._journal.segments() if numbers is None else numbers:
            path = self._journal.path(number)
            try:
                records = self._journal.records(number, skip_damage=skip_damage)
            except FileNotFoundError:
                continue
            first = True
            for offset, payload in records:
                try:
                    head = head_decoder.decode(payload)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise StoreCorruptError(f"{path}@{offset}", _describe(exc)) from exc
                if first:
                    if not isinstance(head, SegmentHead):
                        raise StoreCorruptError(str(path), "journal segment without a header")
                    self._check_segment_version(path, head.schema_version)
                    if head.schema_version < SCHEMA_VERSION:
                        self._segment_versions[number] = head.schema_version
                    first = False
                    continue
                yield number, offset, head, payload

    def _check_segment_version(self, path: Path, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{path} has schema version {version}, newer than this npc-memory "
                f"understands ({SCHEMA_VERSION})"
            )
        if version < OLDEST_JOURNAL:
            raise StoreVersionError(
                f"{path} was written with schema version {version}; open the store with the npc-memory "
                f"that wrote it and run 'npc-memory repair' to fold its journal, then upgrade"
            )

    def _decode_record(self, segment: int, payload: bytes | memoryview) -> Record:
        """A record of journal ``segment``, migrated to the current schema if the
        segment was written with an older one (see :func:`migrate_record`)."""
        version = self._segment_versions.get(segment)
        if version is None:
            return record_decoder.decode(payload)
        raw = msgspec.msgpack.decode(payload)
        if not isinstance(raw, dict):
            raise msgspec.ValidationError(f"expected a record, got {type(raw).__name__}")
        try:
            migrated = migrate_record(raw, version, self.migration)
        except (KeyError, TypeError, ValueError) as exc:
            raise msgspec.ValidationError(f"cannot migrate from schema {version}: {exc}") from exc
        return cast(Record, msgspec.convert(migrated, type=Record))

    def _replay(
        self, documents: dict[str, Document], lsns: dict[str, int], meta: StoreMeta | None, meta_lsn: int
    ) -> tuple[StoreMeta | None, int]:
        top = meta_lsn
        for number, _, head, payload in self._journal_records():
            lsn, key = head.lsn, head.key
            top = max(top, lsn)
            if key:
                self._segment_keys.setdefault(number, set()).add(key)
            if isinstance(head, MetaHead):
                if lsn > meta_lsn:
                    record = record_decoder.decode(payload)
                    assert isinstance(record, MetaRecord)
                    meta, meta_lsn = self._checked_meta(record.meta, str(self._journal.path(number))), lsn
                continue
            current = lsns.get(key, 0)
            if lsn <= current:
                continue  # already in the document file
            source = str(self._journal.path(number))
            try:
                record = self._decode_record(number, payload)
                if isinstance(record, Put):
                    documents[key] = document_decoder.decode(record.data)
                elif isinstance(record, Delete):
                    documents.pop(key, None)
                else:
                    assert isinstance(record, NpcPatch)
                    document = documents.get(key)
                    problem = _misfit(document, record, current)
                    if problem is not None:
                        raise StoreCorruptError(source, f"document {key!r}: change at lsn {lsn} {problem}")
                    apply_patch(cast(NpcDocument, document), record)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
                raise StoreCorruptError(source, f"document {key!r} at lsn {lsn}: {_describe(exc)}") from exc
            lsns[key] = lsn
        return meta, top

    def _scan_lsn(self) -> int:
        top = self._read_meta_and_lsn(self.path / META_FILE)[1]
        for _, _, head, _ in self._journal_records():
            top = max(top, head.lsn)
        return top

    def close(self) -> None:
        """Close the journal and release the store's lock (idempotent). The journal is
        folded first if it changes at most ``CLOSE_CHECKPOINT_KEYS`` documents (and all
        of it was read or written here); otherwise the next open replays it."""
        if (
            self._lock is not None
            and self._disowned is None
            and self.checkpoint_on_close
            and self._small_journal()
        ):
            try:
                self.checkpoint()
            except (OSError, StoreError) as exc:  # the journal keeps everything
                log.warning("checkpoint on closing %r failed: %s", self, exc)
        if self._disowned is None and self._lost is None:
            try:
                self._end_or_stop_child()
            except (OSError, StoreError) as exc:  # the journal keeps everything
                log.warning("checkpoint on closing %r failed: %s", self, exc)
        self._stop_child()
        self._fold = self._scan = None
        self._journal.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _small_journal(self) -> bool:
        segments = self._journal.segments()
        if not segments or any(n not in self._segment_keys for n in segments if n != self._journal.current):
            return False
        return len(set().union(*self._segment_keys.values())) <= CLOSE_CHECKPOINT_KEYS

    # ------------------------------------------------------------------ internals

    def _document_paths(self) -> Iterator[Path]:
        yield from sorted((self.path / DOCS_DIR).glob("*.json"))

    def _read_document(self, path: Path, name: str | None = None) -> Document:
        return self._read_document_and_lsn(path, name)[0]

    def _read_document_and_lsn(self, path: Path, name: str | None = None) -> tuple[Document, int]:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise StoreCorruptError(str(path), f"cannot read: {exc}") from exc
        lsn = 0
        try:
            parsed = _doc_file_decoder.decode(raw)
            lsn = _lsn_of(parsed.journal)
            documents: list[Document] = [*parsed.npcs.values(), *parsed.players.values()]
            if len(documents) != 1:
                raise StoreCorruptError(str(path), f"expected one document, found {len(documents)}")
            document = documents[0]
            if document.v != SCHEMA_VERSION:
                document = self._migrate(path, raw, document.v)
        except msgspec.ValidationError as exc:
            document = self._migrate(path, raw, None, exc)
        except msgspec.DecodeError as exc:
            raise StoreCorruptError(str(path), _describe(exc)) from exc
        if file_name(document.key) != (name or path.name):
            raise StoreCorruptError(
                str(path), f"holds the document of key {document.key!r}, which belongs elsewhere"
            )
        return document, lsn

    def _migrate(
        self, path: Path, raw: bytes, version: int | None, error: Exception | None = None
    ) -> Document:
        try:
            tables = msgspec.json.decode(raw)
            tables.pop("journal", None)
            [(table, entries)] = tables.items()
            [payload] = entries.values()
            version = int(payload.get("v", 1)) if version is None else version
        except (msgspec.DecodeError, ValueError, AttributeError, TypeError) as exc:
            raise StoreCorruptError(str(path), _describe(error or exc)) from exc
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{path} has schema version {version}, newer than this npc-memory "
                f"understands ({SCHEMA_VERSION})"
            )
        if version == SCHEMA_VERSION:
            assert error is not None
            raise StoreCorruptError(str(path), _describe(error))
        kind = {"npcs": "npc", "players": "player"}.get(table)
        if kind is None:
            raise StoreCorruptError(str(path), f"unknown table {table!r}")
        try:
            migrated = migrate_document({**payload, "kind": kind}, version, self.migration)
            return cast(Document, msgspec.convert(migrated, type=Document))
        except (msgspec.ValidationError, KeyError, TypeError, ValueError) as exc:
            problem = f"cannot migrate from schema {version}: {_describe(exc)}"
            raise StoreCorruptError(str(path), problem) from exc

    def _acquire(self) -> None:
        try:
            lock = _take_lock(self.path)
        except OSError:
            if not self.read_only:
                raise
            return  # read-only media: nobody can be writing it, read it unlocked
        try:
            (self.path / OWNER_FILE).write_text(str(os.getpid()), "ascii")
            self._lock_id = _file_id(self.path / LOCK_FILE)
            if not self.read_only:
                _wait_for_checkpoint_process(self.path)
        except BaseException:
            lock.release()
            raise
        self._lock = lock

    def _clean_temporaries(self) -> None:
        for directory in (self.path, self.path / DOCS_DIR, self.path / AUDIT_DIR):
            if not directory.is_dir():
                continue
            for leftover in directory.glob(f"*{TEMP_SUFFIX}"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()


def _python_for_checkpoints() -> str | None:
    """The interpreter to run checkpoint processes with, if this one can start another:
    not a frozen application, and ``sys.executable`` a Python (a game engine that
    embeds Python reports its own executable, which would start the game again)."""
    executable = sys.executable
    if not executable or getattr(sys, "frozen", False):
        return None
    if not Path(executable).name.lower().startswith(("python", "pypy")):
        return None
    return executable


def _child_environment() -> dict[str, str]:
    """The environment of a checkpoint process: this one's, with this interpreter's
    import path (the process imports the same ``npc_memory``, also when the game put
    it on ``sys.path`` itself rather than installing it)."""
    paths = [os.path.abspath(p) for p in sys.path if isinstance(p, str) and p]
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, *([inherited] if inherited else [])])}


def _background_options() -> dict[str, Any]:
    """``Popen`` options for a checkpoint process: its own session or process group
    (the terminal's Ctrl+C is the game's), and on Windows the idle priority class."""
    if os.name == "nt":
        flags = 0
        for name in ("IDLE_PRIORITY_CLASS", "CREATE_NO_WINDOW", "CREATE_NEW_PROCESS_GROUP"):
            flags |= getattr(subprocess, name, 0)
        return {"creationflags": flags}
    return {"start_new_session": True}


@contextlib.contextmanager
def _children_born_normal() -> Iterator[None]:
    """While the block runs, a process this thread starts is born in normal scheduling
    (Linux), even when the thread runs in a real-time class (a server loop under
    ``chrt``, say); the thread keeps its own class. Afterwards its processes are born in
    its class again, where the thread may ask that (a thread without the privilege stays
    so marked: processes it starts later are born in normal scheduling too). A checkpoint
    process born in a real-time class took the store writer up to a second to start
    beside a busy real-time game thread (CHANGELOG.md, "Benchmark history", 2026-12-02)."""
    marked: tuple[int, os.sched_param] | None = None
    with contextlib.suppress(AttributeError, OSError):  # (not Linux, or not allowed)
        policy = os.sched_getscheduler(0)  # (a thread marked already reports the mark too)
        if policy in (os.SCHED_FIFO, os.SCHED_RR):
            param = os.sched_getparam(0)
            os.sched_setscheduler(0, policy | os.SCHED_RESET_ON_FORK, param)
            marked = (policy, param)
    try:
        yield
    finally:
        if marked is not None:
            with contextlib.suppress(OSError):  # (clearing the mark needs the privilege)
                os.sched_setscheduler(0, *marked)


def _lower_priority(pid: int) -> None:
    """Run process ``pid`` below the game: normal scheduling (not a real-time class
    inherited from a server loop), lowest priority (best effort, POSIX)."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, pid, 19)


def _take_lock(path: Path) -> filelock.BaseFileLock:
    """The store's lock, taken (an OS lock: flock on POSIX, msvcrt on Windows, released
    when the process dies); :class:`StoreLockedError` naming the owner if it is held."""
    lock = filelock.FileLock(path / LOCK_FILE, timeout=0, thread_local=False)
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            text = (path / OWNER_FILE).read_text("ascii").strip()
        except OSError:
            text = ""
        owner = int(text) if text.isdigit() else None
        raise StoreLockedError(
            f"store {path} is in use (locked by process {owner if owner is not None else 'unknown'}); "
            "one process owns a store at a time",
            owner=owner,
        ) from None
    return lock


def check_unlocked(path: str | os.PathLike[str]) -> None:
    """Raise :class:`StoreLockedError` (naming the store and its owner's process id)
    if a process owns the store at ``path``; a path that is not a store passes."""
    directory = Path(path)
    if not (directory / LOCK_FILE).exists():
        return
    try:
        lock = _take_lock(directory)
    except OSError:  # read-only media: nobody can own it
        return
    lock.release()


def checkpoint_lock(path: Path, timeout: float = -1) -> filelock.BaseFileLock:
    """The lock a checkpoint process of the store at ``path`` holds while it folds
    (``timeout``: seconds to wait for it, -1 for as long as it takes)."""
    return filelock.FileLock(path / CHECKPOINT_LOCK_FILE, timeout=timeout, thread_local=False)


def _wait_for_checkpoint_process(path: Path) -> None:
    """Wait for a checkpoint process an earlier owner left folding (see
    :data:`CHECKPOINT_LOCK_FILE`)."""
    try:
        with checkpoint_lock(path, ORPHAN_WAIT):
            pass
    except filelock.Timeout:
        raise StoreLockedError(
            f"store {path}: a checkpoint process of an earlier owner is still writing its documents "
            f"after {ORPHAN_WAIT:.0f} s (it holds {path / CHECKPOINT_LOCK_FILE}); "
            "end it, then open the store again"
        ) from None


def _file_id(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_dev, stat.st_ino


def _os_problem(exc: OSError) -> str:
    """An OS error in words, with the file it concerns."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def is_store(path: Path) -> bool:
    """Whether ``path`` looks like an npc-memory store directory."""
    return any((path / name).exists() for name in (META_FILE, DOCS_DIR, JOURNAL_DIR, LOCK_FILE))


def _matches(pattern: re.Pattern[str], path: Path) -> bool:
    """Whether ``pattern`` finds something in the file (read as UTF-8, binary parts
    replaced)."""
    try:
        return pattern.search(path.read_bytes().decode("utf-8", "replace")) is not None
    except FileNotFoundError:
        return False


def _no_pause() -> None:
    pass


def _encoded(records: Iterable[Record], keys: set[str]) -> Iterator[bytes]:
    for record in records:
        key = getattr(record, "key", None)
        if key is not None:
            keys.add(key)
        yield record_encoder.encode(record)


def _misfit(document: Document | None, patch: NpcPatch, current: int) -> str | None:
    """Why ``patch`` does not apply to ``document`` (at lsn ``current``), if it does not."""
    if document is None:
        return "applies to a document the store does not hold"
    if not isinstance(document, NpcDocument):
        return "applies to a player's document"
    if patch.base != current:
        return f"applies to lsn {patch.base}, but the store holds lsn {current}"
    return None


def store_files(path: Path) -> list[Path]:
    """The data files of a store: metadata, then documents (including any whose current
    file is missing but whose previous generation survives)."""
    docs_dir = path / DOCS_DIR
    names = {p.name for p in docs_dir.glob("*.json")} if docs_dir.is_dir() else set()
    if docs_dir.is_dir():
        names |= {p.name.removesuffix(PREVIOUS_SUFFIX) for p in docs_dir.glob(f"*.json{PREVIOUS_SUFFIX}")}
    meta = [path / META_FILE] if (path / META_FILE).exists() or previous_of(path / META_FILE).exists() else []
    return meta + [docs_dir / name for name in sorted(names)]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, msgspec.ValidationError):
        return f"unexpected content: {exc}"
    if isinstance(exc, msgspec.DecodeError):
        return f"invalid or truncated JSON: {exc}"
    if isinstance(exc, StopIteration):
        return "no metadata document"
    return str(exc)


__all__ = [
    "MsgspecStorage",
    "TinyDBStore",
    "check_unlocked",
    "file_name",
    "is_store",
    "previous_of",
    "store_files",
]
