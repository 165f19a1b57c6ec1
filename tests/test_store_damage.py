"""Damaged stores: loading names every problem it finds (never loads a world silently
wrong), ``repair`` mends what it can and ``--quarantine`` moves the rest aside so the
world loads. Each case damages a real store on disk the way an operator or a failing
disk would."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.errors import StoreCorruptError, StoreError
from npc_memory.store import TinyDBStore
from npc_memory.store.tinydb_store import file_name
from npc_memory.store.tools import repair_store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A world saved in two sessions (so every file has a previous generation): two
    NPCs with memories, facts and relationships, one player."""
    path = tmp_path / "world.db"
    plugin = npc_memory.install(world="w", store=path, seed=4)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_npc(key="brandt", name="Brandt", archetype="guard_captain", room="barracks")
    plugin.add_player(key="alice", faction="adventurers", consent=True)
    plugin.remember("hilda", "alice", "Alice bought a sword", tags=["trade"], affect_relationship=True)
    plugin.learn_fact("hilda", "The mine is closed", subject="mine", topic="news")
    plugin.clock.advance(3600.0)
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=path, seed=4)
    plugin.add_npc(key="hilda")
    plugin.add_npc(key="brandt")
    plugin.add_player(key="alice", consent=True)
    plugin.remember("hilda", "alice", "Alice sharpened her axe", tags=["trade"])
    plugin.remember("brandt", "alice", "Alice paid the toll", tags=["trade"])
    plugin.clock.advance(3600.0)
    npc_memory.uninstall("w")
    assert doc(path, "hilda").with_name(doc(path, "hilda").name + ".prev").exists()
    return path


def doc(db: Path, key: str) -> Path:
    return db / "docs" / file_name(key)


def edit(path: Path, change: object) -> None:
    """Apply ``change(document_dict)`` to the one document of a document file."""
    tables = msgspec.json.decode(path.read_bytes())
    [document] = tables["npcs"].values()
    change(document)  # type: ignore[operator]
    path.write_bytes(msgspec.json.encode(tables))


def edit_meta(db: Path, change: object) -> None:
    tables = msgspec.json.decode((db / "meta.json").read_bytes())
    [meta] = tables["meta"].values()
    change(meta)  # type: ignore[operator]
    (db / "meta.json").write_bytes(msgspec.json.encode(tables))


def load(db: Path) -> dict[str, object]:
    store = TinyDBStore(db)
    try:
        return dict(store.load().documents)
    finally:
        store.close()


def refused(db: Path) -> StoreCorruptError:
    with pytest.raises(StoreCorruptError) as caught:
        load(db)
    with pytest.raises(StoreCorruptError):  # install refuses it too, and installs nothing
        npc_memory.install(world="again", store=db)
    assert "again" not in npc_memory.installation._INSTALLED
    return caught.value


def test_a_document_deleted_while_its_previous_generation_remains_is_found_and_restored(db: Path) -> None:
    doc(db, "hilda").unlink()
    error = refused(db)
    assert error.path == str(doc(db, "hilda")) and "'hilda' would vanish" in error.problem
    report = repair_store(db)
    assert report.restored == [str(doc(db, "hilda"))]
    assert "hilda" in load(db)


def test_deleted_metadata_is_found_and_restored_from_its_previous_generation(db: Path) -> None:
    (db / "meta.json").unlink()
    error = refused(db)
    assert error.path == str(db / "meta.json") and "clock" in error.problem
    assert repair_store(db).restored == [str(db / "meta.json")]
    plugin = npc_memory.install(world="w", store=db)
    assert plugin.clock.now == 7200.0  # not reset to zero
    npc_memory.uninstall("w")


def test_metadata_lost_with_its_previous_generation_is_rebuilt_from_the_documents(db: Path) -> None:
    (db / "meta.json").unlink()
    (db / "meta.json.prev").unlink()
    refused(db)
    report = repair_store(db)
    assert [path for path, _ in report.mended] == [str(db / "meta.json")]
    plugin = npc_memory.install(world="w", store=db)
    assert plugin.clock.now == 7200.0  # the newest document's save time
    npc_memory.uninstall("w")


def test_a_deleted_docs_folder_is_an_error_not_an_empty_world(db: Path) -> None:
    shutil.rmtree(db / "docs")
    error = refused(db)
    assert error.path == str(db / "docs") and "every NPC and player document is gone" in error.problem
    refused(db)  # opening it did not quietly make an empty docs/
    report = repair_store(db)
    assert report.unrecoverable and not (db / "docs").exists()  # nothing to restore: left as found
    report = repair_store(db, quarantine=True)
    assert report.quarantined and load(db) == {}  # the operator accepted the loss


