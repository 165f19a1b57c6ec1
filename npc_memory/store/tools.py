"""Operator tools over a store at rest: export, import, repair, inspect.

Each opens the store (taking its lock: a store in use by a running game is refused)
and records what it changed in the store's audit log.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from npc_memory.errors import StoreCorruptError, StoreError, StoreVersionError
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    NpcDocument,
    StoreMeta,
    encode_document,
)
from npc_memory.store.files import previous_of, write_atomic
from npc_memory.store.migrations import MigrationContext, migrate_document
from npc_memory.store.tinydb_store import TinyDBStore, store_files

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


def export_store(path: str | os.PathLike[str]) -> bytes:
    """The whole store at ``path`` as export JSON (indented, newline-terminated). A
    store whose forgetting of a player was interrupted is refused until it is finished
    (the export would still hold the player)."""
    store = TinyDBStore(path, create=False, checkpoint_on_close=False)
    try:
        if store.pending_forgets():
            raise StoreError(
                f"store {path} has a player's forgetting still to finish (it was interrupted); "
                "run 'npc-memory forget --db PATH --resume' (or install the plugin on it) first"
            )
        contents = store.load()
    finally:
        store.close()
    documents = [contents.documents[key] for key in sorted(contents.documents)]
    data = _export_encoder.encode(ExportFile(meta=contents.meta, documents=documents))
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
    actor: str = "",
) -> int:
    """Load export ``data`` into the store at ``path`` (created if missing); returns the
    number of documents written. ``mode``: ``new`` refuses a store that already holds
    documents, ``merge`` overwrites documents with the same keys, ``replace`` also
    deletes documents the export does not contain. The export is fully validated
    before anything is written."""
    export = parse_export(data, source=source)
    store = TinyDBStore(path)
    try:
        existing = set(store.load().documents)
        if mode == "new" and existing:
            raise StoreError(
                f"store {path} already holds {len(existing)} documents; use --merge or --replace"
            )
        store.write([encode_document(d) for d in export.documents])
        stale = sorted(existing - {d.key for d in export.documents}) if mode == "replace" else []
        if stale:
            store.delete(stale)
        if export.meta is not None:
            store.write_meta(export.meta)
        store.checkpoint()  # the document files hold the import, not just the journal
        store.append_audit(
            _audit(
                "import", str(path), actor, mode=mode, source=source,
                written=len(export.documents), deleted=len(stale),
            )
        )
    finally:
        store.close()
    return len(export.documents)


class RepairReport(msgspec.Struct, kw_only=True):
    """What ``repair`` found: files restored from their previous generation, files
    damaged beyond repair (with the problem), how many files were sound, and what
    folding the journal into the files had to skip (damaged records, changes that no
    longer apply to a restored older generation), and how many damaged audit log lines
    were dropped."""

    restored: list[str] = msgspec.field(default_factory=list)
    unrecoverable: list[tuple[str, str]] = msgspec.field(default_factory=list)
    sound: int = 0
    journal: list[str] = msgspec.field(default_factory=list)
    audit_lines_dropped: int = 0


def repair_store(path: str | os.PathLike[str], *, actor: str = "") -> RepairReport:
    """Check every data file of the store; restore each damaged one from its previous
    good generation. A damaged file is kept beside it as ``<name>.broken`` (nothing is
    silently dropped); a file with no good previous generation is reported. Then the
    journal is folded into the files, skipping (and reporting) what cannot apply, and
    damaged audit log lines are dropped from their files (kept in ``.broken`` copies)."""
    store = TinyDBStore(path, create=False)
    report = RepairReport()
    try:
        for file in store_files(store.path):
            problem = _problem(store, file)
            if problem is None:
                report.sound += 1
                continue
            previous = previous_of(file)
            if _problem(store, previous, as_name=file.name) is not None:
                report.unrecoverable.append((str(file), problem))
                continue
            if file.exists():
                os.replace(file, file.with_name(file.name + ".broken"))
            write_atomic(file, previous.read_bytes(), keep_previous=False)
            report.restored.append(str(file))
        report.journal = store.check_journal()
        report.journal += store.checkpoint(strict=False)
        report.audit_lines_dropped = store.repair_audit()
        if report.restored or report.unrecoverable or report.journal or report.audit_lines_dropped:
            store.append_audit(
                _audit(
                    "repair",
                    str(path),
                    actor,
                    restored=report.restored,
                    unrecoverable=[f for f, _ in report.unrecoverable],
                    journal=report.journal,
                    audit_lines_dropped=report.audit_lines_dropped,
                )
            )
    finally:
        store.close()
    return report


def inspect_store(path: str | os.PathLike[str], npc: str | None = None) -> str:
    """A readable summary of the store, or of one NPC's memories and relationships."""
    store = TinyDBStore(path, create=False, checkpoint_on_close=False)
    try:
        contents = store.load()
        audit = store.audit()
    finally:
        store.close()
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


def _audit(action: str, target: str, actor: str, **details: Any) -> AuditEntry:
    return AuditEntry(
        action=action,
        target=target,
        actor=actor,
        wall_time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        details=details,
    )
