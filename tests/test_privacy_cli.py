"""The privacy commands of ``npc-memory``: forget, end-game, consent, clone and audit,
with --json, against a store on disk; a store a running game holds is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main

from .privacy_world import KEY, NAME, build, traces


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "village.db"
    plugin = npc_memory.install(world="w", store=path, seed=2, game_id="g7")
    build(plugin, npcs=3)
    plugin.remember("npc0", None, "I collect old maps", scope="profile", tags=["hobby"])
    plugin.add_player(key="walker", name="Walker")
    plugin.remember("npc0", "walker", "Walker asked the way")
    npc_memory.uninstall("w")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_forget_from_the_command_line(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, "forget", "--db", str(db), "--player", KEY, "--actor", "dpo", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["player"].startswith("p-") and result["counts"]["memories"] > 0
    assert traces(db, KEY, NAME) == []
    status, out, _ = cli(capsys, "audit", "--db", str(db), "--json")
    [entry] = json.loads(out)["entries"]
    assert (entry["action"], entry["actor"], entry["target"]) == ("forget", "dpo", result["player"])
    status, out, _ = cli(capsys, "audit", "--db", str(db))
    assert status == 0 and "forget" in out and "dpo" in out and KEY not in out


def test_end_game_consent_and_clone_from_the_command_line(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, "end-game", "--db", str(db), "--game", "g7", "--json")
    assert status == 0 and json.loads(out)["game"] == "g7" and json.loads(out)["counts"]["memories"] >= 1
    status, out, _ = cli(capsys, "consent", "--db", str(db), "--player", KEY, "--withdraw")
    assert status == 0 and "consent withdrawn" in out
    status, out, _ = cli(capsys, "clone", "--db", str(db), "--from", "npc0", "--to", "npc1", "--dry-run", "--json")
    plan = json.loads(out)
    assert status == 0 and plan["dry_run"] and [i["content"] for i in plan["items"]["profile"]] == ["I collect old maps"]
    status, out, _ = cli(capsys, "clone", "--db", str(db), "--from", "npc0", "--to", "npc1", "--categories", "profile")
    assert status == 0 and "I collect old maps" in out
    plugin = npc_memory.install(world="check", store=db)
    [copy] = [m for m in plugin.memories("npc1") if m.cloned_from]
    assert (copy.content, copy.cloned_from) == ("I collect old maps", "npc0")
    actions = [e.action for e in plugin.store.audit()]
    assert actions == ["end-game", "consent", "clone-dry-run", "clone"]


def test_commands_refuse_a_store_a_running_game_holds(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npc_memory.install(world="running", store=db)
    for args in (
        ("forget", "--player", KEY),
        ("end-game",),
        ("consent", "--player", KEY, "--give"),
        ("clone", "--from", "npc0", "--to", "npc1"),
    ):
        status, _, err = cli(capsys, args[0], "--db", str(db), *args[1:])
        assert status == 1 and "is in use (locked by process" in err, (args, err)
    npc_memory.uninstall("running")
    assert traces(db, KEY, NAME)  # nothing was forgotten


def test_command_errors_are_clear(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = cli(capsys, "forget", "--db", str(tmp_path / "nowhere"), "--player", KEY)
    assert status == 1 and "no store at" in err
    status, _, err = cli(capsys, "clone", "--db", str(db), "--from", "npc0", "--to", "npc0")
    assert status == 1 and "two different NPCs" in err
    status, _, err = cli(capsys, "consent", "--db", str(db), "--player", "ghost", "--give")
    assert status == 1 and "no player 'ghost'" in err
    status, _, err = cli(capsys, "forget", "--db", str(db), "--player", "npc0")
    assert status == 1 and "is an NPC" in err


def test_audit_reports_damaged_lines_and_exits_nonzero(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli(capsys, "end-game", "--db", str(db))
    [day] = list((db / "audit").glob("*.jsonl"))
    day.write_bytes(day.read_bytes() + b"deadbeef {}\n")
    status, out, err = cli(capsys, "audit", "--db", str(db))
    assert status == 1 and "end-game" in out and ":2: checksum mismatch" in err and "repair" in err


def test_an_interrupted_forgetting_blocks_export_until_resume_finishes_it(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from npc_memory.errors import StoreError
    from npc_memory.store import PendingForget, TinyDBStore
    from npc_memory.store.tools import export_store

    store = TinyDBStore(db)  # what a kill right after the forgetting began leaves behind
    store.set_pending_forgets([PendingForget(key=KEY, name=NAME)])
    store.close()
    with pytest.raises(StoreError, match="forgetting still to finish"):
        export_store(db)
    status, _, err = cli(capsys, "export", "--db", str(db))
    assert status == 1 and "--resume" in err
    status, out, _ = cli(capsys, "forget", "--db", str(db), "--resume")
    assert status == 0 and out.startswith("finished forgetting player p-")
    assert traces(db, KEY, NAME) == [] and KEY.encode() not in export_store(db)
    status, out, _ = cli(capsys, "forget", "--db", str(db), "--resume", "--json")
    assert json.loads(out) == {"resumed": []}
    [entry] = [e for e in TinyDBStore(db).audit() if e.action == "forget"]
    assert entry.actor == "restart" and entry.details == {"resumed": True}


def test_import_and_repair_record_their_actor(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from npc_memory.store import TinyDBStore

    status, out, _ = cli(capsys, "export", "--db", str(db))
    assert status == 0
    (tmp_path / "x.json").write_text(out)
    assert cli(capsys, "import", "--db", str(tmp_path / "copy.db"), str(tmp_path / "x.json"), "--actor", "ops")[0] == 0
    [entry] = TinyDBStore(tmp_path / "copy.db").audit()
    assert (entry.action, entry.actor) == ("import", "ops")