@pytest.mark.parametrize(
    ("change", "where", "mended"),
    [
        (lambda d: d["relationships"]["by_player"]["alice"].update(trust=5.0), "by_player[...].trust", 1.0),
        (lambda d: d["bank"]["players"]["alice"]["episodic"][0].update(importance=-3), "episodic[0].importance", 0.0),
    ],
    ids=["trust-5", "importance-minus-3"],
)
def test_values_out_of_range_are_refused_and_mended(db: Path, change: object, where: str, mended: float) -> None:
    edit(doc(db, "hilda"), change)
    doc(db, "hilda").with_name(doc(db, "hilda").name + ".prev").unlink()  # no good generation to fall back on
    error = refused(db)
    assert where in error.problem and error.path == str(doc(db, "hilda"))
    report = repair_store(db)
    assert [path for path, _ in report.mended] == [str(doc(db, "hilda"))] and where in report.mended[0][1][0]
    plugin = npc_memory.install(world="w", store=db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    if "trust" in where:
        # The record as written (reads see it drifted since towards the faction baseline).
        assert plugin.npc("hilda").relationships.by_player["alice"].trust == mended
    else:
        [sword] = [m for m in plugin.memories("hilda", "alice") if m.content == "Alice bought a sword"]
        assert sword.importance == mended
    npc_memory.uninstall("w")


def test_a_memory_counter_that_would_reuse_an_id_is_refused_and_mended(db: Path) -> None:
    edit(doc(db, "hilda"), lambda d: d["bank"].update(next_id=1))
    error = refused(db)
    assert "bank.next_id is 1 but memory m" in error.problem
    repair_store(db)
    plugin = npc_memory.install(world="w", store=db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    old = {m.id for m in plugin.memories("hilda", "alice")}
    new = plugin.remember("hilda", "alice", "Alice came back", tags=["trade"])
    assert new.id not in old
    npc_memory.uninstall("w")


def test_every_problem_is_reported_at_once(db: Path) -> None:
    edit(doc(db, "hilda"), lambda d: d["relationships"]["by_player"]["alice"].update(trust=5.0))
    edit(doc(db, "brandt"), lambda d: d["bank"].update(next_id=1))
    error = refused(db)
    assert {path for path, _ in error.found} == {str(doc(db, "hilda")), str(doc(db, "brandt"))}
    assert "damaged in 2 places" in str(error)


def test_a_damaged_document_without_a_previous_generation_can_be_quarantined(db: Path) -> None:
    doc(db, "hilda").write_bytes(b'{"npcs": {"1": {"v": 2, "key": "hil')
    doc(db, "hilda").with_name(doc(db, "hilda").name + ".prev").unlink()
    refused(db)
    report = repair_store(db)
    assert [path for path, _ in report.unrecoverable] == [str(doc(db, "hilda"))]
    refused(db)  # repair without --quarantine changes nothing it cannot mend
    report = repair_store(db, quarantine=True)
    [(moved, problem)] = report.quarantined
    assert Path(moved) == db / "quarantine" / file_name("hilda") and Path(moved).exists()
    assert "invalid or truncated JSON" in problem
    assert set(load(db)) == {"brandt", "alice"}  # the rest of the world loads
    store = TinyDBStore(db)
    [entry] = [e for e in store.audit() if e.action == "quarantine"]
    store.close()
    assert entry.target == str(doc(db, "hilda")) and entry.details["moved_to"] == moved


def test_a_stray_file_in_docs_can_be_quarantined(db: Path) -> None:
    (db / "docs" / "notes.json").write_text('{"hello": "world"}')
    error = refused(db)
    assert error.path == str(db / "docs" / "notes.json")
    assert repair_store(db).unrecoverable
    assert repair_store(db, quarantine=True).quarantined
    assert set(load(db)) == {"hilda", "brandt", "alice"}


@pytest.mark.parametrize("field", ["rng_state", "gossip_rng_state"])
def test_a_damaged_random_state_is_a_store_error_and_is_mended(db: Path, field: str) -> None:
    edit_meta(db, lambda m: m.update({field: "not base64!"}))
    (db / "meta.json.prev").unlink()
    error = refused(db)  # a StoreCorruptError, never binascii.Error
    assert f"{field} is not base64" in error.problem
    report = repair_store(db)
    assert f"random generator state was damaged ({field})" in report.mended[0][1][0]
    plugin = npc_memory.install(world="w", store=db, seed=4)
    assert plugin.clock.now == 7200.0
    npc_memory.uninstall("w")


def test_the_repair_hint_names_the_real_store(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(doc(db, "hilda"), lambda d: d["relationships"]["by_player"]["alice"].update(trust=5.0))
    assert main(["inspect", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"npc-memory repair --db {db}" in err and "<store>" not in err and "Traceback" not in err


def test_repair_on_the_command_line_mends_and_quarantines(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(doc(db, "brandt"), lambda d: d["traits"].update(credulity=-1.0))
    doc(db, "brandt").with_name(doc(db, "brandt").name + ".prev").unlink()
    (db / "docs" / "stray.json").write_text("[]")
    assert main(["repair", "--db", str(db)]) == 1
    captured = capsys.readouterr()
    assert f"mended {doc(db, 'brandt')}" in captured.out
    assert f"npc-memory repair --db {db} --quarantine" in captured.err
    assert main(["repair", "--db", str(db), "--quarantine"]) == 0
    assert "1 quarantined, 0 unrecoverable" in capsys.readouterr().out
    assert set(load(db)) == {"hilda", "brandt", "alice"}


def test_a_journal_record_with_a_value_out_of_range_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    plugin = npc_memory.install(world="w", store=path)
    plugin.add_npc(key="hilda")
    plugin.save()
    store = plugin.storage.store
    assert isinstance(store, TinyDBStore)
    npc_memory.uninstall("w")
    # A whole document with an impossible trust, as a journal record that was never folded.
    from npc_memory.components import Relationship, Relationships
    from npc_memory.store import NpcDocument, encode_document
    from npc_memory.store.records import Put

    bad = NpcDocument(v=2, key="hilda", name="Hilda", relationships=Relationships(by_player={"alice": Relationship(trust=9.0)}))
    reopened = TinyDBStore(path, checkpoint_on_close=False)
    reopened.load()
    reopened.append([Put(lsn=reopened.reserve_lsn(), key="hilda", kind="npc", data=encode_document(bad).data)])
    reopened.close()
    with pytest.raises(StoreError, match="trust"):
        load(path)


def test_a_clock_saved_as_null_is_refused_and_mended_from_the_documents(db: Path) -> None:
    edit_meta(db, lambda m: m.update(clock=None))  # what an infinite clock was once saved as
    (db / "meta.json.prev").unlink()  # the save that wrote it replaced the previous generation
    error = refused(db)
    assert "clock" in error.problem and error.path == str(db / "meta.json")
    report = repair_store(db)
    assert "set to 7200.0" in report.mended[0][1][0]
    plugin = npc_memory.install(world="w", store=db)
    assert plugin.clock.now == 7200.0
    npc_memory.uninstall("w")


def test_the_previous_generation_a_forgotten_npc_left_is_not_restored(db: Path) -> None:
    """A crash between deleting a forgotten NPC's file and its previous generation (as
    an older release could leave it): not damage, and repair never brings the NPC back."""
    plugin = npc_memory.install(world="w", store=db)
    plugin.remove("hilda", forget=True)
    npc_memory.uninstall("w")
    orphan = doc(db, "hilda").with_name(doc(db, "hilda").name + ".prev")
    orphan.write_bytes((db / "docs" / file_name("brandt")).read_bytes().replace(b"brandt", b"hilda").replace(b"Brandt", b"Hilda"))
    assert "hilda" not in load(db)  # loads: nothing vanished that was not forgotten
    report = repair_store(db)
    assert report.removed == [str(orphan)] and not report.restored and not orphan.exists()
    assert "hilda" not in load(db)


def test_memory_ids_used_twice_are_refused_and_renumbered(db: Path) -> None:
    def twice(document: dict) -> None:  # type: ignore[type-arg]
        episodic = document["bank"]["players"]["alice"]["episodic"]
        episodic.append({**episodic[0], "content": "a second memory under the first one's id"})

    edit(doc(db, "hilda"), twice)
    doc(db, "hilda").with_name(doc(db, "hilda").name + ".prev").unlink()
    error = refused(db)
    assert "memory ids used twice: m1" in error.problem
    report = repair_store(db)
    assert "renumbered m1 → m" in report.mended[0][1][0]
    plugin = npc_memory.install(world="w", store=db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    ids = [m.id for m in plugin.memories("hilda", "alice")]
    assert len(ids) == len(set(ids)) == 3
    npc_memory.uninstall("w")
