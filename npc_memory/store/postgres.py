"""A store on PostgreSQL (psycopg 3 and its connection pool), shared by game servers.

Install with the ``postgres`` extra (``pip install 'esper-npc-memory[postgres]'``)
and pass ``store="postgresql://user@host/db"`` to ``install`` (the world's name is
the esper world's) or a :class:`PostgresStore`.

Tables (created, and migrated, by the store; ``npc_memory_schema`` holds the version)::

    npc_memory_documents  (world, kind, key) -> data JSONB, version, owner
    npc_memory_meta       (world, server)    -> data JSONB   (clock, random state, ...)
    npc_memory_audit      id, world, token, data JSONB       (append-only)
    npc_memory_sessions   id, world, server, last_write      (one row per open store)
    npc_memory_privacy    world -> salt, pending JSONB       (the audit salt, privacy operations to finish)

**Optimistic concurrency.** The store remembers the version of each document it read
(``load``, ``claim``) or wrote; a write replaces a row only at that version, so a
change made meanwhile by anyone else is never overwritten: the write raises
:class:`~npc_memory.errors.StoreConflictError` naming the document, and nothing of
that transaction is applied.

**Ownership.** Each open store is a *session* holding a PostgreSQL advisory lock on a
connection of its own; a document row names the session that owns it. A session owns
what it claims (``claim``, called when the plugin adds an NPC or player) and what it
writes. A document owned by a session whose lock is held is refused to everyone else
(:class:`~npc_memory.errors.StoreOwnedError`); the lock goes with the session's
connection, so a closed store or a dead process owns nothing. Handing an NPC from one
game server to another: ``remove_npc`` on the first (its last snapshot releases the
row), then ``add_npc`` on the second, which reads the document fresh.

**Dropped connections.** Every operation is retried (``retries`` times, with back-off)
when the connection fails; a write whose commit may have happened before the failure
is recognised by the write token its transaction stored on the session's row, so a
retry neither loses nor repeats it.

**Privacy.** The store is a :class:`~npc_memory.store.base.PrivacyStore`: the world's
row in ``npc_memory_privacy`` records a player whose forgetting began (a restart finishes
it) and the salt of the audit log's pseudonyms (made once per world, so a player keeps
their pseudonym across runs and game servers). :meth:`PostgresStore.purge` deletes the
forgotten player's row, redacts every audit entry that names them and then vacuums the
tables, so no query reaches a row version PostgreSQL kept after an update or a delete.
While game servers share the world, the row also records a withdrawal of consent or the
end of a game under way, and each server records in the pending operation that it has
done its part (:meth:`PostgresStore.acknowledge_forget`); :meth:`PostgresStore.forget_progress`
says who is still to and who finishes, and :meth:`PostgresStore.take_free` hands over the
rows no live server owns, to be cleaned or rewritten.
(Their bytes may stay in the table files until PostgreSQL reuses the space, and the
write-ahead log and backups keep history by the server's settings: for erasure on disk
run ``VACUUM FULL`` on the tables and let the log and backups age out.)
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

import msgspec

from npc_memory.errors import (
    StoreConflictError,
    StoreCorruptError,
    StoreError,
    StoreOwnedError,
    StoreVersionError,
)
from npc_memory.rules import privacy as privacy_rules
from npc_memory.store.base import PendingForget, PurgeReport, StoreContents
from npc_memory.store.documents import (
    SCHEMA_VERSION,
    AuditEntry,
    Document,
    EncodedDocument,
    StoreMeta,
)
from npc_memory.store.migrations import MigrationContext, migrate_document
from npc_memory.store.records import document_decoder

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the PostgreSQL store needs psycopg 3 and psycopg-pool: pip install 'esper-npc-memory[postgres]'"
    ) from exc

log = logging.getLogger("npc_memory.store")

STORE_SCHEMA = 2
"""Version of the tables below (``npc_memory_schema``); a newer one is refused."""
LOCK_SPACE = 0x4E50434D
"""First key of every advisory lock the store takes ("NPCM"); the second is the session id."""
FETCH_ROWS = 256
"""Rows fetched per round trip while loading."""
SESSION_CHECK = 1.0
"""Seconds between two checks that the session's lock connection is alive."""

