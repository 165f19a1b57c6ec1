"""Every memory records who did it (``actor``) and how the NPC knows (``source``): the
record, its validation, old stores (documents and a TinyDB journal written by the release
before), and the privacy operations that carry the fields."""

from __future__ import annotations

import shutil
from pathlib import Path

import esper
import pytest

import npc_memory
from npc_memory.components import FACT_SOURCE_OF, MEMORY_SOURCES, SELF, EpisodicMemory
from npc_memory.errors import InvalidArgumentError, UnknownEntityError
from npc_memory.store import SCHEMA_VERSION, TinyDBStore
from npc_memory.store.documents import NpcDocument
from npc_memory.store.tools import import_store, parse_export

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA_2_STORE = FIXTURES / "store_schema2"  # written by tests/fixtures/make_store_schema2.py
SCHEMA_2_EXPORT = FIXTURES / "export_schema2.json"  # that store, exported by the same release


def village(world: str, store: Path | None = None) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world=world, pack="village", store=store, seed=3, deterministic=True)
    esper.switch_world(world)
    return plugin


@pytest.fixture
def plugin() -> npc_memory.MemoryPlugin:
    plugin = village("actor-source")
    plugin.add_npc(key="hilda", name="Hilda", room="forge")
    plugin.add_npc(key="tom", name="Tom", room="forge")
    plugin.add_player(key="alice", name="Alice", room="forge", consent=True)
    plugin.add_player(key="bram", name="Bram", room="forge", consent=True)
    yield plugin
    npc_memory.uninstall("actor-source")


def test_remember_defaults_to_the_players_own_deed_as_the_game_authored_it(plugin: npc_memory.MemoryPlugin) -> None:
    about_alice = plugin.remember("hilda", "alice", "Alice mended my bellows", tags=["helpful"])
    about_world = plugin.remember("hilda", None, "The river flooded")
    assert (about_alice.actor, about_alice.source) == ("alice", "authored")
    assert (about_world.actor, about_world.source) == (None, "authored")


def test_remember_takes_any_actor_the_plugin_knows_and_any_source(plugin: npc_memory.MemoryPlugin) -> None:
    own = plugin.remember("hilda", "alice", "I stole bread as a lad", actor="self", source="said")
    third = plugin.remember("hilda", "alice", "Bram stole my hammer", actor=plugin.entity("bram"), source="heard")
    npc = plugin.remember("hilda", None, "Tom sold me iron", actor="tom", source="witnessed")
    unknown = plugin.remember("hilda", "alice", "Someone broke the window", actor=None, source="witnessed")
    assert [(m.actor, m.source) for m in (own, third, npc, unknown)] == [
        (SELF, "said"), ("bram", "heard"), ("tom", "witnessed"), (None, "witnessed")
    ]


def test_unknown_actor_or_source_is_a_clear_error_and_nothing_is_recorded(plugin: npc_memory.MemoryPlugin) -> None:
    with pytest.raises(UnknownEntityError, match=r"actor must be 'self', None, or a known NPC or player.*'bob'"):
        plugin.remember("hilda", "alice", "Bob stole my hammer", actor="bob")
    with pytest.raises(InvalidArgumentError, match=r"source must be one of witnessed, said, claimed, heard, "
                                                   r"authored, got 'rumour'"):
        plugin.remember("hilda", "alice", "Alice stole my hammer", source="rumour")  # type: ignore[arg-type]
    assert plugin.memories("hilda", "alice") == []


def test_self_is_no_entitys_key(plugin: npc_memory.MemoryPlugin) -> None:
    with pytest.raises(InvalidArgumentError, match="key 'self' is reserved"):
        plugin.add_npc(key="self")


def test_every_memory_source_reads_as_a_fact_source() -> None:
    assert set(FACT_SOURCE_OF) == set(MEMORY_SOURCES)
    assert FACT_SOURCE_OF["witnessed"] == "observation" and FACT_SOURCE_OF["heard"] == "gossip"


