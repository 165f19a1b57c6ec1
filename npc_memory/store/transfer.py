"""Opening a store named by a path or a URL, and copying a world between stores
(``npc-memory migrate --from PATH_OR_URL --to PATH_OR_URL``)."""

from __future__ import annotations

import datetime
import os

import msgspec

from npc_memory.errors import StoreError
from npc_memory.store.base import PrivacyStore, Store, StoreContents
from npc_memory.store.documents import AuditEntry, encode_document
from npc_memory.store.migrations import MigrationContext
from npc_memory.store.tinydb_store import TinyDBStore

DEFAULT_WORLD = "default"
"""The world a PostgreSQL URL names when no world is given (and the source has none)."""


def is_url(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` is a PostgreSQL URL rather than a store directory."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_store(
    target: str | os.PathLike[str],
    *,
    world: str | None = None,
    create: bool = True,
    migration: MigrationContext | None = None,
) -> Store:
    """The store at ``target``: a TinyDB store directory (created if missing and
    ``create``, else only read), or world ``world`` of a PostgreSQL database named by
    URL; ``migration`` reads documents of older schemas."""
    if is_url(target):
        from npc_memory.store.postgres import PostgresStore  # needs the optional 'postgres' extra

        return PostgresStore(str(target), world=world or DEFAULT_WORLD, migration=migration)
    return TinyDBStore(
        target, create=create, checkpoint_on_close=create, read_only=not create, migration=migration
    )


def read_store(
    target: str | os.PathLike[str], *, world: str | None = None
) -> tuple[StoreContents, list[AuditEntry]]:
    """Everything the store at ``target`` holds, and its audit log; the store is only read."""
    store = open_store(target, world=world, create=False)
    try:
        return store.load(), store.audit()
    finally:
        store.close()


def _audit_salt(source: str | os.PathLike[str], world: str | None) -> bytes:
    """The salt of the audit log's pseudonyms in the store at ``source`` (``b""``: none)."""
    store = open_store(source, world=world, create=False)
    try:
        return store.audit_salt() if isinstance(store, PrivacyStore) else b""
    finally:
        store.close()


def describe(target: str | os.PathLike[str]) -> str:
    """``target`` as it may be printed (a URL without its password)."""
    if not is_url(target):
        return str(target)
    from npc_memory.store.postgres import redacted

    return redacted(str(target))


class MigrateReport(msgspec.Struct, kw_only=True):
    """What ``migrate`` copied: the world's name, documents and audit entries."""

    world: str
    documents: int
    audit_entries: int


def migrate_store(
    source: str | os.PathLike[str], target: str | os.PathLike[str], *, world: str | None = None
) -> MigrateReport:
    """Copy a world from ``source`` to ``target`` (each a store directory or a
    PostgreSQL URL): every document and the metadata in one write, then the audit log
    and an entry recording the copy. ``world`` names the world in a PostgreSQL store
    (default: the world the source's metadata names). The target must hold no
    documents; the source is only read."""
    contents, entries = read_store(source, world=world)
    salt = _audit_salt(source, world)
    named = contents.meta.world if contents.meta is not None else ""
    name = world or named or DEFAULT_WORLD
    writer = open_store(target, world=name)
    try:
        existing = writer.load()
        if existing.documents or existing.meta is not None:
            raise StoreError(
                f"{describe(target)} already holds world {name!r} ({len(existing.documents)} documents); "
                "migrate copies into an empty store only"
            )
        documents = [encode_document(contents.documents[key]) for key in sorted(contents.documents)]
        if salt and isinstance(writer, PrivacyStore):  # the pseudonyms stay the same
            writer.set_audit_salt(salt)
        writer.write(documents, contents.meta)
        for entry in entries:
            writer.append_audit(entry)
        when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        details = {"from": describe(source), "documents": len(documents)}
        writer.append_audit(AuditEntry(action="migrate", target=name, wall_time=when, details=details))
        if isinstance(writer, TinyDBStore):
            writer.checkpoint()  # the document files hold the copy, not just the journal
    finally:
        writer.close()
    return MigrateReport(world=name, documents=len(documents), audit_entries=len(entries))
