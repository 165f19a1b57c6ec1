"""Operator tools over a store at rest: export, import, repair, inspect (and their CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.errors import StoreError, StoreLockedError, StoreVersionError
from npc_memory.store import SCHEMA_VERSION, TinyDBStore
from npc_memory.store.tinydb_store import file_name
from npc_memory.store.tools import export_store, import_store, inspect_store, repair_store


@pytest.fixture
def world_db(tmp_path: Path) -> Path:
    """A saved world: two NPCs with memories and relationships, two players."""
    db = tmp_path / "world.db"
    plugin = npc_memory.install(world="w", store=db, seed=4)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_npc(key="brandt", name="Brandt", archetype="guard_captain", room="barracks")
    plugin.add_player(key="alice", faction="adventurers", consent=True)
    plugin.add_player(key="bram", faction="thieves")
    plugin.remember("hilda", "alice", "Alice bought a sword", tags=["trade"], affect_relationship=True)
    plugin.remember("brandt", "bram", "Bram stole from the market", tags=["theft"], affect_relationship=True)
    plugin.remember("hilda", None, "The river flooded", importance=0.8)
    plugin.clock.advance(3600.0)
    npc_memory.uninstall("w")
    return db


def test_export_is_stable_documented_json(world_db: Path) -> None:
    data = export_store(world_db)
    assert export_store(world_db) == data
    export = json.loads(data)
    assert (export["format"], export["schema_version"]) == ("npc-memory-export", SCHEMA_VERSION)
    assert export["meta"]["clock"] == 3600.0 and export["meta"]["world"] == "w"
    assert [(d["kind"], d["key"]) for d in export["documents"]] == [
        ("player", "alice"), ("player", "bram"), ("npc", "brandt"), ("npc", "hilda")]
    hilda = export["documents"][3]
    assert hilda["key"] == "hilda"
    assert hilda["bank"]["world"]["episodic"][0]["content"] == "The river flooded"
    assert hilda["relationships"]["by_player"]["alice"]["stage"] == "stranger"


def test_export_import_round_trip(world_db: Path, tmp_path: Path) -> None:
    data = export_store(world_db)
    assert import_store(tmp_path / "copy.db", data, source="x.json") == 4
    assert export_store(tmp_path / "copy.db") == data
    plugin = npc_memory.install(world="copy", store=tmp_path / "copy.db")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice bought a sword"]
    assert plugin.clock.now == 3600.0
    npc_memory.uninstall("copy")
    [entry] = TinyDBStore(tmp_path / "copy.db").audit()
    assert (entry.action, entry.details["written"], entry.details["mode"]) == ("import", 4, "new")


def test_import_modes(world_db: Path, tmp_path: Path) -> None:
    data = export_store(world_db)
    only_hilda = json.loads(data)
    only_hilda["documents"] = [d for d in only_hilda["documents"] if d["key"] == "hilda"]
    only_hilda["documents"][0]["name"] = "Hilda the Elder"
    partial = json.dumps(only_hilda).encode()
    target = tmp_path / "t.db"
    import_store(target, data)
    with pytest.raises(StoreError, match="already holds 4 documents; use --merge or --replace"):
        import_store(target, partial)
    import_store(target, partial, mode="merge")
    docs = {d["key"]: d for d in json.loads(export_store(target))["documents"]}
    assert len(docs) == 4 and docs["hilda"]["name"] == "Hilda the Elder"
    import_store(target, partial, mode="replace")
    assert [d["key"] for d in json.loads(export_store(target))["documents"]] == ["hilda"]


@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (lambda e: e.update(format="something-else"), StoreError, "not an npc-memory export"),
        (lambda e: e.update(schema_version=99), StoreVersionError, "schema version 99 is newer"),
        (lambda e: e.update(schema_version="2"), StoreError, "schema_version must be a positive integer"),
        (lambda e: e["documents"][2]["relationships"]["by_player"]["bram"].update(trust="low"), StoreError,
         r"Expected `float`, got `str` - at `\$\.documents\[2\]\.relationships\.by_player\[\.\.\.\]\.trust`"),
        (lambda e: e["documents"].append(e["documents"][0]), StoreError, "duplicate document keys: alice"),
    ],
)
def test_bad_exports_are_refused_whole(world_db: Path, tmp_path: Path, mutate: object, error: type[Exception], message: str) -> None:
    export = json.loads(export_store(world_db))
    mutate(export)  # type: ignore[operator]
    with pytest.raises(error, match=message):
        import_store(tmp_path / "t.db", json.dumps(export).encode(), source="bad.json")
    assert not (tmp_path / "t.db" / "docs").exists() or not list((tmp_path / "t.db" / "docs").glob("*.json"))


def test_import_migrates_an_older_export(world_db: Path, tmp_path: Path) -> None:
    export = json.loads(export_store(world_db))
    export["schema_version"] = 1
    for doc in export["documents"]:
        del doc["v"]
        for rel in doc.get("relationships", {}).get("by_player", {}).values():
            del rel["active_thresholds"]
    import_store(tmp_path / "t.db", json.dumps(export).encode())
    brandt = next(d for d in json.loads(export_store(tmp_path / "t.db"))["documents"] if d["key"] == "brandt")
    assert brandt["v"] == SCHEMA_VERSION
    assert brandt["relationships"]["by_player"]["bram"]["active_thresholds"] == ["hostile"]  # trust 0.2 - theft


def test_repair_restores_the_previous_generation(world_db: Path) -> None:
    plugin = npc_memory.install(world="w", store=world_db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice returned a borrowed hammer")
    npc_memory.uninstall("w")  # hilda's file now has a previous generation
    path = world_db / "docs" / file_name("hilda")
    damaged = path.read_bytes()[:-40]
    path.write_bytes(damaged)
    with pytest.raises(npc_memory.errors.StoreCorruptError, match=str(path)):
        npc_memory.install(world="w", store=world_db)
    report = repair_store(world_db)
    assert report.restored == [str(path)] and report.unrecoverable == [] and report.sound == 4
    assert path.with_name(path.name + ".broken").read_bytes() == damaged
    plugin = npc_memory.install(world="w", store=world_db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice bought a sword"]  # the older generation
    npc_memory.uninstall("w")
    assert [e.action for e in TinyDBStore(world_db).audit()] == ["repair"]


def test_repair_reports_what_it_cannot_restore(world_db: Path) -> None:
    npc_memory.install(world="w", store=world_db).save()  # a second generation of meta.json
    npc_memory.uninstall("w")
    path = world_db / "docs" / file_name("bram")  # written once: no previous generation
    path.write_bytes(b"{broken")
    meta = world_db / "meta.json"
    meta.write_bytes(b"")
    report = repair_store(world_db)
    assert report.restored == [str(meta)]
    [(unrecoverable, problem)] = report.unrecoverable
    assert unrecoverable == str(path) and problem.startswith("invalid or truncated JSON")
    assert path.read_bytes() == b"{broken"  # left in place for a human to look at


def test_tools_refuse_a_store_in_use(world_db: Path) -> None:
    npc_memory.install(world="w", store=world_db)
    for tool in (export_store, repair_store, inspect_store):
        with pytest.raises(StoreLockedError):
            tool(world_db)


def test_inspect(world_db: Path) -> None:
    summary = inspect_store(world_db)
    assert f"world 'w', pack 'village', schema {SCHEMA_VERSION}, game time 3600 s" in summary
    assert "2 NPCs, 2 players" in summary and "hilda" in summary
    detail = inspect_store(world_db, npc="hilda")
    assert "alice: stranger, trust 0.6" in detail and "[(world)] m2 episodic: The river flooded" in detail
    with pytest.raises(StoreError, match="holds no NPC 'alice'"):
        inspect_store(world_db, npc="alice")


def test_cli_verbs(world_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--db", str(world_db)]) == 0
    exported = capsys.readouterr().out
    (tmp_path / "e.json").write_text(exported)
    assert main(["import", "--db", str(tmp_path / "n.db"), str(tmp_path / "e.json")]) == 0
    assert "imported 4 documents" in capsys.readouterr().out
    assert main(["import", "--db", str(tmp_path / "n.db"), str(tmp_path / "e.json")]) == 1
    assert "use --merge or --replace" in capsys.readouterr().err
    assert main(["import", "--db", str(tmp_path / "n.db"), "--merge", str(tmp_path / "missing.json")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main(["inspect", "--db", str(tmp_path / "n.db"), "--npc", "brandt"]) == 0
    assert "bram: rival" in capsys.readouterr().out
    assert main(["repair", "--db", str(tmp_path / "n.db")]) == 0
    assert "5 files sound, 0 restored, 0 mended, 0 quarantined, 0 unrecoverable" in capsys.readouterr().out
    assert main(["export", "--db", str(tmp_path / "nowhere.db")]) == 1
    assert "no store at" in capsys.readouterr().err


def test_import_reads_standard_input(world_db: Path, tmp_path: Path) -> None:
    data = export_store(world_db)
    result = subprocess.run(
        [sys.executable, "-m", "npc_memory.cli", "import", "--db", str(tmp_path / "s.db")],
        input=data, capture_output=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert msgspec.json.decode(export_store(tmp_path / "s.db")) == msgspec.json.decode(data)
