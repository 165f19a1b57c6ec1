"""The PostgreSQL store against a real server: the plugin on it, optimistic
concurrency, ownership of documents, dropped connections. (The store contract itself
runs in test_store_contract.py; several processes in test_postgres_processes.py.)"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import npc_memory
from npc_memory.errors import StoreConflictError, StoreError, StoreOwnedError, StoreVersionError
from npc_memory.rules import privacy as privacy_rules
from npc_memory.store import (
    AuditEntry,
    NpcDocument,
    PendingForget,
    PrivacyStore,
    SharedStore,
    StoreMeta,
    encode_document,
)
from npc_memory.store.postgres import STORE_SCHEMA, UPGRADES, PostgresStore
from tests.postgres import fresh_database, new_world, pg_url, restart_server, wait_until_free
from tests.test_store_contract import npc, player


@pytest.fixture
def url() -> str:
    return pg_url()


@pytest.fixture
def world() -> str:
    return new_world()


@pytest.fixture
def stores(url: str, world: str) -> Iterator[list[PostgresStore]]:
    """Open stores on one world (two game servers), closed after the test."""
    opened: list[PostgresStore] = []
    yield opened
    for store in opened:
        store.close()


def open_store(stores: list[PostgresStore], url: str, world: str, **options: object) -> PostgresStore:
    store = PostgresStore(url, world=world, **options)  # type: ignore[arg-type]
    stores.append(store)
    return store


def test_is_a_shared_store(stores: list[PostgresStore], url: str, world: str) -> None:
    assert isinstance(open_store(stores, url, world), SharedStore)


def test_plugin_round_trips_a_world_through_postgres(url: str, world: str) -> None:
    plugin = npc_memory.install(world=world, store=url, seed=7)
    try:
        plugin.add_npc(key="hilda", archetype="blacksmith")
        plugin.add_player(key="alice", consent=True)
        plugin.remember("hilda", "alice", "alice paid for the sword in gold")
        plugin.record_interaction("hilda", "alice")
    finally:
        npc_memory.uninstall(world)
    plugin = npc_memory.install(world=world, store=url, seed=7)
    try:
        assert plugin.storage.stored_npcs() == ["hilda"] and plugin.storage.stored_players() == ["alice"]
        plugin.add_npc(key="hilda")
        plugin.add_player(key="alice")
        assert [m.content for m in plugin.memories("hilda", "alice")] == ["alice paid for the sword in gold"]
        assert plugin.relationship("hilda", "alice").interaction_count == 1
    finally:
        npc_memory.uninstall(world)


def test_forgetting_deletes_the_row_and_is_audited(url: str, world: str) -> None:
    plugin = npc_memory.install(world=world, store=url)
    try:
        plugin.add_player(key="alice", consent=True)
        plugin.add_npc(key="hilda")
        plugin.save()
        plugin.remove("alice", forget=True)
        plugin.save()
    finally:
        npc_memory.uninstall(world)
    with psycopg.connect(url) as admin:
        rows = admin.execute("SELECT key FROM npc_memory_documents WHERE world = %s ORDER BY key", (world,)).fetchall()
    assert rows == [("hilda",)]
    store = PostgresStore(url, world=world)
    try:
        entries = store.audit()
        assert [e.action for e in entries] == ["forget"]
        assert "alice" not in entries[0].target  # a forgotten player is named by a salted pseudonym only
    finally:
        store.close()


def test_the_readme_example_runs_as_written(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "persistence-and-postgresql.md").read_text()
    match = re.search(r"## Running on PostgreSQL\n.*?```python\n(.*?)```", page, re.S)
    assert match, "docs/persistence-and-postgresql.md has no PostgreSQL example"
    with fresh_database(url) as database:
        monkeypatch.setenv("NPC_MEMORY_TEST_PG", database)
        exec(compile(match.group(1), "docs/persistence-and-postgresql.md", "exec"), {"os": os, "npc_memory": npc_memory})
        store = PostgresStore(database, world="village")
        try:
            hilda = store.load().documents["hilda"]
            assert isinstance(hilda, NpcDocument)
            assert [m.content for m in hilda.bank.world.episodic] == ["the well ran dry"]
            assert store.owner_of("hilda") is None
        finally:
            store.close()


def test_worlds_and_servers_are_kept_apart(stores: list[PostgresStore], url: str, world: str) -> None:
    village = open_store(stores, url, world, server="north")
    other = open_store(stores, url, new_world())
    village.write([encode_document(npc("hilda"))], StoreMeta(world="village", clock=5.0))
    assert other.load().documents == {} and other.read_meta() is None
    south = open_store(stores, url, world, server="south")
    contents = south.load()
    assert list(contents.documents) == ["hilda"] and contents.meta is None  # metadata is per server
    assert village.read_meta() == StoreMeta(world="village", clock=5.0)


def test_a_write_over_a_newer_version_is_refused_naming_the_document(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    first = open_store(stores, url, world)
    first.write([encode_document(npc("hilda", trust=0.1))])
    first.close()
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    a.load()
    b.load()
    b.write([encode_document(npc("hilda", trust=0.9))])
    b.close()  # b's ownership ends; its change stays
    with pytest.raises(
        StoreConflictError, match=r"'hilda'.*at version 2 but this server read version 1"
    ) as caught:
        a.write(
            [encode_document(npc("hilda", trust=0.5)), encode_document(npc("brandt"))], StoreMeta(world="w")
        )
    assert caught.value.key == "hilda"
    check = open_store(stores, url, world)
    contents = check.load()
    assert contents.documents == {"hilda": npc("hilda", trust=0.9)}  # nothing of a's write applied
    assert contents.meta is None


def test_a_document_created_meanwhile_elsewhere_is_not_overwritten(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    a.load()
    b.load()
    b.write([encode_document(npc("hilda", trust=0.9))])
    b.close()
    with pytest.raises(StoreConflictError, match="another game server created it"):
        a.write([encode_document(npc("hilda", trust=0.1))])


def test_a_claimed_document_is_refused_to_other_servers_until_released(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    a.write([encode_document(npc("hilda", trust=0.2))])
    assert a.claim("hilda", "npc") == npc("hilda", trust=0.2)
    with pytest.raises(
        StoreOwnedError, match=rf"'hilda'.*owned by another game server \(session {a.session}\)"
    ):
        b.claim("hilda", "npc")
    with pytest.raises(StoreOwnedError):
        b.delete(["hilda"])
    a.release_on_write("hilda")
    a.write([encode_document(npc("hilda", trust=0.7))])  # the last write gives it up
    assert a.owner_of("hilda") is None
    assert b.claim("hilda", "npc") == npc("hilda", trust=0.7)  # read fresh, not as b loaded it
    assert b.owner_of("hilda") == b.session
    b.write([encode_document(npc("hilda", trust=0.8))])
    with pytest.raises(StoreOwnedError):
        a.claim("hilda", "npc")


def test_a_claim_does_not_wait_for_a_write_in_progress(stores: list[PostgresStore], url: str, world: str) -> None:
    """``add_npc`` on the game thread claims while the writer thread may be mid-round."""
    store = open_store(stores, url, world)
    store.write([encode_document(npc("hilda")), encode_document(npc("brandt"))])
    with psycopg.connect(url) as blocker:  # holds hilda's row: the next write of her waits
        blocker.execute("SELECT 1 FROM npc_memory_documents WHERE world = %s AND key = 'hilda' FOR UPDATE", (world,))
        writer = threading.Thread(target=store.write, args=([encode_document(npc("hilda", trust=0.9))],))
        writer.start()
        with psycopg.connect(url, autocommit=True) as watcher:
            while not watcher.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]:  # type: ignore[index]
                assert writer.is_alive()
                time.sleep(0.01)
        assert store.claim("brandt", "npc") == npc("brandt")  # answered while the write waits
        assert writer.is_alive()
        blocker.rollback()
    writer.join()
    assert open_store(stores, url, world).load().documents["hilda"] == npc("hilda", trust=0.9)


def test_claiming_a_new_key_reserves_it(stores: list[PostgresStore], url: str, world: str) -> None:
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    assert a.claim("newcomer", "npc") is None
    with pytest.raises(StoreOwnedError):
        b.claim("newcomer", "npc")
    assert a.load().documents == {}  # a reservation is no document
    a.write([encode_document(npc("newcomer"))])
    assert list(b.load().documents) == ["newcomer"]
    a.close()
    with pytest.raises(StoreConflictError, match="stored as a document of kind 'npc', not 'player'"):
        open_store(stores, url, world).claim("newcomer", "player")


def test_closing_gives_up_ownership_and_reservations(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    a.write([encode_document(npc("hilda")), encode_document(player("alice"))])
    a.claim("reserved", "npc")
    a.close()
    assert b.claim("hilda", "npc") == npc("hilda") and b.claim("alice", "player") == player("alice")
    assert b.claim("reserved", "npc") is None


def test_a_dead_connection_owns_nothing(stores: list[PostgresStore], url: str, world: str) -> None:
    a, b = open_store(stores, url, world), open_store(stores, url, world)
    a.write([encode_document(npc("hilda"))])
    with psycopg.connect(url, autocommit=True) as admin:  # the server ends a's session lock
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s "
            "AND objsubid = 2",
            (a.session,),
        )
    wait_until_free(b, ["hilda"])  # the backend exits a moment after it is told to
    assert b.claim("hilda", "npc") == npc("hilda")
    with pytest.raises(StoreOwnedError):  # a reconnects, but b owns hilda now
        a.write([encode_document(npc("hilda", trust=0.0))])


def test_writes_survive_a_server_restart_without_loss_or_duplicates(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    """Rounds go on while the server restarts (every connection dropped, refused while
    it is down): from 10 rounds before the restart began to 10 after it ended."""
    store = open_store(stores, url, world)
    restarted = threading.Event()

    def restart() -> None:
        restart_server()
        restarted.set()

    store.write([encode_document(npc("hilda", memories=0))])
    restarter = threading.Thread(target=restart)
    n, after = 0, None
    while after is None or n < after + 10:
        n += 1
        if n == 10:
            restarter.start()
        store.write([encode_document(npc("hilda", memories=n % 7, trust=n / 1000))], StoreMeta(world="w", snapshots=n))
        store.append_audit(AuditEntry(action="round", target="hilda", details={"n": n}))
        if after is None and restarted.is_set():
            after = n
        assert n < 100_000, "the restart never finished"
    restarter.join()
    check = open_store(stores, url, world)
    contents = check.load()
    assert contents.documents["hilda"] == npc("hilda", memories=n % 7, trust=n / 1000)
    assert contents.lsns["hilda"] == n + 1  # one version per write: none repeated
    assert contents.meta is not None and contents.meta.snapshots == n
    assert [e.details["n"] for e in check.audit()] == list(range(1, n + 1))


def test_an_unreachable_database_is_a_clear_store_error(world: str) -> None:
    pg_url()
    with pytest.raises(StoreError, match="cannot connect to the PostgreSQL store"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", world=world, timeout=1.0)


def test_a_newer_table_schema_is_refused(stores: list[PostgresStore], url: str, world: str) -> None:
    open_store(stores, url, world)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("UPDATE npc_memory_schema SET version = %s", (STORE_SCHEMA + 1,))
        try:
            with pytest.raises(StoreVersionError, match="newer than this npc-memory understands"):
                PostgresStore(url, world=world)
        finally:
            admin.execute("UPDATE npc_memory_schema SET version = %s", (STORE_SCHEMA,))


def test_an_older_table_schema_is_upgraded_on_open(url: str, world: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with fresh_database(url) as database:
        PostgresStore(database, world=world).close()
        monkeypatch.setitem(UPGRADES, 0, ["ALTER TABLE npc_memory_documents ADD COLUMN note text"])
        with psycopg.connect(database, autocommit=True) as admin:
            admin.execute("UPDATE npc_memory_schema SET version = 0")
            store = PostgresStore(database, world=world)
            store.write([encode_document(npc("hilda"))])
            store.close()
            assert admin.execute("SELECT version FROM npc_memory_schema").fetchall() == [(STORE_SCHEMA,)]
            assert admin.execute("SELECT key, note FROM npc_memory_documents").fetchall() == [("hilda", None)]


def test_documents_of_an_older_schema_are_migrated_on_load(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    store = open_store(stores, url, world)
    store.write([encode_document(npc("hilda"))])
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "UPDATE npc_memory_documents SET data = jsonb_set(data - 'v', '{relationships,by_player,alice}', "
            "(data #> '{relationships,by_player,alice}') - 'active_thresholds') WHERE world = %s",
            (world,),
        )
    loaded = open_store(stores, url, world).load().documents["hilda"]
    assert isinstance(loaded, NpcDocument) and loaded == npc("hilda")


def test_a_damaged_document_names_itself(stores: list[PostgresStore], url: str, world: str) -> None:
    store = open_store(stores, url, world)
    store.write([encode_document(npc("hilda"))])
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            'UPDATE npc_memory_documents SET data = \'{"kind": "npc", "v": 2}\' WHERE world = %s', (world,)
        )
    with pytest.raises(StoreError, match=rf"world '{world}' document 'hilda'"):
        open_store(stores, url, world).load()


class CommitDroppingProxy:
    """A TCP proxy to the test server that, when armed, passes one ``COMMIT`` on to the
    server and then cuts that connection without passing the server's answer back: the
    transaction is committed, the client only sees its connection fail."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        self.url = parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()
        self.armed = threading.Event()
        self.dropped = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            cut = threading.Event()
            threading.Thread(target=self._pump, args=(client, server, cut, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, cut, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, cut: threading.Event, outgoing: bool) -> None:
        try:
            while data := source.recv(65536):
                if outgoing and self.armed.is_set() and b"COMMIT" in data:
                    self.armed.clear()
                    self.dropped += 1
                    cut.set()  # from now on nothing comes back to this client: the server's
                    sink.sendall(data)  # answer (after its commit) ends the connection instead
                    continue
                if cut.is_set():
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


def test_a_commit_whose_answer_was_lost_is_not_written_twice(stores: list[PostgresStore], url: str, world: str) -> None:
    proxy = CommitDroppingProxy(url)
    try:
        store = open_store(stores, proxy.url, world)
        store.write([encode_document(npc("hilda", trust=0.1))])
        proxy.armed.set()
        store.write([encode_document(npc("hilda", trust=0.2))], StoreMeta(world="w", snapshots=2))
        assert proxy.dropped == 1  # the commit went through, its answer did not
        store.write([encode_document(npc("hilda", trust=0.3))])  # the store knows the version it wrote
        contents = open_store(stores, url, world).load()
        assert contents.documents["hilda"] == npc("hilda", trust=0.3)
        assert contents.lsns["hilda"] == 3 and contents.meta == StoreMeta(world="w", snapshots=2)
        proxy.armed.set()
        store.append_audit(AuditEntry(action="forget", target="alice"))
        assert proxy.dropped == 2
        assert store.audit() == [AuditEntry(action="forget", target="alice")]  # appended once
    finally:
        proxy.close()


# ---------------------------------------------------------------------- privacy


def test_is_a_privacy_store_whose_pending_record_every_server_of_the_world_sees(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    first, second = open_store(stores, url, world), open_store(stores, url, world)
    assert isinstance(first, PrivacyStore) and first.pending_forgets() == []
    first.set_pending_forgets([PendingForget(key="alice", name="Alice"), PendingForget(key="bob")])
    assert second.pending_forgets() == [PendingForget(key="alice", name="Alice"), PendingForget(key="bob")]
    assert open_store(stores, url, new_world()).pending_forgets() == []  # another world: its own record
    second.set_pending_forgets([])
    assert first.pending_forgets() == []


def test_the_audit_salt_is_kept_per_world_across_reinstalls(url: str, world: str) -> None:
    pseudonyms = []
    for name in (world, world, new_world()):
        plugin = npc_memory.install(world=name, store=url)
        try:
            plugin.add_player(key="alice", name="Alice")
            pseudonyms.append(plugin.privacy.set_consent("alice", True).player)
        finally:
            npc_memory.uninstall(name)
    assert pseudonyms[0] == pseudonyms[1] and pseudonyms[2] != pseudonyms[0]
    assert pseudonyms[0].startswith("p-") and "alice" not in pseudonyms[0]
    store = PostgresStore(url, world=world)
    try:
        assert [e.target for e in store.audit()] == pseudonyms[:2]
        assert store.audit_salt() == store.audit_salt() and len(store.audit_salt()) == 16
    finally:
        store.close()


def test_purge_deletes_the_row_redacts_the_audit_and_reports_what_still_names_the_player(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    store = open_store(stores, url, world)
    store.write([encode_document(npc("hilda")), encode_document(player("alice")), encode_document(player("bob"))])
    store.append_audit(AuditEntry(action="note", target="alice", details={"said": ["Alice-the-brave waved", "no"]}))
    store.append_audit(AuditEntry(action="note", target="malice", details={"alicex": 1}))  # not the word
    other_world = open_store(stores, url, new_world())
    other_world.append_audit(AuditEntry(action="note", target="alice"))
    report = store.purge(privacy_rules.mention_pattern(["alice", "Alice-the-brave"]), remove=["alice"])  # type: ignore[arg-type]
    assert (report.removed, report.scrubbed) == (1, 1)
    assert report.remaining == ["document 'hilda'"]  # its memories are about alice: the caller's to clean
    assert store.keys() == ["bob", "hilda"] and "alice" not in store.versions()
    assert [(e.target, e.details) for e in store.audit()] == [
        ("someone", {"said": ["someone waved", "no"]}),
        ("malice", {"alicex": 1}),
    ]
    assert [e.target for e in other_world.audit()] == ["alice"]  # other worlds are not touched
    store.write([encode_document(player("alice"))])  # the key may be used again, as a new document
    assert open_store(stores, url, world).load().lsns["alice"] == 1


def test_purge_refuses_a_player_another_game_server_has_in_play(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    here, there = open_store(stores, url, world), open_store(stores, url, world)
    here.release_on_write("alice")
    here.write([encode_document(player("alice"))])
    there.claim("alice", "player")
    here.append_audit(AuditEntry(action="note", target="alice"))
    with pytest.raises(StoreOwnedError, match=r"'alice'.*owned by another game server"):
        here.purge(privacy_rules.mention_pattern(["alice"]), remove=["alice"])  # type: ignore[arg-type]
    assert here.keys() == ["alice"] and [e.target for e in here.audit()] == ["alice"]  # nothing applied
    assert here.other_owners() == [there.session] and there.other_owners() == []


def test_a_schema_1_database_gains_the_privacy_table_on_open(url: str, world: str) -> None:
    with fresh_database(url) as database:
        PostgresStore(database, world=world).close()
        with psycopg.connect(database, autocommit=True) as admin:
            admin.execute("DROP TABLE npc_memory_privacy")
            admin.execute("UPDATE npc_memory_schema SET version = 1")
            store = PostgresStore(database, world=world)
            try:
                store.set_pending_forgets([PendingForget(key="alice")])
                assert store.pending_forgets() == [PendingForget(key="alice")] and len(store.audit_salt()) == 16
            finally:
                store.close()
            assert admin.execute("SELECT version FROM npc_memory_schema").fetchall() == [(STORE_SCHEMA,)] == [(2,)]


@pytest.mark.parametrize("rule", ["purge", "compact"])
def test_a_game_ended_while_another_server_runs_ends_there_as_on_one_server(
    url: str, world: str, tmp_path: Path, rule: str
) -> None:
    from npc_memory.content import load_pack, validate_pack

    from .conftest import tick
    from .privacy_world import Backend, about_player, build_game, pending

    data = load_pack("village").model_dump()
    data["privacy"].update(end_game=rule)
    pack = validate_pack(data)
    backend = Backend(tmp_path, url)
    setup = npc_memory.install(world="setup", pack=pack, store=backend.store(), seed=2)
    build_game(setup, npcs=4)
    npc_memory.uninstall("setup")
    alone = backend.copy(tmp_path / "alone")  # the same world, its game ended on one server
    single = npc_memory.install(world="alone", pack=pack, store=alone.store(), seed=2)
    single.add_npc(key="npc0")
    assert single.privacy.end_game().waiting == []
    npc_memory.uninstall("alone")
    expected = about_player(alone)
    ended = [i for items in expected["npcs"].values() for i in items if i[1] in ("session", "anon")]
    assert ended == [] and "anon-1" not in expected["players"]
    summaries = [i for items in expected["npcs"].values() for i in items if i[1] == "social"]
    assert len(summaries) == (16 if rule == "compact" else 0)  # trade, humour, music, weather: one each an NPC

    there = npc_memory.install(world="there", pack=pack, store=backend.store(), seed=2)
    here = npc_memory.install(world="here", pack=pack, store=backend.store(), seed=2)
    try:
        there.add_npc(key="npc1")
        there.add_npc(key="npc2")
        there.add_player(key="tom")  # the other server has a player without consent in play
        here.add_npc(key="npc0")
        session = there._persistence.shared.session  # type: ignore[union-attr]
        report = here.privacy.end_game(actor="operator")
        assert report.waiting == [session] and report.counts["memories"] > 0
        before = about_player(backend)["npcs"]
        assert [k for k, items in before.items() if any(i[1] == "session" for i in items)] == ["npc1", "npc2"]
        there.save()  # it polls the record
        tick("there")  # it takes the end up, then ends the game in its NPCs over its ticks
        while there._privacy._work is not None:
            tick("there")
        there.save()  # its part is acknowledged
        here.save()  # (whichever of the two is to finish has polled since)
        assert about_player(backend) == expected  # every row as one server leaves it
        assert pending(backend) == []
        entries = [e for e in backend.audit() if e.action == "end-game"]
        assert len(entries) == 1 and entries[0].details == {"mode": rule}
    finally:
        npc_memory.uninstall("there")
        npc_memory.uninstall("here")


def test_a_rumour_of_the_game_heard_from_an_npc_not_yet_done_ends_with_the_game(
    url: str, world: str, tmp_path: Path
) -> None:
    """A server ending the game another began does its NPCs a few a tick; one done may
    meanwhile hear a fact of the game from one not done yet. Its copy of the fact and
    the ``heard`` memory it keeps of it both go with the game."""
    from npc_memory.content import load_pack, validate_pack

    from .conftest import tick
    from .privacy_world import Backend, about_player, build_game, pending

    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_tick_ms=0.000001)  # (at most one NPC a tick)
    pack = validate_pack(data)
    backend = Backend(tmp_path, url)
    setup = npc_memory.install(world="setup", store=backend.store(), seed=2)
    build_game(setup, npcs=3)
    npc_memory.uninstall("setup")
    there = npc_memory.install(world="there", pack=pack, store=backend.store(), seed=2)
    here = npc_memory.install(world="here", store=backend.store(), seed=2)
    try:
        there.add_npc(key="npc1")
        there.add_npc(key="npc2")
        here.add_npc(key="npc0")
        here.privacy.end_game(actor="operator")
        there.save()  # it polls the record
        tick("there")  # it takes the end up, then ends it in its NPCs, one a tick
        work = there._privacy._work
        assert work is not None
        for _ in range(100):  # (a tick may find no time of its budget left)
            if work.queue[0] == "npc2":  # npc1 is done
                break
            tick("there")
        assert list(work.queue) == ["npc2", "npc0"] and work.passes == 0  # (then the stored npc0)
        assert there._knowledge.gossip("square", "npc2", "npc1")  # a rumour from the one not done yet
        heard = [m for m in there.memories("npc1", "tom") if m.source == "heard"]
        assert [m.content for m in heard] == ["Tom sells fish on market days"] and heard[0].scope == "session"
        while there._privacy._work is not None:
            tick("there")
        assert there.memories("npc1", "tom") == [] and there.facts("npc1") == []
        there.save()
        here.save()
        view = about_player(backend)
        assert [k for k, items in view["npcs"].items() if any(i[1] == "session" for i in items)] == []
        assert pending(backend) == []
    finally:
        npc_memory.uninstall("there")
        npc_memory.uninstall("here")


@pytest.mark.parametrize("rule", ["anonymise", "purge"])
def test_consent_withdrawn_while_another_server_runs_is_rewritten_there_as_on_one_server(
    url: str, world: str, tmp_path: Path, rule: str
) -> None:
    from npc_memory.content import load_pack, validate_pack

    from .conftest import tick
    from .privacy_world import KEY, about_player, built, pending, unconsented, withdrawn

    data = load_pack("village").model_dump()
    if rule == "purge":
        data["privacy"].update(withdrawn_consent="purge")
    pack = validate_pack(data)
    backend = built(tmp_path, url, npcs=4)
    alone = backend.copy(tmp_path / "alone")  # the same world, withdrawn on one server
    single = npc_memory.install(world="alone", pack=pack, store=alone.store(), seed=2)
    single.add_npc(key="npc0")
    single.privacy.set_consent(KEY, False)
    npc_memory.uninstall("alone")
    expected = about_player(alone)
    assert unconsented(expected) == [] and expected["players"][KEY] is False

    there = npc_memory.install(world="there", pack=pack, store=backend.store(), seed=2)
    here = npc_memory.install(world="here", pack=pack, store=backend.store(), seed=2)
    try:
        there.add_npc(key="npc1")
        there.add_npc(key="npc2")
        there.add_player(key=KEY)  # the other server owns the player too
        here.add_npc(key="npc0")
        session = there._persistence.shared.session  # type: ignore[union-attr]
        report = here.privacy.set_consent(KEY, False, actor="alice-herself")
        assert report.waiting == [session] and report.counts["memories"] > 0
        assert unconsented(about_player(backend)) == ["npc1", "npc2"]  # until the other server polls
        assert there.player(KEY).profile.consent
        there.save()  # it polls the record
        tick("there")  # it takes the withdrawal up, then rewrites its NPCs over its ticks
        while there._privacy._work is not None:
            tick("there")
        assert not there.player(KEY).profile.consent  # it owns the player: their profile changed there
        there.save()  # its part is acknowledged
        here.save()  # (whichever of the two is to finish has polled since)
        view = about_player(backend)
        assert unconsented(view) == [] and view["players"][KEY] is False
        assert withdrawn(view) == withdrawn(expected)  # every row as one server leaves it
        assert pending(backend) == []
        entries = [e for e in backend.audit() if e.action == "consent"]
        assert len(entries) == 1 and entries[0].details == {"consent": False}
    finally:
        npc_memory.uninstall("there")
        npc_memory.uninstall("here")


def test_the_servers_of_a_world_acknowledge_a_forgetting_and_the_first_of_them_finishes_it(
    stores: list[PostgresStore], url: str, world: str
) -> None:
    here, there = open_store(stores, url, world), open_store(stores, url, world)
    for key in ("hilda", "gerda", "ivo"):
        here.release_on_write(key)
    here.write([encode_document(npc("hilda")), encode_document(npc("gerda")), encode_document(npc("ivo", memories=0))])
    there.claim("gerda", "npc")  # the other server owns gerda
    assert here.forget_progress("alice") == ([], None)  # no such forgetting
    here.set_pending_forgets([PendingForget(key="alice", name="Alice")])
    here.acknowledge_forget("alice")
    here.acknowledge_forget("alice")  # (once is enough)
    assert here.pending_forgets() == [PendingForget(key="alice", name="Alice", acks=(here.session,))]
    assert here.forget_progress("alice") == there.forget_progress("alice") == ([there.session], here.session)
    taken = here.take_free(privacy_rules.mention_pattern(["alice"]))  # type: ignore[arg-type]
    assert sorted(d.key for d in taken) == ["hilda", "ivo"]  # not gerda: owned by a live server
    assert {"hilda", "ivo"} <= set(here.versions()) and here.owner_of("hilda") == here.session
    here.write([encode_document(d) for d in taken])  # ... given up with their next write
    assert here.owner_of("hilda") is None and here.owner_of("gerda") == there.session
    there.acknowledge_forget("alice")
    assert there.forget_progress("alice") == ([], here.session)
    here.close()  # the first server goes: the next one that did its part finishes
    assert there.forget_progress("alice") == ([], there.session)


def test_a_forgetting_another_server_began_is_applied_a_budgeted_slice_per_tick(
    url: str, world: str, tmp_path: Path
) -> None:
    from npc_memory.content import load_pack, validate_pack

    from .conftest import tick
    from .privacy_world import KEY, NAME, built, mentions

    backend = built(tmp_path, url, npcs=6)
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_tick_ms=0.000001)  # (at most one NPC a tick)
    there = npc_memory.install(world="there", pack=validate_pack(data), store=backend.store(), seed=2)
    here = npc_memory.install(world="here", store=backend.store(), seed=2)
    try:
        npcs = [f"npc{i}" for i in range(6)]
        for key in npcs:
            there.add_npc(key=key)
        session = there._persistence.shared.session  # type: ignore[union-attr]
        assert here.privacy.forget_player(KEY).waiting == [session]
        there.save()  # it polls the record
        ticks, cleaned = 0, [0]
        while ticks == 0 or there._privacy._work is not None:
            tick("there")
            ticks += 1
            cleaned.append(sum(not mentions(there, key) for key in npcs))
        assert all(b - a <= 1 for a, b in itertools.pairwise(cleaned))  # never more than one a tick
        assert cleaned[-1] == len(npcs) and ticks > 2 * len(npcs)  # every NPC, then a pass over their facts
        there.save()  # its part is acknowledged (and it finishes, or the other server at its next round)
        here.save()
        assert backend.traces(KEY, NAME) == []
    finally:
        npc_memory.uninstall("there")
        npc_memory.uninstall("here")
