"""Operator tools on PostgreSQL: ``npc-memory migrate`` between TinyDB and PostgreSQL
in both directions, export and import of a PostgreSQL world."""

from __future__ import annotations

from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.errors import StoreError
from npc_memory.rules import privacy as privacy_rules
from npc_memory.store.tools import export_store, import_store
from npc_memory.store.transfer import migrate_store
from tests import test_store_tools
from tests.postgres import fresh_database, new_world, pg_url

world_db = test_store_tools.world_db  # a fixture: a saved TinyDB world "w"


@pytest.fixture
def url() -> str:
    return pg_url()


def test_migrate_tinydb_to_postgres_and_back_keeps_everything(
    world_db: Path,
    url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = new_world()
    assert main(["migrate", "--from", str(world_db), "--to", url, "--world", world]) == 0
    assert f"migrated world '{world}': 4 documents and" in capsys.readouterr().out
    back = tmp_path / "back.db"
    assert main(["migrate", "--from", url, "--world", world, "--to", str(back)]) == 0
    assert export_store(back) == export_store(world_db)  # documents and metadata, byte for byte
    actions = [entry.action for entry in npc_memory.store.TinyDBStore(back).audit()]
    assert actions[-2:] == ["migrate", "migrate"]
    plugin = npc_memory.install(world=world, store=url)  # and the game runs on the copy
    try:
        plugin.add_npc(key="hilda")
        plugin.add_player(key="alice")
        assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice bought a sword"]
        assert plugin.clock.now == 3600.0
    finally:
        npc_memory.uninstall(world)


def test_migrate_takes_the_world_name_from_the_source(world_db: Path, url: str) -> None:
    with fresh_database(url) as database:
        report = migrate_store(world_db, database)
        assert (report.world, report.documents) == ("w", 4)
        with pytest.raises(
            StoreError, match=r"already holds world 'w' \(4 documents\); migrate copies into an empty"
        ):
            migrate_store(world_db, database)


def test_migrate_refuses_a_target_holding_the_world(
    world_db: Path,
    url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = new_world()
    migrate_store(world_db, url, world=world)
    assert main(["migrate", "--from", str(world_db), "--to", url, "--world", world]) == 1
    assert "npc-memory migrate:" in capsys.readouterr().err


def test_export_and_import_a_postgres_world(world_db: Path, url: str) -> None:
    world = new_world()
    data = export_store(world_db)
    assert import_store(url, data, world=world, source="x.json") == 4
    assert export_store(url, world=world) == data
    with pytest.raises(StoreError, match="already holds 4 documents"):
        import_store(url, data, world=world)


def test_migrate_keeps_the_audit_salt_both_ways(world_db: Path, url: str, tmp_path: Path) -> None:
    source = npc_memory.store.TinyDBStore(world_db)
    salt = source.audit_salt()
    source.close()
    world = new_world()
    migrate_store(world_db, url, world=world)
    plugin = npc_memory.install(world=world, store=url)  # a pseudonym made after the move ...
    try:
        pseudonym = plugin._privacy.pseudonym("alice")
    finally:
        npc_memory.uninstall(world)
    assert pseudonym == privacy_rules.pseudonym(salt, "alice")  # ... is the one the source made
    back = tmp_path / "back.db"
    migrate_store(url, back, world=world)
    copy = npc_memory.store.TinyDBStore(back)
    try:
        assert copy.audit_salt() == salt
    finally:
        copy.close()
