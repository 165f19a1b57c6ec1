"""The TinyDB backend: real TinyDB files (written by checkpoints), atomic writes with
generations, locking, damage reporting, schema versions and migration. The journal
itself is tested in test_store_journal.py."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import msgspec
import pytest
from tinydb import TinyDB

import npc_memory
from npc_memory.components import Relationship, Relationships
from npc_memory.errors import StoreCorruptError, StoreError, StoreLockedError, StoreVersionError
from npc_memory.events import Event, Hostile
from npc_memory.store import (
    SCHEMA_VERSION,
    MsgspecStorage,
    NpcDocument,
    StoreMeta,
    TinyDBStore,
    encode_document,
)
from npc_memory.store.tinydb_store import file_name

from .test_store_contract import npc, player


def doc_path(store: TinyDBStore, key: str) -> Path:
    return store.path / "docs" / file_name(key)


def test_every_file_is_a_tinydb_database(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda")), encode_document(player("alice"))], StoreMeta(world="v"))
    store.checkpoint()
    store.close()
    with TinyDB(doc_path(store, "hilda")) as db:
        [record] = db.table("npcs").all()
        assert record["key"] == "hilda" and record["bank"]["players"]["alice"]["episodic"][0]["content"] == "hilda memory 0"
    with TinyDB(doc_path(store, "alice")) as db:
        assert db.table("players").all()[0]["profile"] == {"consent": True, "anonymous": False}
    with TinyDB(store.path / "meta.json") as db:
        assert db.table("meta").all()[0]["world"] == "v"


def test_msgspec_storage_works_under_tinydb_and_keeps_the_previous_generation(tmp_path: Path) -> None:
    path = tmp_path / "npcs.json"
    with TinyDB(path, storage=MsgspecStorage) as db:
        db.insert({"key": "hilda", "trust": 0.5})
        db.update({"trust": 0.9})
        assert db.all() == [{"key": "hilda", "trust": 0.9}]
    assert json.loads(path.read_text())["_default"]["1"]["trust"] == 0.9
    assert json.loads((tmp_path / "npcs.json.prev").read_text())["_default"]["1"]["trust"] == 0.5
    assert not list(tmp_path.glob("*.tmp"))
    path.write_text('{"_default": {"1": ')
    with pytest.raises(StoreCorruptError, match=r"npcs\.json is damaged: invalid JSON"):
        TinyDB(path, storage=MsgspecStorage).all()


def test_writes_keep_the_previous_generation(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda", trust=0.1))])
    store.checkpoint()
    store.write([encode_document(npc("hilda", trust=0.9))])
    store.checkpoint()
    prev = doc_path(store, "hilda").with_name(doc_path(store, "hilda").name + ".prev")
    assert msgspec.json.decode(prev.read_bytes())["npcs"]["1"]["relationships"]["by_player"]["alice"]["trust"] == 0.1
    store.close()


def test_one_owner_at_a_time(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    with pytest.raises(StoreLockedError, match=r"in use \(locked by process \d+\)"):
        TinyDBStore(tmp_path / "v.db")
    with pytest.raises(StoreLockedError):
        npc_memory.install(world="second", store=tmp_path / "v.db")
    assert "second" not in npc_memory.installation._INSTALLED
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        assert "in use" in pool.apply(_try_open, (str(tmp_path / "v.db"),))
    store.close()
    TinyDBStore(tmp_path / "v.db").close()


def _try_open(path: str) -> str:
    try:
        TinyDBStore(path).close()
    except StoreLockedError as exc:
        return str(exc)
    return "opened"


def test_refuses_directories_that_are_not_stores(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"meow")
    with pytest.raises(StoreError, match="not an npc-memory store"):
        TinyDBStore(tmp_path / "photos")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        TinyDBStore(tmp_path / "file")
    with pytest.raises(StoreError, match="no store at"):
        TinyDBStore(tmp_path / "missing", create=False)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda b: b[: len(b) // 2], "invalid or truncated JSON"),
        (lambda b: b"", "invalid or truncated JSON"),
        (lambda b: b.replace(b'"trust":0.5', b'"trust":"high"'), r"unexpected content: Expected `float`, got `str` - at `\$\.npcs\[\.\.\.\]\.relationships"),
        (lambda b: b.replace(b'"npcs"', b'"elves"'), "expected one document, found 0"),
    ],
)
def test_damage_names_the_file_and_the_problem(tmp_path: Path, damage: object, problem: str) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda")), encode_document(npc("brandt"))])
    store.checkpoint()
    path = doc_path(store, "hilda")
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(StoreCorruptError, match=problem) as info:
        store.load()
    assert info.value.path == str(path) and "npc-memory repair" in str(info.value)
    store.close()
    with pytest.raises(StoreCorruptError):
        npc_memory.install(world="v", store=tmp_path / "v.db")
    assert "v" not in npc_memory.installation._INSTALLED
    TinyDBStore(tmp_path / "v.db").close()  # the failed install released the lock


def test_a_document_in_the_wrong_file_is_damage(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda")), encode_document(npc("brandt"))])
    store.checkpoint()
    doc_path(store, "brandt").write_bytes(doc_path(store, "hilda").read_bytes())
    with pytest.raises(StoreCorruptError, match="holds the document of key 'hilda'"):
        store.load()
    store.close()


def test_leftover_temporary_files_are_cleaned(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda"))])
    store.close()
    (store.path / "docs" / "hilda-x.json.tmp").write_bytes(b"{half")
    reopened = TinyDBStore(tmp_path / "v.db")
    assert not list((store.path / "docs").glob("*.tmp")) and list(reopened.load().documents) == ["hilda"]
    reopened.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write_meta(StoreMeta(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(StoreVersionError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
        store.load()
    store.write_meta(StoreMeta())
    data = encode_document(npc("hilda")).data.replace(f'"v":{SCHEMA_VERSION}'.encode(), b'"v":9')
    doc_path(store, "hilda").write_bytes(b'{"npcs":{"1":' + data + b"}}")
    with pytest.raises(StoreVersionError, match="schema version 9"):
        store.load()
    store.close()


def v1_document(trust: float) -> bytes:
    """An NPC document as schema 1 wrote it: no version field, no threshold state."""
    raw = msgspec.json.decode(encode_document(npc("hilda", trust=trust)).data)
    del raw["v"], raw["kind"]
    for rel in raw["relationships"]["by_player"].values():
        del rel["active_thresholds"]
    return msgspec.json.encode({"npcs": {"1": raw}})


def test_schema_1_documents_are_migrated_with_threshold_state(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write_meta(StoreMeta(schema_version=1))
    doc_path(store, "hilda").write_bytes(v1_document(trust=0.1))
    migrated = store.load().documents["hilda"]
    assert isinstance(migrated, NpcDocument) and migrated.v == SCHEMA_VERSION
    assert migrated.relationships.by_player["alice"].active_thresholds == ("hostile",)
    store.close()
    # Installed on the migrated store, the already-crossed threshold does not fire again.
    plugin = npc_memory.install(world="v", store=tmp_path / "v.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    seen: list[Event] = []
    plugin.on(Hostile, seen.append)
    plugin.adjust_relationship("hilda", "alice", trust=-0.05)
    assert seen == []
    npc_memory.uninstall("v")
    reopened = TinyDBStore(tmp_path / "v.db")
    reopened.checkpoint()  # what the writer does in its idle time, or 'npc-memory repair'
    reopened.close()
    assert f'"v":{SCHEMA_VERSION}'.encode() in doc_path(store, "hilda").read_bytes()  # rewritten in the current schema


def test_relationship_default_thresholds_match_migration(tmp_path: Path) -> None:
    rel = Relationship(trust=0.95, friendliness=0.05)
    store = TinyDBStore(tmp_path / "v.db")
    raw = msgspec.json.decode(encode_document(NpcDocument(v=SCHEMA_VERSION, key="k", name="K", relationships=Relationships(by_player={"p": rel}))).data)
    del raw["v"]
    del raw["relationships"]["by_player"]["p"]["active_thresholds"]
    doc_path(store, "k").write_bytes(msgspec.json.encode({"npcs": {"1": raw}}))
    loaded = store.load().documents["k"]
    assert isinstance(loaded, NpcDocument)
    assert loaded.relationships.by_player["p"].active_thresholds == ("trusted_ally", "despised")
    store.close()