def test_the_fields_survive_a_save_and_a_reload(tmp_path: Path) -> None:
    store = tmp_path / "w.db"
    plugin = village("actor-save", store)
    plugin.add_npc(key="hilda", name="Hilda")
    plugin.add_player(key="alice", name="Alice", consent=True)
    plugin.remember("hilda", "alice", "I stole bread as a lad", actor="self", source="said")
    plugin.remember("hilda", "alice", "Alice says she slew a wolf", source="claimed")
    npc_memory.uninstall("actor-save")
    plugin = village("actor-save", store)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    held = {(m.content, m.actor, m.source) for m in plugin.memories("hilda", "alice")}
    npc_memory.uninstall("actor-save")
    assert held == {("I stole bread as a lad", SELF, "said"), ("Alice says she slew a wolf", "alice", "claimed")}


def schema_2_memories(path: Path) -> dict[tuple[str, str | None], list[tuple[str, str | None, str]]]:
    """Every NPC's memories in the store at ``path`` after loading it: by (NPC, player),
    (content, actor, source)."""
    store = TinyDBStore(path)
    contents = store.load()
    store.close()
    held: dict[tuple[str, str | None], list[tuple[str, str | None, str]]] = {}
    for key, document in sorted(contents.documents.items()):
        bank = getattr(document, "bank", None)
        if bank is None:
            continue
        for player, pair in [(None, bank.world), *bank.players.items()]:
            held[key, player] = [(m.content, m.actor, m.source) for m in pair.all()]
    return held


EXPECTED_FROM_SCHEMA_2 = {
    ("hilda", None): [("The river flooded in spring", None, "authored")],
    ("hilda", "alice"): [
        ("Alice mended my bellows", "alice", "authored"),
        ('Alice told me they stole (Alice: "I stole a pie from the baker yesterday.")', "alice", "claimed"),
        ('I told Alice: "When I was a lad I stole bread off the bakers\' carts."', SELF, "said"),
    ],
    ("mira", None): [],
    ("mira", "bram"): [("Bram paid me in full", "bram", "authored")],
    ("tom", None): [],
    ("tom", "bram"): [
        ('Bram told me they helped me (Bram: "I fixed your fence this morning.")', "bram", "claimed"),
        ("Bram paid his debt", "bram", "authored"),
    ],
}


def test_a_store_written_by_the_release_before_loads_with_its_journal_migrated(tmp_path: Path) -> None:
    # The fixture: document files of schema 2, and a schema-2 journal segment holding a
    # whole new document (mira) and changes to two others (hilda, tom), never folded.
    copy = tmp_path / "old.db"
    shutil.copytree(SCHEMA_2_STORE, copy)
    assert any((copy / "journal").iterdir())
    assert schema_2_memories(copy) == EXPECTED_FROM_SCHEMA_2  # the journal replayed on load
    store = TinyDBStore(copy)
    store.load()
    store.checkpoint()  # the checkpoint folds the old journal into documents of the current schema
    store.close()
    assert not list((copy / "journal").glob("*.log"))
    for key in ("hilda", "tom", "mira"):  # the documents the journal changed are rewritten
        [path] = (copy / "docs").glob(f"{key}-*.json")
        assert f'"v":{SCHEMA_VERSION}'.encode() in path.read_bytes(), path.name
    assert schema_2_memories(copy) == EXPECTED_FROM_SCHEMA_2


def test_a_schema_2_store_opens_in_the_plugin_and_counts_as_before(tmp_path: Path) -> None:
    copy = tmp_path / "old.db"
    shutil.copytree(SCHEMA_2_STORE, copy)
    plugin = village("actor-old", copy)
    for key in ("hilda", "tom", "mira"):
        plugin.add_npc(key=key)
    for key in ("alice", "bram"):
        plugin.add_player(key=key)
    try:
        assert plugin.query.count_memories_by_tag("tom", "bram", "trade") == 1
        assert plugin.query.count_memories_by_tag("hilda", "alice", "helpful") == 1
    finally:
        npc_memory.uninstall("actor-old")


