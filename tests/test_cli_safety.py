"""The command line never destroys what it does not own: the demo refuses a store in
use and a store it did not write, every store command refuses a store in use (naming
its owner's process id), and messages name real paths."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.store import TinyDBStore

HOLDER = """
import sys, time
from npc_memory.store import TinyDBStore
store = TinyDBStore(sys.argv[1])
print("ready", flush=True)
time.sleep(120)
"""


def files(db: Path) -> dict[str, bytes]:
    return {str(p.relative_to(db)): p.read_bytes() for p in sorted(db.rglob("*")) if p.is_file() and p.name != "LOCK"}


@pytest.fixture
def game_db(tmp_path: Path) -> Path:
    """A store a game (esper world 'mygame') wrote."""
    db = tmp_path / "game.db"
    plugin = npc_memory.install(world="mygame", store=db)
    plugin.add_npc(key="hilda")
    plugin.remember("hilda", None, "The river flooded")
    npc_memory.uninstall("mygame")
    return db


@pytest.fixture
def held(game_db: Path) -> Iterator[tuple[Path, int]]:
    """``game_db`` held open by another running process; yields it and the owner's pid."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(game_db)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        yield game_db, child.pid
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()


def test_demo_refuses_a_store_in_use(held: tuple[Path, int], capsys: pytest.CaptureFixture[str]) -> None:
    db, pid = held
    before = files(db)
    assert main(["demo", "--db", str(db), "--days", "1"]) == 1
    err = capsys.readouterr().err
    assert f"store {db} is in use (locked by process {pid})" in err
    assert files(db) == before  # nothing deleted, nothing mixed in


def test_demo_refuses_a_store_it_did_not_write(game_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = files(game_db)
    assert main(["demo", "--db", str(game_db), "--days", "1"]) == 1
    err = capsys.readouterr().err
    assert f"store {game_db} was written by esper world 'mygame'" in err and "left alone" in err
    assert files(game_db) == before
    store = TinyDBStore(game_db)
    assert list(store.load().documents) == ["hilda"]
    store.close()


def test_demo_replaces_its_own_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--days", "1", "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["demo", "--db", str(db), "--days", "1", "--seed", "3"]) == 0
    assert capsys.readouterr().out == first  # a fresh village each time, not one on top of the other


def test_demo_refuses_a_damaged_store_rather_than_deleting_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--days", "1"]) == 0
    (db / "meta.json").write_text("{")
    before = files(db)
    assert main(["demo", "--db", str(db), "--days", "1"]) == 1
    assert "cannot be read, so it is left alone" in capsys.readouterr().err
    assert files(db) == before


@pytest.mark.parametrize(
    "command",
    [["export"], ["import", "-"], ["repair"], ["repair", "--quarantine"], ["inspect"], ["stats"], ["stats", "--json"]],
    ids=lambda c: "-".join(c),
)
def test_every_store_command_refuses_a_store_in_use(
    held: tuple[Path, int], command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, pid = held
    before = files(db)
    assert main([command[0], "--db", str(db), *command[1:]]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"npc-memory {command[0]}: store {db} is in use (locked by process {pid}); one process owns a store at a time\n"
    )
    assert files(db) == before


def test_a_store_command_on_a_missing_store_names_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--db", str(tmp_path / "nowhere.db")]) == 1
    assert capsys.readouterr().err == f"npc-memory inspect: no store at {tmp_path / 'nowhere.db'}\n"
