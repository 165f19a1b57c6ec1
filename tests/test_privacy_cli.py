"""The privacy commands of ``npc-memory``: forget, end-game, consent, clone and audit,
with --json, against a store on disk and a world on the test PostgreSQL server; a store
a running game holds is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main

from .conftest import tick
from .privacy_world import KEY, NAME, Backend, build, pending, traces


def populate(store: object) -> None:
    plugin = npc_memory.install(world="w", store=store, seed=2, game_id="g7")  # type: ignore[arg-type]
    build(plugin, npcs=3)
    plugin.remember("npc0", None, "I collect old maps", scope="profile", tags=["hobby"])
    plugin.add_player(key="walker", name="Walker")
    plugin.remember("npc0", "walker", "Walker asked the way")
    npc_memory.uninstall("w")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store directory holding the village."""
    populate(tmp_path / "village.db")
    return tmp_path / "village.db"


@pytest.fixture
def world(backend: Backend) -> Backend:
    """The village in a store directory, then in a world on the PostgreSQL server."""
    populate(backend.store())
    return backend


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_forget_from_the_command_line(world: Backend, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, "forget", *world.cli(), "--player", KEY, "--actor", "dpo", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["player"].startswith("p-") and result["counts"]["memories"] > 0
    assert world.traces(KEY, NAME) == []
    status, out, _ = cli(capsys, "audit", *world.cli(), "--json")
    [entry] = json.loads(out)["entries"]
    assert (entry["action"], entry["actor"], entry["target"]) == ("forget", "dpo", result["player"])
    status, out, _ = cli(capsys, "audit", *world.cli())
    assert status == 0 and "forget" in out and "dpo" in out and KEY not in out
    status, out, _ = cli(capsys, "forget", *world.cli(), "--player", KEY)  # again: the same pseudonym
    assert status == 0 and out.startswith(f"forgot player {result['player']}: ")


def test_end_game_consent_and_clone_from_the_command_line(
    world: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = cli(capsys, "end-game", *world.cli(), "--game", "g7", "--json")
    assert status == 0 and json.loads(out)["game"] == "g7" and json.loads(out)["counts"]["memories"] >= 1
    status, out, _ = cli(capsys, "consent", *world.cli(), "--player", KEY, "--withdraw")
    assert status == 0 and "consent withdrawn" in out
    status, out, _ = cli(capsys, "clone", *world.cli(), "--from", "npc0", "--to", "npc1", "--dry-run", "--json")
    plan = json.loads(out)
    assert status == 0 and plan["dry_run"] and [i["content"] for i in plan["items"]["profile"]] == ["I collect old maps"]
    status, out, _ = cli(capsys, "clone", *world.cli(), "--from", "npc0", "--to", "npc1", "--categories", "profile")
    assert status == 0 and "I collect old maps" in out
    plugin = npc_memory.install(world="check", store=world.store())
    [copy] = [m for m in plugin.memories("npc1") if m.cloned_from]
    assert (copy.content, copy.cloned_from) == ("I collect old maps", "npc0")
    actions = [e.action for e in plugin.storage.store.audit()]
    assert actions == ["end-game", "consent", "clone-dry-run", "clone"]


def test_commands_keep_the_world_name_the_store_holds(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The commands open the store in a world of its own name: its metadata still names
    the game's world after them (what ``npc-memory demo`` and ``migrate`` go by)."""
    for command in (["forget", "--player", KEY], ["end-game", "--game", "g7"],
                    ["consent", "--player", "walker", "--withdraw"],
                    ["clone", "--from", "npc0", "--to", "npc1", "--dry-run"]):
        status, _, err = cli(capsys, command[0], "--db", str(db), *command[1:])
        assert status == 0, err
        status, out, _ = cli(capsys, "stats", "--db", str(db), "--json")
        assert json.loads(out)["world"] == "w", command


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


def test_commands_on_a_postgres_world_a_running_game_server_owns_part_of(
    world: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    if world.url is None:
        pytest.skip("a store directory in use: test_commands_refuse_a_store_a_running_game_holds")
    running = npc_memory.install(world="running", store=world.store())
    running.add_npc(key="npc1")  # this game server owns npc1 now
    for args in (("consent", "--player", KEY, "--give"), ("clone", "--from", "npc0", "--to", "npc2")):
        status, _, err = cli(capsys, args[0], *world.cli(), *args[1:])
        assert status == 1 and "is in use: game servers (sessions" in err, (args, err)
    assert world.traces(KEY, NAME) and world.audit() == []  # nothing changed, nothing began
    session = running._persistence.shared.session  # type: ignore[union-attr]
    status, out, _ = cli(capsys, "end-game", *world.cli())  # ending a game, withdrawing consent ...
    assert status == 0 and f"the running game servers (sessions {session}) end it" in out
    status, out, _ = cli(capsys, "consent", *world.cli(), "--player", KEY, "--withdraw")
    assert status == 0 and f"(sessions {session}) rewrite their items" in out
    status, out, _ = cli(capsys, "forget", *world.cli(), "--player", KEY)  # ... and forgetting are not refused:
    assert status == 0 and f"the running game servers (sessions {session}) forget them" in out
    assert "npc_memory_documents/npc1" in world.traces(KEY, NAME)  # the running server's NPC, until it polls
    running.save()  # it polls the store, ...
    tick("running")  # ... does each operation in npc1 over its next ticks ...
    while running._privacy._work is not None or running._privacy._seen:
        tick("running")
    running.save()  # ... and, the commands' sessions gone, finishes them
    assert world.traces(KEY, NAME) == []
    npc_memory.uninstall("running")


def test_command_errors_are_clear(world: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if world.url is None:
        status, _, err = cli(capsys, "forget", "--db", str(tmp_path / "nowhere"), "--player", KEY)
        assert status == 1 and "no store at" in err
    else:
        status, _, err = cli(capsys, "forget", "--db", world.url, "--world", "nowhere", "--player", KEY)
        assert status == 1 and "holds no world 'nowhere'" in err
    status, _, err = cli(capsys, "clone", *world.cli(), "--from", "npc0", "--to", "npc0")
    assert status == 1 and "two different NPCs" in err
    status, _, err = cli(capsys, "consent", *world.cli(), "--player", "ghost", "--give")
    assert status == 1 and "no player 'ghost'" in err
    status, _, err = cli(capsys, "forget", *world.cli(), "--player", "npc0")
    assert status == 1 and "is an NPC" in err


def test_audit_reports_damaged_lines_and_exits_nonzero(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli(capsys, "end-game", "--db", str(db))
    [day] = list((db / "audit").glob("*.jsonl"))
    day.write_bytes(day.read_bytes() + b"deadbeef {}\n")
    status, out, err = cli(capsys, "audit", "--db", str(db))
    assert status == 1 and "end-game" in out and ":2: checksum mismatch" in err and "repair" in err


def test_an_interrupted_forgetting_blocks_export_until_resume_finishes_it(
    world: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    from npc_memory.errors import StoreError
    from npc_memory.store import PendingForget, TinyDBStore

    store = TinyDBStore(world.path) if world.url is None else world.store()
    # What a kill right after it began leaves (as an earlier version wrote it: no actor).
    store.set_pending_forgets([PendingForget(key=KEY, name=NAME)])
    store.close()
    with pytest.raises(StoreError, match="privacy operation still to finish"):
        world.export()
    status, _, err = cli(capsys, "export", *world.cli())
    assert status == 1 and "--resume" in err
    status, out, _ = cli(capsys, "forget", *world.cli(), "--resume")
    assert status == 0 and out.startswith("finished forgetting player p-")
    assert world.traces(KEY, NAME) == [] and KEY.encode() not in world.export()
    status, out, _ = cli(capsys, "forget", *world.cli(), "--resume", "--json")
    assert json.loads(out) == {"resumed": []}
    [entry] = [e for e in world.audit() if e.action == "forget"]
    assert entry.actor == "restart" and entry.details == {"resumed": True}


def test_resume_finishes_a_game_end_and_a_withdrawal_a_postgres_world_records(
    world: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    from npc_memory.store import PendingForget

    if world.url is None:
        pytest.skip("recorded only on a store game servers share")
    store = world.store()
    store.set_pending_forgets(  # what servers killed while doing them leave
        [
            PendingForget(op="withdraw", key=KEY, name=NAME, game="default"),
            PendingForget(op="end-game", key="default", purge=True, legacy=True),
        ]
    )
    store.close()
    status, out, _ = cli(capsys, "forget", *world.cli(), "--resume")
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("finished withdrawing the consent of player p-")
    assert lines[1:] == ["finished ending game default"]
    assert pending(world) == [] and sorted(e.action for e in world.audit()) == ["consent", "end-game"]


def test_import_and_repair_record_their_actor(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from npc_memory.store import TinyDBStore

    status, out, _ = cli(capsys, "export", "--db", str(db))
    assert status == 0
    (tmp_path / "x.json").write_text(out)
    assert cli(capsys, "import", "--db", str(tmp_path / "copy.db"), str(tmp_path / "x.json"), "--actor", "ops")[0] == 0
    [entry] = TinyDBStore(tmp_path / "copy.db").audit()
    assert (entry.action, entry.actor) == ("import", "ops")