def test_an_export_of_the_release_before_imports_with_the_fields(tmp_path: Path) -> None:
    data = SCHEMA_2_EXPORT.read_bytes()  # the same store, exported by the release before
    assert b'"schema_version": 2' in data and b'"actor"' not in data
    export = parse_export(data)
    hilda = next(d for d in export.documents if d.key == "hilda")
    assert isinstance(hilda, NpcDocument)
    assert [(m.content, m.actor, m.source) for m in hilda.bank.players["alice"].all()] == (
        EXPECTED_FROM_SCHEMA_2["hilda", "alice"]
    )
    assert import_store(tmp_path / "new.db", data) == len(export.documents)
    assert schema_2_memories(tmp_path / "new.db") == EXPECTED_FROM_SCHEMA_2


def test_forgetting_a_player_takes_their_deeds_wherever_they_are_filed(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", "alice", "Somebody broke my window", actor="bram", source="heard")
    plugin.remember("hilda", None, "A thief took the mayor's seal", actor="bram", source="heard")
    plugin.remember("hilda", "alice", "Alice mended my bellows")
    plugin.privacy.forget_player("bram")
    held = [m.content for m in (*plugin.memories("hilda", "alice"), *plugin.memories("hilda"))]
    assert held == ["Alice mended my bellows"]


def test_withdrawn_consent_leaves_fragments_by_no_one(tmp_path: Path) -> None:
    plugin = village("actor-consent")
    plugin.add_npc(key="hilda", name="Hilda")
    plugin.add_player(key="alice", name="Alice", consent=True)
    try:
        plugin.remember("hilda", "alice", "A customer mended my bellows", scope="player")
        plugin.remember("hilda", "alice", "I told a customer about my youth", actor="self", scope="player")
        plugin.privacy.set_consent("alice", False)
        fragments = [m for m in plugin.memories("hilda") if m.scope == "anon"]
        assert sorted((m.content, m.actor) for m in fragments) == [
            ("A customer mended my bellows", None), ("I told a customer about my youth", SELF)
        ]
    finally:
        npc_memory.uninstall("actor-consent")


def test_a_clones_self_is_the_npc_it_was_copied_from(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", None, "I forged the mayor's chain", actor="self", scope="social")
    plugin.remember("hilda", None, "Tom sells iron", actor="tom", scope="social")
    plugin.privacy.clone("hilda", "tom", categories=["social"], dry_run=False)
    copies = {m.content: m for m in plugin.memories("tom")}
    assert copies["I forged the mayor's chain"].actor == "hilda"
    assert copies["Tom sells iron"].actor == "tom"
    assert all(m.cloned_from == "hilda" for m in copies.values())


def test_the_end_of_a_game_leaves_no_anonymous_participant_as_an_actor_or_teller() -> None:
    plugin = village("actor-end")
    plugin.add_npc(key="hilda", name="Hilda")
    plugin.add_player(key="alice", name="Alice", consent=True)
    plugin.add_player(key="anon1", name="Stranger", anonymous=True)
    try:
        plugin.remember("hilda", "alice", "Somebody cheered Alice on", actor="anon1", source="witnessed")
        plugin.remember("hilda", "alice", "Alice cheats at dice", source="heard", teller="anon1")
        plugin.privacy.end_game()
        held = plugin.memories("hilda", "alice")
        assert sorted((m.content, m.actor, m.teller) for m in held) == [
            ("Alice cheats at dice", "alice", None), ("Somebody cheered Alice on", None, None)
        ]
        assert all(isinstance(m, EpisodicMemory) for m in held)
    finally:
        npc_memory.uninstall("actor-end")


def test_forgetting_a_player_takes_what_they_told_too(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", None, "The mill burned down", source="heard", teller="bram")
    plugin.remember("hilda", None, "The well ran dry", source="heard", teller="tom")
    plugin.privacy.forget_player("bram")
    assert [m.content for m in plugin.memories("hilda")] == ["The well ran dry"]

