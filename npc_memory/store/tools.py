"""Operator tools over a store at rest: export, import, repair, inspect.

Each opens the store (taking its lock: a store in use by a running game is refused)
and records what it changed in the store's audit log.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from npc_memory.errors import StoreCorruptError, StoreError, StoreVersionError
from npc_memory.safety import redact_texts
from npc_memory.store.base import PrivacyStore
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    NpcDocument,
    StoreMeta,
    encode_document,
)
from npc_memory.store.files import PREVIOUS_SUFFIX, fsync_dir, previous_of, write_atomic
from npc_memory.store.mending import mend
from npc_memory.store.migrations import MigrationContext, migrate_document
from npc_memory.store.tinydb_store import (
    CHECKPOINT_LOCK_FILE,
    DOCS_DIR,
    JOURNAL_DIR,
    LOCK_FILE,
    META_FILE,
    OWNER_FILE,
    TinyDBStore,
    is_store,
    store_files,
)
from npc_memory.store.transfer import describe, open_store, read_store

EXPORT_FORMAT = "npc-memory-export"


class ExportFile(msgspec.Struct, kw_only=True):
    """The stable export format: ``{"format": "npc-memory-export", "schema_version": 2,
    "meta": {...} | null, "documents": [{"kind": "npc" | "player", ...}, ...]}`` with
    documents sorted by key and object keys in a deterministic order."""

    format: str = EXPORT_FORMAT
    schema_version: int = SCHEMA_VERSION
    meta: StoreMeta | None = None
    documents: list[Document] = msgspec.field(default_factory=list)


_export_encoder = msgspec.json.Encoder(order="deterministic")


def export_store(path: str | os.PathLike[str], *, world: str | None = None) -> bytes:
    """The whole store at ``path`` (or world ``world`` of a PostgreSQL URL) as export
    JSON (indented, newline-terminated). A store with a privacy operation under way
    (a forgetting, a game's end, a withdrawal of consent) is refused until it is finished
    (the export would still hold what it removes)."""
    store = open_store(path, world=world, create=False)
    try:
        pending = store.pending_forgets() if isinstance(store, PrivacyStore) else []
        if pending:
            under_way = ", ".join(f"{p.op} {p.key!r}" for p in pending)
            raise StoreError(
                f"store {path} has a privacy operation still to finish ({under_way}: a forgetting, "
                "a game's end or a withdrawal of consent that was interrupted or that other game "
                "servers are still doing); run 'npc-memory forget --db PATH --resume' (or install "
                "the plugin on it) first"
            )
        contents = store.load()
    finally:
        store.close()
    return export_bytes(contents.meta, [contents.documents[key] for key in sorted(contents.documents)])


def export_bytes(meta: StoreMeta | None, documents: Sequence[Document]) -> bytes:
    """``meta`` and ``documents`` (sorted by key) as export JSON (indented, newline-terminated)."""
    data = _export_encoder.encode(ExportFile(meta=meta, documents=list(documents)))
    return msgspec.json.format(data, indent=2) + b"\n"


def parse_export(
    data: bytes, *, source: str = "<export>", migration: MigrationContext | None = None
) -> ExportFile:
    """Validate export JSON; older schema versions are migrated. Errors name the
    failing path inside the file."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise StoreError(f"{source}: invalid JSON: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != EXPORT_FORMAT:
        raise StoreError(f"{source}: not an npc-memory export (expected \"format\": \"{EXPORT_FORMAT}\")")
    version = raw.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise StoreError(f"{source}: schema_version must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"{source}: schema version {version} is newer than this npc-memory understands ({SCHEMA_VERSION})"
        )
    documents = raw.get("documents")
    if version < SCHEMA_VERSION and isinstance(documents, list):
        context = migration or MigrationContext()
        raw["documents"] = [
            migrate_document(d, version, context) if isinstance(d, dict) else d for d in documents
        ]
        raw["schema_version"] = SCHEMA_VERSION
        if isinstance(raw.get("meta"), dict):
            raw["meta"]["schema_version"] = SCHEMA_VERSION
    try:
        export = msgspec.convert(raw, type=ExportFile)
    except msgspec.ValidationError as exc:
        raise StoreError(f"{source}: {exc}") from exc
    keys = [d.key for d in export.documents]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise StoreError(f"{source}: duplicate document keys: {', '.join(duplicates)}")
    return export


ImportMode = Literal["new", "merge", "replace"]


def import_store(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: ImportMode = "new",
    source: str = "<export>",
    world: str | None = None,
    actor: str = "",
) -> int:
    """Load export ``data`` into the store at ``path`` (created if missing); returns the
    number of documents written. ``mode``: ``new`` refuses a store that already holds
    documents, ``merge`` overwrites documents with the same keys, ``replace`` also
    deletes documents the export does not contain. The export is fully validated
    before anything is written. A PostgreSQL URL names world ``world``."""
    export = parse_export(data, source=source)
    builtins, redacted = redact_texts(msgspec.to_builtins(export.documents))  # no personal data enters
    documents = msgspec.convert(builtins, type=list[Document]) if redacted else export.documents
    store = open_store(path, world=world)
    try:
        existing = set(store.load().documents)
        if mode == "new" and existing:
            raise StoreError(
                f"store {describe(path)} already holds {len(existing)} documents; use --merge or --replace"
            )
        store.write([encode_document(d) for d in documents])
        stale = sorted(existing - {d.key for d in documents}) if mode == "replace" else []
        if stale:
            store.delete(stale)
        if export.meta is not None:
            store.write_meta(export.meta)
        if isinstance(store, TinyDBStore):
            store.checkpoint()  # the document files hold the import, not just the journal
        store.append_audit(
            _audit(
                "import", describe(path), actor, mode=mode, source=source,
                written=len(documents), deleted=len(stale), redacted=redacted,
            )
        )
    finally:
        store.close()
    return len(export.documents)


class RepairReport(msgspec.Struct, kw_only=True):
    """What ``repair`` found and did: files restored from their previous generation,
    files whose values were mended (with what changed), files damaged beyond repair
    (with the problem), files moved aside into ``quarantine/`` (``--quarantine``),
    previous generations of forgotten documents that a deletion left (removed), how
    many files were sound, what folding the journal into the files had to skip
    (damaged records, changes that no longer apply), and how many damaged audit log
    lines were dropped."""

    restored: list[str] = msgspec.field(default_factory=list)
    mended: list[tuple[str, list[str]]] = msgspec.field(default_factory=list)
    unrecoverable: list[tuple[str, str]] = msgspec.field(default_factory=list)
    quarantined: list[tuple[str, str]] = msgspec.field(default_factory=list)
    removed: list[str] = msgspec.field(default_factory=list)
    sound: int = 0
    journal: list[str] = msgspec.field(default_factory=list)
    audit_lines_dropped: int = 0


QUARANTINE_DIR = "quarantine"
"""Where ``repair --quarantine`` moves documents it cannot mend (inside the store)."""


def repair_store(
    path: str | os.PathLike[str], *, quarantine: bool = False, actor: str = ""
) -> RepairReport:
    """Check every data file of the store and mend what loading would refuse: a
    damaged or missing file is restored from its previous good generation (the
    damaged one is kept beside it as ``<name>.broken``), values out of range or
    counters that would reuse an id are mended in place, missing metadata is rebuilt
    from the documents. Then the journal is folded into the files (skipping and
    reporting what cannot apply) and the files are checked again. A file that cannot
    be mended is reported; with ``quarantine`` it is moved into ``quarantine/``
    (recorded in the audit log) so the rest of the world loads. Damaged audit log
    lines are dropped from their files (kept in ``.broken`` copies). Refuses a store
    in use; ``actor`` is recorded in the audit log."""
    store = TinyDBStore(path, create=False, checkpoint_on_close=False)
    report = RepairReport()
    try:
        docs = store.path / DOCS_DIR
        if not docs.is_dir():
            _missing_docs(store, report, quarantine)
        _repair_files(store, report, quarantine, first=True)
        report.journal = store.check_journal()
        report.journal += store.checkpoint(strict=False)
        _repair_files(store, report, quarantine, first=False)
        _rebuild_meta(store, report)
        report.audit_lines_dropped = store.repair_audit()
        changed = report.restored or report.removed or report.mended or report.unrecoverable
        if changed or report.journal or report.audit_lines_dropped:
            store.append_audit(
                _audit(
                    "repair",
                    str(path),
                    actor,
                    restored=report.restored,
                    removed=report.removed,
                    mended=[f for f, _ in report.mended],
                    unrecoverable=[f for f, _ in report.unrecoverable],
                    journal=report.journal,
                    audit_lines_dropped=report.audit_lines_dropped,
                )
            )
    finally:
        store.close()
    return report


def _missing_docs(store: TinyDBStore, report: RepairReport, quarantine: bool) -> None:
    docs = store.path / DOCS_DIR
    if not quarantine:
        report.unrecoverable.append((str(docs), "missing: every NPC and player document is gone"))
        return
    docs.mkdir()
    report.quarantined.append((str(docs), "was missing: recreated empty (every document is gone)"))
    store.append_audit(_audit("quarantine", str(docs), problem="missing; recreated empty"))


def _repair_files(store: TinyDBStore, report: RepairReport, quarantine: bool, *, first: bool) -> None:
    done = {*report.restored, *(f for f, _ in report.mended), *(f for f, _ in report.unrecoverable)}
    for file in store_files(store.path):
        problem = _problem(store, file)
        if problem is None:
            report.sound += first
            continue
        if str(file) in done and not first:
            continue
        previous = previous_of(file)
        if _problem(store, previous, as_name=file.name) is None:
            if not file.exists() and _forgotten(store, previous):  # left by a deletion: never restored
                previous.unlink()
                report.removed.append(str(previous))
                continue
            if file.exists():
                os.replace(file, file.with_name(file.name + ".broken"))
            write_atomic(file, previous.read_bytes(), keep_previous=False)
            report.restored.append(str(file))
            if file.name == META_FILE:
                _catch_up_clock(store, file, report)
            continue
        mended = _mended(store, file)
        if mended is not None:
            data, changes = mended
            shutil.copyfile(file, file.with_name(file.name + ".broken"))
            write_atomic(file, data, keep_previous=False)
            report.mended.append((str(file), changes))
            continue
        if quarantine and file.exists():
            report.quarantined.append((str(_quarantine(store, file, problem)), problem))
        else:
            report.unrecoverable.append((str(file), problem))


def _forgotten(store: TinyDBStore, previous: Path) -> bool:
    """Whether ``previous`` holds the document of a key the audit log says was forgotten."""
    key = store.previous_key(previous)
    return key is not None and key in store.forgotten()


def _catch_up_clock(store: TinyDBStore, file: Path, report: RepairReport) -> None:
    """An older generation of the metadata never sets the clock behind the documents."""
    tables = msgspec.json.decode(file.read_bytes())
    for meta in tables.get("meta", {}).values():
        newest = _newest_save(store)
        if isinstance(meta, dict) and isinstance(meta.get("clock"), (int, float)) and meta["clock"] < newest:
            change = f"game clock {meta['clock']} was behind the documents: set to {newest}"
            report.mended.append((str(file), [change]))
            meta["clock"] = newest
            write_atomic(file, msgspec.json.encode(tables), keep_previous=False)


def _mended(store: TinyDBStore, file: Path) -> tuple[bytes, list[str]] | None:
    try:
        raw = file.read_bytes()
    except OSError:
        return None
    scratch = file.with_name(file.name + ".mending")

    def check(data: bytes) -> None:
        scratch.write_bytes(data)
        store.check_file(scratch, as_name=file.name)

    try:
        return mend(raw, check, clock=_newest_save(store))
    finally:
        scratch.unlink(missing_ok=True)


class _SavedAt(msgspec.Struct):
    saved_at: float = 0.0


class _Saves(msgspec.Struct):
    npcs: dict[str, _SavedAt] = msgspec.field(default_factory=dict)
    players: dict[str, _SavedAt] = msgspec.field(default_factory=dict)


_saves_decoder = msgspec.json.Decoder(_Saves)


def _newest_save(store: TinyDBStore) -> float:
    """The newest ``saved_at`` among the readable document files (0.0 if none)."""
    newest = 0.0
    for file in store_files(store.path):
        with contextlib.suppress(OSError, msgspec.DecodeError):
            saves = _saves_decoder.decode(file.read_bytes())
            for document in (*saves.npcs.values(), *saves.players.values()):
                if math.isfinite(document.saved_at):
                    newest = max(newest, document.saved_at)
    return newest


def _quarantine(store: TinyDBStore, file: Path, problem: str) -> Path:
    """Move ``file`` (and its previous generation) into the store's quarantine folder."""
    folder = store.path / QUARANTINE_DIR
    folder.mkdir(exist_ok=True)
    target = folder / file.name
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{file.name}.{number}"
    os.replace(file, target)
    previous = previous_of(file)
    if previous.exists():
        os.replace(previous, target.with_name(target.name + PREVIOUS_SUFFIX))
    fsync_dir(file.parent)
    store.append_audit(_audit("quarantine", str(file), moved_to=str(target), problem=problem))
    return target


def _rebuild_meta(store: TinyDBStore, report: RepairReport) -> None:
    """Metadata the store lost (its file and previous generation both gone) while
    documents remain: rebuilt with the clock of the newest document."""
    meta_file = store.path / META_FILE
    if meta_file.exists() or previous_of(meta_file).exists():
        return
    try:
        if store.read_meta() is not None or not list((store.path / DOCS_DIR).glob("*.json")):
            return
    except StoreError:
        return
    clock = _newest_save(store)
    store.write_meta(StoreMeta(clock=clock))
    store.checkpoint(strict=False)
    report.mended.append(
        (str(meta_file), [f"was missing: rebuilt with game clock {clock} (the newest document's save time); "
                          "the random generator restarts from the seed and pending extractions not kept "
                          "in their NPC's document are gone"])
    )


def clear_store(path: str | os.PathLike[str], world: str) -> None:
    """Empty the store at ``path`` for a fresh start, only if esper world ``world``
    wrote it (its metadata names that world, or it holds nothing yet). Refuses a
    store in use (naming its owner) and any store another world wrote. The store's
    lock is held while its files are deleted."""
    directory = Path(path)
    if not directory.exists():
        return
    if not directory.is_dir() or not is_store(directory):
        raise StoreError(f"{directory} exists and is not an npc-memory store; choose another path")
    store = TinyDBStore(directory, create=False, checkpoint_on_close=False)
    try:
        try:
            contents = store.load()
        except StoreError as exc:
            raise StoreError(f"store {directory} cannot be read, so it is left alone: {exc}") from exc
        owner = None if contents.meta is None else contents.meta.world
        if owner != world and (owner is not None or contents.documents):
            written_by = f"esper world {owner!r}" if owner is not None else "an unknown world"
            raise StoreError(
                f"store {directory} was written by {written_by}, not {world!r}; it is left alone "
                "(choose another path, or remove it yourself)"
            )
        for entry in directory.iterdir():
            if entry.name in (LOCK_FILE, OWNER_FILE, CHECKPOINT_LOCK_FILE):
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    finally:
        store.close()


class StoreStats(msgspec.Struct, kw_only=True):
    """A store at rest in numbers (``npc-memory stats``): ``health`` is ``ok`` or
    ``damaged`` (then ``problems`` says what loading would refuse, and the counts are
    zero); sizes in bytes; ``pending_extractions``: the conversations waiting for
    extraction (in the metadata or in an NPC's document); ``memories_by_source``: the
    memories about players by how the NPC knows them (witnessed, said, claimed, heard,
    authored); ``grounding``: what grounding did with an LLM's memories, by
    ``"<outcome>: <reason>"``, over the store's life."""

    path: str
    health: Literal["ok", "damaged"] = "ok"
    problems: list[str] = msgspec.field(default_factory=list)
    world: str = ""
    schema_version: int = SCHEMA_VERSION
    clock: float = 0.0
    snapshots: int = 0
    npcs: int = 0
    players: int = 0
    memories: int = 0
    facts: int = 0
    relationships: int = 0
    pending_extractions: int = 0
    memories_by_source: dict[str, int] = msgspec.field(default_factory=dict)
    grounding: dict[str, int] = msgspec.field(default_factory=dict)
    bytes: int = 0
    journal_bytes: int = 0
    journal_segments: int = 0
    audit_entries: int = 0
    quarantined: int = 0


def store_stats(path: str | os.PathLike[str]) -> StoreStats:
    """Counts, sizes and soundness of the store at ``path`` (read only)."""
    store = TinyDBStore(path, create=False, read_only=True)
    stats = StoreStats(path=str(store.path))
    try:
        try:
            contents = store.load()
        except StoreCorruptError as exc:
            stats.health = "damaged"
            stats.problems = [f"{file}: {problem}" for file, problem in exc.found]
            contents = None
        try:
            stats.audit_entries = len(store.audit())
        except StoreError as exc:
            stats.health = "damaged"
            stats.problems.append(str(exc))
    finally:
        store.close()
    if contents is not None:
        meta = contents.meta or StoreMeta()
        stats.world, stats.schema_version, stats.clock = meta.world, meta.schema_version, meta.clock
        stats.snapshots = meta.snapshots
        pending = {job.conversation for job in meta.pending_extractions}
        for document in contents.documents.values():
            if isinstance(document, NpcDocument):
                pending.update(conversation.conversation for conversation in document.working.pending)
                stats.npcs += 1
                stats.memories += document.bank.count()
                by_source = stats.memories_by_source
                for pair in document.bank.players.values():
                    for memory in pair.all():
                        by_source[memory.source] = by_source.get(memory.source, 0) + 1
                stats.facts += len(document.knowledge.facts)
                stats.relationships += len(document.relationships.by_player)
            else:
                stats.players += 1
        stats.pending_extractions = len(pending)
        stats.grounding = dict(sorted(meta.grounding.items()))
    for file in store.path.rglob("*"):
        with contextlib.suppress(OSError):
            if file.is_file():
                size = file.stat().st_size
                stats.bytes += size
                if file.parent.name == JOURNAL_DIR:
                    stats.journal_bytes += size
                    stats.journal_segments += 1
                elif file.parent.name == QUARANTINE_DIR and not file.name.endswith(PREVIOUS_SUFFIX):
                    stats.quarantined += 1
    return stats


def inspect_store(path: str | os.PathLike[str], npc: str | None = None) -> str:
    """A readable summary of the store, or of one NPC's memories and relationships."""
    contents, audit = read_store(path)
    meta = contents.meta or StoreMeta()
    lines = [
        f"store {path}: world {meta.world!r}, pack {meta.pack!r}, schema {meta.schema_version}, "
        f"game time {meta.clock:.0f} s, {meta.snapshots} snapshots, {len(audit)} audit entries"
    ]
    npcs = sorted((d for d in contents.documents.values() if isinstance(d, NpcDocument)), key=lambda d: d.key)
    players = len(contents.documents) - len(npcs)
    if npc is None:
        lines.append(f"{len(npcs)} NPCs, {players} players")
        for doc in npcs:
            relationships = len(doc.relationships.by_player)
            lines.append(
                f"  {doc.key:20} {doc.bank.count():6} memories  {relationships:4} relationships"
                f"  room {doc.room or '-'}"
            )
        return "\n".join(lines) + "\n"
    document = contents.documents.get(npc)
    if not isinstance(document, NpcDocument):
        raise StoreError(f"store {path} holds no NPC {npc!r}")
    lines.append(
        f"NPC {document.key} ({document.name}), faction {document.faction}, archetype {document.archetype}"
    )
    for player, rel in sorted(document.relationships.by_player.items()):
        lines.append(
            f"  {player}: {rel.stage.value}, trust {rel.trust:.2f}, disposition {rel.disposition:+.2f}, "
            f"{rel.interaction_count} interactions"
        )
    pairs: Sequence[tuple[str, Any]] = [
        ("(world)", document.bank.world),
        *sorted(document.bank.players.items()),
    ]
    for player, pair in pairs:
        for memory in pair.all():
            lines.append(f"  [{player}] {memory.id} {type(memory).__name__[:-6].lower()}: {memory.content}")
    return "\n".join(lines) + "\n"


def _problem(store: TinyDBStore, file: Path, as_name: str | None = None) -> str | None:
    if not file.exists():
        return "missing"
    try:
        store.check_file(file, as_name=as_name)
    except StoreCorruptError as exc:
        return exc.problem
    except StoreVersionError as exc:
        return str(exc)
    return None


def _audit(action: str, target: str, actor: str = "", **details: Any) -> AuditEntry:
    return AuditEntry(
        action=action,
        target=target,
        actor=actor,
        wall_time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        details=details,
    )
