"""The default store: a directory of TinyDB databases, one per NPC or player.

Layout of a store directory (``village.db/``)::

    LOCK                  held by the one process that owns the store
    meta.json             TinyDB database, table "meta": the StoreMeta document
    docs/<slug>.json      TinyDB database per NPC (table "npcs") or player ("players")
    docs/<slug>.json.prev the previous good generation of that file
    audit.jsonl           append-only audit log, one JSON object per line

Every file is valid TinyDB JSON (``TinyDB(path)`` reads it) and is replaced
atomically, so a crash leaves each document whole, old or new. A snapshot rewrites
only the documents that changed: its cost does not grow with the size of the world.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import filelock
import msgspec
from tinydb import Storage

from npc_memory.errors import StoreCorruptError, StoreError, StoreLockedError, StoreVersionError
from npc_memory.store.base import StoreContents
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    EncodedDocument,
    NpcDocument,
    PlayerDocument,
    StoreMeta,
)
from npc_memory.store.files import (
    PREVIOUS_SUFFIX,
    TEMP_SUFFIX,
    fsync_dir,
    previous_of,
    remove_durably,
    write_atomic,
)
from npc_memory.store.migrations import MigrationContext, migrate_document

META_FILE = "meta.json"
DOCS_DIR = "docs"
AUDIT_FILE = "audit.jsonl"
LOCK_FILE = "LOCK"
OWNER_FILE = "LOCK.owner"
"""Holds the process id of the store's owner, for the error a second opener gets."""
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


class _DocFile(msgspec.Struct, omit_defaults=True):
    npcs: dict[str, NpcDocument] = msgspec.field(default_factory=dict)
    players: dict[str, PlayerDocument] = msgspec.field(default_factory=dict)


class _MetaFile(msgspec.Struct):
    meta: dict[str, StoreMeta]


_doc_file_decoder = msgspec.json.Decoder(_DocFile)
_meta_decoder = msgspec.json.Decoder(_MetaFile)
_audit_encoder = msgspec.json.Encoder()
_audit_decoder = msgspec.json.Decoder(AuditEntry)


