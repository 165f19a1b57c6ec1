"""The contract every store backend must pass. Add a backend to BACKENDS to run it."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from npc_memory.components import (
    EpisodicMemory,
    MemoryBank,
    PairMemories,
    PlayerProfile,
    Relationship,
    Relationships,
)
from npc_memory.store import (
    SCHEMA_VERSION,
    AuditEntry,
    NpcDocument,
    PlayerDocument,
    Store,
    StoreMeta,
    TinyDBStore,
    encode_document,
)
from npc_memory.store.documents import pack_rng_state
from tests.postgres import new_world, pg_url


def _postgres(_: Path) -> Store:
    from npc_memory.store.postgres import PostgresStore

    return PostgresStore(pg_url(), world=new_world())


BACKENDS: dict[str, Callable[[Path], Store]] = {
    "tinydb": lambda path: TinyDBStore(path / "store.db"),
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend = BACKENDS[request.param](tmp_path)
    yield backend
    backend.close()


def npc(key: str, memories: int = 2, trust: float = 0.5) -> NpcDocument:
    pair = PairMemories(episodic=[EpisodicMemory(id=f"m{i}", content=f"{key} memory {i}", tags=("trade",)) for i in range(memories)])
    return NpcDocument(
        v=SCHEMA_VERSION, key=key, name=key.title(), faction="smiths", archetype="blacksmith", room="forge",
        bank=MemoryBank(players={"alice": pair}, next_id=memories + 1),
        relationships=Relationships(by_player={"alice": Relationship(trust=trust, version=3)}),
        saved_at=10.0,
    )


def player(key: str) -> PlayerDocument:
    return PlayerDocument(v=SCHEMA_VERSION, key=key, name=key.title(), faction="adventurers", profile=PlayerProfile(consent=True))


def test_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_a_new_store_is_empty(store: Store) -> None:
    contents = store.load()
    assert contents.meta is None and contents.documents == {}
    assert store.read_meta() is None and store.audit() == []


def test_documents_round_trip_exactly(store: Store) -> None:
    docs = [npc("hilda"), npc("brandt", memories=0), player("alice"), npc("ünïcode key/with:odd*chars")]
    store.write([encode_document(d) for d in docs])
    assert store.load().documents == {d.key: d for d in docs}


def test_write_replaces_and_delete_removes(store: Store) -> None:
    store.write([encode_document(npc("hilda", trust=0.1)), encode_document(player("alice"))])
    store.write([encode_document(npc("hilda", trust=0.9, memories=5))])
    store.delete(["alice", "never-existed"])
    contents = store.load()
    assert list(contents.documents) == ["hilda"]
    assert contents.documents["hilda"] == npc("hilda", trust=0.9, memories=5)


def test_meta_round_trips_and_is_written_after_documents(store: Store) -> None:
    rng_state, rng_gauss = pack_rng_state(random.Random(3))
    meta = StoreMeta(world="village", pack="village", seed=3, clock=1234.5, rng_state=rng_state, rng_gauss=rng_gauss, snapshots=7)
    store.write([encode_document(npc("hilda"))], meta)
    assert store.read_meta() == meta and store.load().meta == meta
    store.write_meta(StoreMeta(world="village", clock=99.0))
    assert store.read_meta() == StoreMeta(world="village", clock=99.0)


def test_audit_log_appends_in_order(store: Store) -> None:
    entries = [AuditEntry(action="forget", target=f"npc{i}", game_time=float(i), details={"n": i}) for i in range(3)]
    for entry in entries:
        store.append_audit(entry)
    assert store.audit() == entries


def test_close_is_idempotent(store: Store) -> None:
    store.close()
    store.close()