_PRIVACY_TABLE = """CREATE TABLE IF NOT EXISTS npc_memory_privacy (
    world text PRIMARY KEY,
    salt bytea,
    pending jsonb NOT NULL DEFAULT '[]'
)"""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS npc_memory_schema (version integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS npc_memory_documents (
        world text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('npc', 'player')),
        key text NOT NULL,
        version bigint NOT NULL,
        owner integer,
        data jsonb,
        PRIMARY KEY (world, kind, key)
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS npc_memory_documents_key ON npc_memory_documents (world, key)",
    """CREATE TABLE IF NOT EXISTS npc_memory_meta (
        world text NOT NULL,
        server text NOT NULL,
        data jsonb NOT NULL,
        PRIMARY KEY (world, server)
    )""",
    """CREATE TABLE IF NOT EXISTS npc_memory_audit (
        id bigserial PRIMARY KEY,
        world text NOT NULL,
        token uuid NOT NULL UNIQUE,
        data jsonb NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS npc_memory_audit_world ON npc_memory_audit (world, id)",
    "CREATE SEQUENCE IF NOT EXISTS npc_memory_session_ids AS integer CYCLE",
    """CREATE TABLE IF NOT EXISTS npc_memory_sessions (
        id integer PRIMARY KEY,
        world text NOT NULL,
        server text NOT NULL,
        last_write uuid
    )""",
    _PRIVACY_TABLE,
]

UPGRADES: dict[int, list[str]] = {1: [_PRIVACY_TABLE]}
"""``UPGRADES[n]``: the statements that turn table schema n into n + 1 (run in order,
in one transaction, when a store opens an older database)."""

_LIVE = f"""(SELECT coalesce(array_agg(objid::bigint), '{{}}') FROM pg_locks
    WHERE locktype = 'advisory' AND classid = {LOCK_SPACE} AND objsubid = 2 AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"""
"""The sessions alive now: those whose advisory lock is held."""

_FREE = "(d.owner IS NULL OR d.owner = %(me)s OR NOT d.owner = ANY(live.ids))"
"""A row this session may change: unowned, its own, or owned by a dead session."""

_UPDATE = """UPDATE npc_memory_documents d
SET data = %(data)s::jsonb, kind = %(kind)s, version = d.version + 1,
    owner = CASE WHEN %(release)s THEN NULL ELSE %(me)s END
WHERE d.world = %(world)s AND d.key = %(key)s AND d.version = %(expected)s
    AND (d.owner IS NULL OR d.owner = %(me)s OR NOT d.owner = ANY(%(live)s::bigint[]))
RETURNING d.key, d.version"""
"""One document's update, at the version this session read and only where it may
change the row (``live``: the sessions alive, read once per transaction)."""

_INSERT = """INSERT INTO npc_memory_documents (world, kind, key, version, owner, data)
VALUES (%(world)s, %(kind)s, %(key)s, 1, CASE WHEN %(release)s THEN NULL ELSE %(me)s END, %(data)s::jsonb)
ON CONFLICT DO NOTHING
RETURNING key, version"""

_DELETE = f"""WITH live AS (SELECT {_LIVE} AS ids)
DELETE FROM npc_memory_documents d USING live
WHERE d.world = %(world)s AND d.key = ANY(%(keys)s) AND {_FREE}
RETURNING d.key"""

_CLAIM = f"""WITH live AS (SELECT {_LIVE} AS ids)
UPDATE npc_memory_documents d SET owner = %(me)s
FROM live WHERE d.world = %(world)s AND d.key = %(key)s AND {_FREE}
RETURNING d.kind, d.version, d.data::text"""

_VACUUMED = ("npc_memory_documents", "npc_memory_audit", "npc_memory_meta")
"""The tables a purge vacuums: where old versions of rows naming a player may remain."""

_T = TypeVar("_T")
_meta_decoder = msgspec.json.Decoder(StoreMeta)
_pending_decoder = msgspec.json.Decoder(list[PendingForget])
_audit_decoder = msgspec.json.Decoder(AuditEntry)
_encoder = msgspec.json.Encoder()


class PostgresStore:
    """World ``world`` in the PostgreSQL database at ``url``.

    ``server`` names this game server where several share a world: each keeps its own
    metadata (clock, random state, pending extractions) under it. ``pool_size``:
    connections for data (one more holds the session's lock); ``retries``: attempts
    after a failed connection, ``timeout``: seconds to wait for a connection each time.
    Documents older than the current schema are migrated when read (``migration``).
    """

    def __init__(
        self,
        url: str,
        *,
        world: str = "default",
        server: str = "",
        migration: MigrationContext | None = None,
        pool_size: int = 2,
        retries: int = 8,
        timeout: float = 10.0,
    ) -> None:
        if not world:
            raise StoreError("a PostgreSQL store needs a non-empty world name")
        self.url = url
        self.world = world
        self.server = server
        self.migration = migration or MigrationContext()
        self.retries = retries
        self.timeout = timeout
        self._lock = threading.Lock()
        """Guards the versions and releases below; held for no database work, so a claim
        (the game thread's ``add_npc``) never waits for a round the writer is writing."""
        self._session_lock = threading.Lock()
        self._versions: dict[str, int] = {}
        self._releasing: set[str] = set()
        self._closed = False
        self._session_conn: psycopg.Connection[Any] | None = None
        self._session_ok = False
        self._checked = 0.0
        self.session = 0
        try:
            self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                timeout=timeout,
                check=ConnectionPool.check_connection,
                open=False,
                name=f"npc-memory-{world}",
            )
            self._pool.open(wait=True, timeout=timeout)
        except (psycopg.Error, Exception) as exc:
            raise StoreError(f"cannot connect to the PostgreSQL store {self!r}: {exc}") from exc
        try:
            self._run(self._create_schema)
            self.session = self._run(self._new_session)
            self._run(lambda _: None)  # takes the session's lock
        except BaseException:
            self._pool.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({redacted(self.url)!r}, world={self.world!r})"

    # ------------------------------------------------------------------ reading

    def load(self) -> StoreContents:
        """Every document of the world (streamed from the server) and this server's
        metadata; remembers each document's version for the next writes."""

        def load(conn: psycopg.Connection[Any]) -> tuple[StoreContents, dict[str, int]]:
            documents: dict[str, Document] = {}
            versions: dict[str, int] = {}
            with conn.cursor(name="npc_memory_load") as cursor:
                cursor.itersize = FETCH_ROWS
                cursor.execute(
                    "SELECT key, version, data::text FROM npc_memory_documents "
                    "WHERE world = %s AND (data IS NOT NULL OR owner = %s)",
                    (self.world, self.session),
                )
                for key, version, data in cursor:
                    versions[key] = version
                    if data is not None:  # (else a key this session reserved)
                        documents[key] = self._decode(key, data)
            lsns = {key: versions[key] for key in documents}
            return StoreContents(meta=self._read_meta(conn), documents=documents, lsns=lsns), versions

        contents, versions = self._run(load)
        with self._lock:
            self._versions = versions
        return contents

    def read_meta(self) -> StoreMeta | None:
        """This server's metadata in the world, or ``None`` before the first write."""
        return self._run(self._read_meta)

    def audit(self) -> list[AuditEntry]:
        """The world's audit log, oldest first."""

        def read(conn: psycopg.Connection[Any]) -> list[AuditEntry]:
            rows = conn.execute(
                "SELECT id, data::text FROM npc_memory_audit WHERE world = %s ORDER BY id", (self.world,)
            )
            return [self._decode_with(_audit_decoder, f"audit entry {id_}", data) for id_, data in rows]

        return self._run(read)

    def keys(self) -> list[str]:
        """Keys of every stored document of the world."""
        rows = self._run(
            lambda conn: conn.execute(
                "SELECT key FROM npc_memory_documents WHERE world = %s AND data IS NOT NULL ORDER BY key",
                (self.world,),
            ).fetchall()
        )
        return [key for (key,) in rows]

    def versions(self) -> dict[str, int]:
        """The version of each document as this store last read or wrote it."""
        with self._lock:
            return dict(self._versions)

    # ------------------------------------------------------------------ writing

    def write(self, documents: Sequence[EncodedDocument], meta: StoreMeta | None = None) -> None:
        """Write ``documents`` (each at the version this store last saw of it), then
        ``meta``, in one transaction: all or nothing. A document changed, deleted or
        owned by another live session raises :class:`StoreConflictError`."""
        token = uuid.uuid4()
        latest = {d.key: d for d in documents}  # the last version of a key wins
        with self._lock:
            expected = {key: self._versions[key] for key in latest if key in self._versions}
            releases = {key for key in latest if key in self._releasing}
        known = [d for d in latest.values() if d.key in expected]
        new = [d for d in latest.values() if d.key not in expected]
        attempt = 0

        def write(conn: psycopg.Connection[Any]) -> dict[str, int]:
            nonlocal attempt
            attempt += 1
            if attempt > 1 and self._committed(conn, token):
                return {key: version + 1 for key, version in expected.items()} | {d.key: 1 for d in new}
            written: dict[str, int] = {}
            live = self._live(conn) if known else []
            for statement, batch in ((_UPDATE, known), (_INSERT, new)):
                if batch:  # one statement per document, pipelined: no giant array parameters
                    rows = self._rows(batch, expected, releases, live)
                    written.update(self._each(conn, statement, rows))
            missing = [d.key for d in (*known, *new) if d.key not in written]
            if missing:
                raise self._conflict(conn, missing[0], "write", expected.get(missing[0]))
            if meta is not None:
                self._put_meta(conn, meta)
            conn.execute(
                "UPDATE npc_memory_sessions SET last_write = %s WHERE id = %s", (token, self.session)
            )
            return written

        written = self._run(write)
        with self._lock:
            for key, version in written.items():
                if key in releases and key in self._releasing:  # (unless claimed again meanwhile)
                    self._releasing.discard(key)
                    self._versions.pop(key, None)  # another server may take it over from here
                else:  # a claim meanwhile may have seen this version already
                    self._versions[key] = max(version, self._versions.get(key, 0))

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the documents of ``keys`` (missing keys are ignored); a document owned
        by another live session raises :class:`StoreOwnedError`."""
        wanted = sorted(set(keys))
        if not wanted:
            return

        self._run(lambda conn: self._delete(conn, wanted, "delete"))
        self._forget_versions(wanted)

    def write_meta(self, meta: StoreMeta) -> None:
        """Replace this server's metadata."""
        self._run(lambda conn: self._put_meta(conn, meta))

    def append_audit(self, entry: AuditEntry) -> None:
        """Append ``entry`` to the world's audit log (once, also when a dropped
        connection makes the append run again)."""
        token = uuid.uuid4()
        data = _encoder.encode(entry).decode("utf-8")
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO npc_memory_audit (world, token, data) VALUES (%s, %s, %s::jsonb) "
                "ON CONFLICT (token) DO NOTHING",
                (self.world, token, data),
            )
        )

    # ------------------------------------------------------------------ privacy

    def pending_forgets(self) -> list[PendingForget]:
        """The players of the world whose forgetting began and has not finished."""
        row = self._run(
            lambda conn: conn.execute(
                "SELECT pending::text FROM npc_memory_privacy WHERE world = %s", (self.world,)
            ).fetchone()
        )
        return [] if row is None else self._decode_with(_pending_decoder, "pending forgetting", row[0])

    def set_pending_forgets(self, pending: Sequence[PendingForget]) -> None:
        """Record the forgetting still to finish (empty: none), committed when it
        returns. The (small) table is then rewritten (``VACUUM FULL``), so no older
        record is left in its files."""
        data = _encoder.encode(list(pending)).decode("utf-8")
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO npc_memory_privacy (world, pending) VALUES (%s, %s::jsonb) "
                "ON CONFLICT (world) DO UPDATE SET pending = excluded.pending",
                (self.world, data),
            )
        )
        self.vacuum("npc_memory_privacy", full=True)

    def audit_salt(self) -> bytes:
        """The salt of the pseudonyms that stand for players in the world's audit log
        (made by the first store to ask, then the same for every run and server)."""
        fresh = os.urandom(16)
        row = self._run(
            lambda conn: conn.execute(
                "INSERT INTO npc_memory_privacy (world, salt) VALUES (%s, %s) ON CONFLICT (world) "
                "DO UPDATE SET salt = coalesce(npc_memory_privacy.salt, excluded.salt) RETURNING salt",
                (self.world, fresh),
            ).fetchone()
        )
        assert row is not None
        return bytes(row[0])

    def acknowledge_forget(self, key: str, op: str = "forget") -> None:
        """Record in ``key``'s pending operation ``op`` that this session has done it
        in what it owns (nothing, if no such operation is pending)."""

        def acknowledge(conn: psycopg.Connection[Any]) -> None:
            pending = self._pending_for_update(conn)
            changed = [
                msgspec.structs.replace(p, acks=(*p.acks, self.session))
                if p.key == key and p.op == op and self.session not in p.acks
                else p
                for p in pending
            ]
            if changed != pending:
                conn.execute(
                    "UPDATE npc_memory_privacy SET pending = %s::jsonb WHERE world = %s",
                    (_encoder.encode(changed).decode("utf-8"), self.world),
                )

        self._run(acknowledge)

    def forget_progress(self, key: str, op: str = "forget") -> tuple[list[int], int | None]:
        """The live sessions owning documents of the world that have not acknowledged
        ``key``'s pending operation ``op``, and the one to finish it: the live
        acknowledged session with the lowest id (``None``: none, or no such operation);
        one query."""

        def progress(conn: psycopg.Connection[Any]) -> tuple[list[int], int | None]:
            row = conn.execute(
                "SELECT p.pending::text, live.ids, coalesce((SELECT array_agg(DISTINCT d.owner) "
                "FROM npc_memory_documents d WHERE d.world = p.world AND d.owner = ANY(live.ids)), '{}') "
                f"FROM npc_memory_privacy p, (SELECT {_LIVE} AS ids) live WHERE p.world = %s",
                (self.world,),
            ).fetchone()
            if row is None:
                return [], None
            pending = self._decode_with(_pending_decoder, "pending forgetting", row[0])
            record = next((p for p in pending if p.key == key and p.op == op), None)
            if record is None:
                return [], None
            live, owners = set(row[1]), list(row[2])
            acked = sorted(set(record.acks) & live)
            waiting = [int(owner) for owner in owners if owner not in record.acks]
            return waiting, acked[0] if acked else None

        return self._run(progress)

    def take_free(self, pattern: re.Pattern[str], kind: str = "npc") -> list[Document]:
        """Own every document of ``kind`` ("npc" or "player") of the world that no live
        session owns (unowned, or left by a session that is gone) and in which
        ``pattern`` may find a mention, and return them as stored now; each is given up
        again with its next write."""

        def take(conn: psycopg.Connection[Any]) -> list[tuple[str, int, str]]:
            return conn.execute(
                f"WITH live AS (SELECT {_LIVE} AS ids) UPDATE npc_memory_documents d SET owner = %s "
                "FROM live WHERE d.world = %s AND d.kind = %s AND d.data IS NOT NULL "
                "AND (d.owner IS NULL OR NOT d.owner = ANY(live.ids)) AND d.data::text ~* %s "
                "RETURNING d.key, d.version, d.data::text",
                (self.session, self.world, kind, _loose(pattern)),
            ).fetchall()

        rows = self._run(take)
        documents = [self._decode(key, data) for key, _, data in rows]
        with self._lock:
            for key, version, _ in rows:
                self._versions[key] = version
                self._releasing.add(key)
        return documents

    def _pending_for_update(self, conn: psycopg.Connection[Any]) -> list[PendingForget]:
        row = conn.execute(
            "SELECT pending::text FROM npc_memory_privacy WHERE world = %s FOR UPDATE", (self.world,)
        ).fetchone()
        return [] if row is None else self._decode_with(_pending_decoder, "pending forgetting", row[0])

    def set_audit_salt(self, salt: bytes) -> None:
        """Make ``salt`` the world's audit salt (a world copied here keeps its pseudonyms)."""
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO npc_memory_privacy (world, salt) VALUES (%s, %s) "
                "ON CONFLICT (world) DO UPDATE SET salt = excluded.salt",
                (self.world, salt),
            )
        )

    def purge(self, pattern: re.Pattern[str], remove: Sequence[str] = ()) -> PurgeReport:
        """Leave no row of the world that ``pattern`` finds, nor an older version of one.

        In one transaction: the documents of ``remove`` are deleted (one owned by
        another live game server raises :class:`StoreOwnedError`: the player is in
        play there) and every audit entry naming someone ``pattern`` finds has each
        mention replaced by "someone" (``scrubbed``). Documents and the metadata of the
        world's game servers that still match are reported (``remaining``), not
        touched. Then the tables are vacuumed (see :meth:`vacuum`)."""
        wanted = sorted(set(remove))
        loose = _loose(pattern)

        def purge(conn: psycopg.Connection[Any]) -> PurgeReport:
            report = PurgeReport(removed=len(self._delete(conn, wanted, "forget")) if wanted else 0)
            rows = conn.execute(
                "SELECT id, data::text FROM npc_memory_audit "
                "WHERE world = %s AND data::text ~* %s FOR UPDATE",
                (self.world, loose),
            ).fetchall()
            for id_, data in rows:
                raw = msgspec.json.decode(data)
                scrubbed = _redacted(pattern, raw)
                if scrubbed != raw:
                    conn.execute(
                        "UPDATE npc_memory_audit SET data = %s::jsonb WHERE id = %s",
                        (_encoder.encode(scrubbed).decode("utf-8"), id_),
                    )
                    report.scrubbed += 1
            for table, label, column in (
                ("npc_memory_documents", "document ", "key"),
                ("npc_memory_meta", "metadata of server ", "server"),
            ):
                found = conn.execute(
                    f"SELECT {column}, data::text FROM {table} WHERE world = %s AND data::text ~* %s "
                    f"ORDER BY {column}",
                    (self.world, loose),
                ).fetchall()
                report.remaining += [f"{label}{name!r}" for name, data in found if pattern.search(data)]
            return report

        report = self._run(purge)
        self._forget_versions(wanted)
        self.vacuum()
        return report

    def vacuum(self, *tables: str, full: bool = False) -> None:
        """Vacuum the store's ``tables`` (default: those holding documents, metadata
        and the audit log) now: PostgreSQL drops the old versions of updated and
        deleted rows that no open transaction may still read, so no query or page
        inspection reaches them; their bytes stay in the table's files until the space
        is reused. ``full`` rewrites the tables into new files instead (locking each
        while it is copied)."""
        names = ("FULL " if full else "") + ", ".join(tables or _VACUUMED)

        def vacuum(conn: psycopg.Connection[Any]) -> None:
            conn.autocommit = True  # VACUUM runs outside transactions
            try:
                conn.execute(f"VACUUM {names}")
            finally:
                conn.autocommit = False

        self._run(vacuum, transaction=False)

    # ------------------------------------------------------------------ ownership

    def claim(self, key: str, kind: str) -> Document | None:
        """Own ``key`` from now on and return its document as stored now (``None`` if
        there is none: the key is then reserved for this session). Raises
        :class:`StoreOwnedError` if another live session owns it, and
        :class:`StoreConflictError` if the stored document is of another ``kind``."""

        def claim(conn: psycopg.Connection[Any]) -> tuple[int, Document | None]:
            args = {"world": self.world, "key": key, "me": self.session}
            row = conn.execute(_CLAIM, args).fetchone()
            if row is None:
                inserted = conn.execute(
                    "INSERT INTO npc_memory_documents (world, kind, key, version, owner) "
                    "VALUES (%s, %s, %s, 0, %s) ON CONFLICT DO NOTHING RETURNING version",
                    (self.world, kind, key, self.session),
                ).fetchone()
                if inserted is None:
                    raise self._conflict(conn, key, "claim", None)
                return 0, None
            stored_kind, version, data = row
            if stored_kind != kind:
                raise StoreConflictError(
                    key, f"is stored as a document of kind {stored_kind!r}, not {kind!r}"
                )
            return version, None if data is None else self._decode(key, data)

        version, document = self._run(claim)
        with self._lock:
            self._versions[key] = max(version, self._versions.get(key, 0))
            self._releasing.discard(key)
        return document

    def release_on_write(self, key: str) -> None:
        """Give up ``key`` with its next write (the last one this server makes of it)."""
        with self._lock:
            self._releasing.add(key)

    def owner_of(self, key: str) -> int | None:
        """The session owning ``key`` now (``None``: free, or its owner is gone)."""

        def owner(conn: psycopg.Connection[Any]) -> int | None:
            row = conn.execute(
                f"SELECT d.owner FROM npc_memory_documents d, (SELECT {_LIVE} AS ids) live "
                "WHERE d.world = %s AND d.key = %s AND d.owner = ANY(live.ids)",
                (self.world, key),
            ).fetchone()
            return None if row is None else int(row[0])

        return self._run(owner)

    def other_owners(self) -> list[int]:
        """The other live sessions (game servers) owning documents of the world now."""

        def owners(conn: psycopg.Connection[Any]) -> list[int]:
            rows = conn.execute(
                f"SELECT DISTINCT d.owner FROM npc_memory_documents d, (SELECT {_LIVE} AS ids) live "
                "WHERE d.world = %s AND d.owner = ANY(live.ids) AND d.owner <> %s ORDER BY d.owner",
                (self.world, self.session),
            )
            return [int(owner) for (owner,) in rows]

        return self._run(owners)

    def close(self) -> None:
        """Give up every document this session owns and close the connections
        (idempotent). Documents not yet written stay reserved for no one."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                with self._pool.connection(timeout=1.0) as conn:
                    for statement in (
                        "DELETE FROM npc_memory_documents WHERE owner = %s AND data IS NULL",
                        "UPDATE npc_memory_documents SET owner = NULL WHERE owner = %s",
                        "DELETE FROM npc_memory_sessions WHERE id = %s",
                    ):
                        conn.execute(statement, (self.session,))
            except (psycopg.Error, Exception) as exc:  # the dropped lock frees everything anyway
                log.warning("closing %r: could not release its documents: %s", self, exc)
            if self._session_conn is not None:
                self._session_conn.close()
                self._session_conn = None
            self._pool.close()

    # ------------------------------------------------------------------ internals

    def _delete(self, conn: psycopg.Connection[Any], keys: list[str], action: str) -> set[str]:
        """Delete the rows of ``keys`` this session may change; the keys deleted. A key
        whose row stays (owned by another live session) raises the conflict."""
        args = {"world": self.world, "keys": keys, "me": self.session}
        deleted = {key for (key,) in conn.execute(_DELETE, args)}
        for key in keys:
            if key not in deleted and self._row(conn, key) is not None:
                raise self._conflict(conn, key, action, None)
        return deleted

    def _forget_versions(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._versions.pop(key, None)
                self._releasing.discard(key)

    def _run(self, operation: Callable[[psycopg.Connection[Any]], _T], *, transaction: bool = True) -> _T:
        """``operation`` in one transaction (or on an idle connection, unless
        ``transaction``), retried while the connection fails."""
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        delay = 0.05
        for attempt in range(self.retries + 1):
            try:
                with self._session_lock:
                    self._check_session()
                with self._pool.connection() as conn:
                    if not transaction:
                        return operation(conn)
                    with conn.transaction():
                        return operation(conn)
            except (psycopg.OperationalError, psycopg.errors.AdminShutdown, TimeoutError) as exc:
                if attempt == self.retries:
                    raise StoreError(f"{self!r}: the database is unreachable: {exc}") from exc
                log.warning("%r: connection failed (%s); retrying", self, exc)
                self._session_ok = False
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except psycopg.Error as exc:
                raise StoreError(f"{self!r}: {exc}") from exc
        raise AssertionError("unreachable")

    def _create_schema(self, conn: psycopg.Connection[Any]) -> None:
        """Create the tables in a new database, or bring an older layout up to date."""
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SPACE,))  # one creator at a time
        conn.execute(_SCHEMA[0])
        row = conn.execute("SELECT max(version) FROM npc_memory_schema").fetchone()
        version = None if row is None else row[0]
        if version is None:
            for statement in _SCHEMA[1:]:
                conn.execute(statement)
            conn.execute("INSERT INTO npc_memory_schema (version) VALUES (%s)", (STORE_SCHEMA,))
            return
        if version > STORE_SCHEMA:
            raise StoreVersionError(
                f"{self!r} has table schema {version}, newer than this npc-memory understands "
                f"({STORE_SCHEMA}); upgrade npc-memory to open it"
            )
        for step in range(version, STORE_SCHEMA):
            log.info("%r: upgrading the tables from schema %d to %d", self, step, step + 1)
            for statement in UPGRADES[step]:
                conn.execute(statement)
        conn.execute("UPDATE npc_memory_schema SET version = %s", (STORE_SCHEMA,))

    def _new_session(self, conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT nextval('npc_memory_session_ids')::integer").fetchone()
        assert row is not None
        session = int(row[0])
        conn.execute(
            "INSERT INTO npc_memory_sessions (id, world, server) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET world = excluded.world, server = excluded.server, "
            "last_write = NULL",
            (session, self.world, self.server),
        )
        return session

    def _open_session(self) -> None:
        """(Re)connect the session's own connection and take its advisory lock."""
        if self._session_conn is not None:
            with contextlib.suppress(Exception):
                self._session_conn.close()
        self._session_conn = None
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, int(self.timeout)))
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_SPACE, self.session)).fetchone()
        if row is None or not row[0]:
            conn.close()
            raise StoreError(f"{self!r}: session {self.session} is held by another connection")
        self._session_conn = conn
        self._session_ok = True

    def _check_session(self) -> None:
        """Make sure the session's lock is held: its connection is pinged at most every
        ``SESSION_CHECK`` seconds (and after any failed operation), and reopened, taking
        the lock again, when it is gone (a restarted server). Meanwhile other sessions
        may have claimed this one's documents; its writes then fail as conflicts."""
        if not self.session:  # the session is being set up
            return
        now = time.monotonic()
        conn = self._session_conn
        if self._session_ok and conn is not None and not conn.closed and now - self._checked < SESSION_CHECK:
            return
        if conn is not None and not conn.closed:
            try:
                conn.execute("SELECT 1")
            except psycopg.Error:
                self._open_session()
        else:
            self._open_session()
        self._session_ok = True
        self._checked = now

    def _committed(self, conn: psycopg.Connection[Any], token: uuid.UUID) -> bool:
        row = conn.execute(
            "SELECT last_write FROM npc_memory_sessions WHERE id = %s", (self.session,)
        ).fetchone()
        return row is not None and row[0] == token

    def _rows(
        self,
        documents: Sequence[EncodedDocument],
        expected: dict[str, int],
        releases: set[str],
        live: list[int],
    ) -> list[dict[str, Any]]:
        shared = {"world": self.world, "me": self.session, "live": live}
        return [
            {
                **shared,
                "key": d.key,
                "kind": d.kind,
                "data": d.data.decode("utf-8"),
                "release": d.key in releases,
                "expected": expected.get(d.key, 0),
            }
            for d in documents
        ]

    @staticmethod
    def _each(conn: psycopg.Connection[Any], statement: str, rows: list[dict[str, Any]]) -> dict[str, int]:
        """``statement`` for each of ``rows`` (pipelined); the ``(key, version)`` each returned."""
        returned: dict[str, int] = {}
        with conn.cursor() as cursor:
            cursor.executemany(statement, rows, returning=True)
            while True:
                for key, version in cursor.fetchall():
                    returned[key] = version
                if not cursor.nextset():
                    return returned

    @staticmethod
    def _live(conn: psycopg.Connection[Any]) -> list[int]:
        """The sessions alive now."""
        row = conn.execute(f"SELECT {_LIVE}").fetchone()
        return [] if row is None else list(row[0])

    def _row(self, conn: psycopg.Connection[Any], key: str) -> tuple[int, int | None, bool, bool] | None:
        """``(version, owner, owner alive, has data)`` of ``key``'s row."""
        row = conn.execute(
            f"SELECT d.version, d.owner, coalesce(d.owner = ANY(live.ids), false), d.data IS NOT NULL "
            f"FROM npc_memory_documents d, (SELECT {_LIVE} AS ids) live WHERE d.world = %s AND d.key = %s",
            (self.world, key),
        ).fetchone()
        return None if row is None else (int(row[0]), row[1], bool(row[2]), bool(row[3]))

    def _conflict(
        self, conn: psycopg.Connection[Any], key: str, action: str, expected: int | None
    ) -> StoreConflictError:
        """The error for ``action`` refused on ``key`` (read at version ``expected``), saying why."""
        row = self._row(conn, key)
        if row is None:
            return StoreConflictError(key, f"cannot {action}: it was deleted by another game server")
        version, owner, alive, _ = row
        if alive and owner != self.session:
            return StoreOwnedError(
                key,
                f"cannot {action}: it is owned by another game server (session {owner}); "
                "remove it there (and let that server save) before adding it here",
            )
        if expected is None:
            return StoreConflictError(key, f"cannot {action}: another game server created it meanwhile")
        return StoreConflictError(
            key,
            f"cannot {action}: it is at version {version} but this server read version {expected}; "
            "another game server changed it",
        )

    def _read_meta(self, conn: psycopg.Connection[Any]) -> StoreMeta | None:
        row = conn.execute(
            "SELECT data::text FROM npc_memory_meta WHERE world = %s AND server = %s",
            (self.world, self.server),
        ).fetchone()
        if row is None:
            return None
        meta = self._decode_with(_meta_decoder, "metadata", row[0])
        if meta.schema_version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self!r} has schema version {meta.schema_version}, newer than this npc-memory "
                f"understands ({SCHEMA_VERSION}); upgrade npc-memory to open it"
            )
        return meta

    def _put_meta(self, conn: psycopg.Connection[Any], meta: StoreMeta) -> None:
        conn.execute(
            "INSERT INTO npc_memory_meta (world, server, data) VALUES (%s, %s, %s::jsonb) "
            "ON CONFLICT (world, server) DO UPDATE SET data = excluded.data",
            (self.world, self.server, _encoder.encode(meta).decode("utf-8")),
        )

    def _decode(self, key: str, data: str) -> Document:
        try:
            document = document_decoder.decode(data)
            if document.v == SCHEMA_VERSION:
                return document
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as exc:
            raise StoreCorruptError(self._where(key), f"invalid JSON: {exc}") from exc
        raw = msgspec.json.decode(data)
        version = int(raw.get("v", 1)) if isinstance(raw, dict) else 0
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self._where(key)} has schema version {version}, newer than this npc-memory "
                f"understands ({SCHEMA_VERSION})"
            )
        try:
            return cast(
                Document, msgspec.convert(migrate_document(raw, version, self.migration), type=Document)
            )
        except (msgspec.ValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreCorruptError(self._where(key), f"unexpected content: {exc}") from exc

    def _decode_with(self, decoder: msgspec.json.Decoder[_T], what: str, data: str) -> _T:
        try:
            return decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StoreCorruptError(f"{self!r} {what}", f"unexpected content: {exc}") from exc

    def _where(self, key: str) -> str:
        return f"{redacted(self.url)} world {self.world!r} document {key!r}"


def _loose(pattern: re.Pattern[str]) -> str:
    """``pattern`` (from :func:`~npc_memory.rules.privacy.mention_pattern`) without its
    word boundaries, as a PostgreSQL regular expression: it finds every row the exact
    pattern finds (and a few more, which the exact pattern then sorts out)."""
    loose = pattern.pattern.replace(r"(?<!\w)", "").replace(r"(?!\w)", "")
    escaped = '"' in loose or "\\\\" in loose  # a quote or a backslash: JSON text escapes them
    return "" if escaped else loose  # ("": every row, sorted out by the exact pattern)


def _redacted(pattern: re.Pattern[str], value: Any) -> Any:
    """``value`` (decoded JSON) with each mention ``pattern`` finds in a string replaced."""
    if isinstance(value, str):
        return privacy_rules.redact(pattern, value)
    if isinstance(value, list):
        return [_redacted(pattern, item) for item in value]
    if isinstance(value, dict):
        return {_redacted(pattern, k): _redacted(pattern, v) for k, v in value.items()}
    return value


def redacted(url: str) -> str:
    """``url`` without its password."""
    with contextlib.suppress(Exception):
        info = psycopg.conninfo.conninfo_to_dict(url)
        if info.get("password"):
            return url.replace(str(info["password"]), "***")
    return url


__all__ = ["PostgresStore", "redacted"]