def file_name(key: str) -> str:
    """The file holding the document of ``key``: a readable slug plus a hash of the key."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", key.lower()).strip("-")[:40] or "doc"
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
    return f"{slug}-{digest}.json"


class TinyDBStore:
    """The TinyDB-format store directory at ``path`` (created if missing).

    The store is locked for as long as it is open: a second opener, in this process
    or another, gets :class:`StoreLockedError`. Documents older than the current
    schema are migrated when read (``migration`` supplies what a migration needs).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        migration: MigrationContext | None = None,
    ) -> None:
        self.path = Path(path)
        self.migration = migration or MigrationContext()
        self._lock: filelock.BaseFileLock | None = None
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path} is a file, not a store directory")
        if self.path.is_dir() and any(self.path.iterdir()) and not is_store(self.path):
            raise StoreError(f"{self.path} is not empty and is not an npc-memory store; refusing to use it")
        if not self.path.exists():
            if not create:
                raise StoreError(f"no store at {self.path}")
            self.path.mkdir(parents=True)
        (self.path / DOCS_DIR).mkdir(exist_ok=True)
        self._acquire()
        self._clean_temporaries()

    def __repr__(self) -> str:
        return f"TinyDBStore({str(self.path)!r})"

    # ------------------------------------------------------------------ reading

    def load(self) -> StoreContents:
        """Every document and the metadata. Raises :class:`StoreCorruptError` naming the
        first damaged file, :class:`StoreVersionError` for a newer schema; nothing is
        dropped or reset."""
        meta = self.read_meta()
        documents: dict[str, Document] = {}
        was_enabled = gc.isenabled()
        gc.disable()  # decoding builds many container objects: skip the collector meanwhile
        try:
            for path in self._document_paths():
                document = self._read_document(path)
                documents[document.key] = document
        finally:
            if was_enabled:
                gc.enable()
        gc.freeze()  # loaded state is long-lived: keep it out of future collections
        return StoreContents(meta=meta, documents=documents)

    def read_meta(self) -> StoreMeta | None:
        """The store metadata, or ``None`` for a new store."""
        return self._read_meta_file(self.path / META_FILE)

    def _read_meta_file(self, path: Path) -> StoreMeta | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            meta = next(iter(_meta_decoder.decode(raw).meta.values()))
        except (msgspec.DecodeError, StopIteration) as exc:
            raise StoreCorruptError(str(path), _describe(exc)) from exc
        if meta.schema_version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"store {self.path} has schema version {meta.schema_version}, newer than this "
                f"npc-memory understands ({SCHEMA_VERSION}); upgrade npc-memory to open it"
            )
        return meta

    def audit(self) -> list[AuditEntry]:
        """Every audit entry, oldest first. A torn last line (a crash while appending)
        is ignored; damage anywhere else is an error."""
        path = self.path / AUDIT_FILE
        if not path.exists():
            return []
        lines = path.read_bytes().split(b"\n")
        entries = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entries.append(_audit_decoder.decode(line))
            except msgspec.DecodeError as exc:
                if number == len(lines):  # no trailing newline: the append never completed
                    break
                raise StoreCorruptError(f"{path}:{number}", _describe(exc)) from exc
        return entries

    def check_file(self, path: Path, *, as_name: str | None = None) -> None:
        """Decode one data file (metadata or document) as loading would, raising the
        same errors; ``as_name`` is the file name it stands for (for a ``.prev`` copy)."""
        name = as_name or path.name
        if name == META_FILE:
            self._read_meta_file(path)
        else:
            self._read_document(path, name=name)

    def keys(self) -> list[str]:
        """Keys of every stored document (decodes each file)."""
        return [self._read_document(p).key for p in self._document_paths()]

    # ------------------------------------------------------------------ writing

    def write(self, documents: Sequence[EncodedDocument], meta: StoreMeta | None = None) -> None:
        """Write ``documents`` (then ``meta``) atomically and durably, each replacing the
        previous version of its key; returns once all of it is on disk."""
        docs_dir = self.path / DOCS_DIR
        for document in documents:
            table = _TABLES[document.kind].encode()
            data = b'{"' + table + b'":{"1":' + document.data + b"}}"
            write_atomic(docs_dir / file_name(document.key), data, sync_dir=False)
        if documents:
            fsync_dir(docs_dir)
        if meta is not None:
            self.write_meta(meta)

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the documents of ``keys`` (and their previous generations)."""
        docs_dir = self.path / DOCS_DIR
        for key in keys:
            remove_durably(docs_dir / file_name(key), sync_dir=False)
        fsync_dir(docs_dir)

    def write_meta(self, meta: StoreMeta) -> None:
        """Replace the store metadata atomically."""
        write_atomic(self.path / META_FILE, msgspec.json.encode({"meta": {"1": meta}}))

    def append_audit(self, entry: AuditEntry) -> None:
        """Append one entry to the audit log and fsync it."""
        with open(self.path / AUDIT_FILE, "ab") as handle:
            handle.write(_audit_encoder.encode(entry) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        """Release the store's lock (idempotent)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ internals

    def _document_paths(self) -> Iterator[Path]:
        yield from sorted((self.path / DOCS_DIR).glob("*.json"))

    def _read_document(self, path: Path, name: str | None = None) -> Document:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise StoreCorruptError(str(path), f"cannot read: {exc}") from exc
        try:
            parsed = _doc_file_decoder.decode(raw)
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
        return document

    def _migrate(
        self, path: Path, raw: bytes, version: int | None, error: Exception | None = None
    ) -> Document:
        try:
            tables = msgspec.json.decode(raw)
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
        # filelock: an OS lock (flock on POSIX, msvcrt on Windows) released when the process dies.
        lock = filelock.FileLock(self.path / LOCK_FILE, timeout=0, thread_local=False)
        try:
            lock.acquire()
        except filelock.Timeout:
            try:
                owner = (self.path / OWNER_FILE).read_text("ascii").strip() or "unknown"
            except OSError:
                owner = "unknown"
            raise StoreLockedError(
                f"store {self.path} is in use (locked by process {owner}); one process owns a store at a time"
            ) from None
        (self.path / OWNER_FILE).write_text(str(os.getpid()), "ascii")
        self._lock = lock

    def _clean_temporaries(self) -> None:
        for directory in (self.path, self.path / DOCS_DIR):
            for leftover in directory.glob(f"*{TEMP_SUFFIX}"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()


def is_store(path: Path) -> bool:
    """Whether ``path`` looks like an npc-memory store directory."""
    return (path / META_FILE).exists() or (path / DOCS_DIR).is_dir() or (path / LOCK_FILE).exists()


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


__all__ = ["MsgspecStorage", "TinyDBStore", "file_name", "is_store", "previous_of", "store_files"]
