"""Several processes on one PostgreSQL database: an NPC handed from one game server to
another, SIGKILLs of a process while it writes (nothing acknowledged is lost), and a
player forgotten on one game server while others run and hold NPCs that know them."""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import npc_memory
from npc_memory.errors import StoreOwnedError
from npc_memory.store import NpcDocument, PendingForget
from npc_memory.store.postgres import PostgresStore
from tests.kill import run_and_kill
from tests.postgres import new_world, pg_url, wait_until_free
from tests.privacy_world import (
    KEY,
    NAME,
    Backend,
    about_player,
    build_game,
    built,
    mentions,
    pending,
    unconsented,
)

ROOT = Path(__file__).resolve().parent.parent
KILLS = 20
FORGET_KILLS = 8
END_GAME_KILLS = 6
FORGET_CHILD = Path(__file__).with_name("forget_child.py")


@contextlib.contextmanager
def running(mode: str, url: str, world: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A child process; SIGKILLed on leaving if still running, its pipes closed."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.pg_child", mode, url, world, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()


def expect(child: subprocess.Popen[str], answer: str) -> str:
    """Read the child's next line, which must start with ``answer``; the rest of it."""
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line.partition(" ")[0] != answer:
        child.kill()
        assert child.stderr is not None
        raise AssertionError(f"child said {line!r}, expected {answer!r}; stderr:\n{child.stderr.read()}")
    return line.partition(" ")[2]


def command(child: subprocess.Popen[str], text: str, answer: str = "ok") -> None:
    assert child.stdin is not None
    child.stdin.write(text + "\n")
    child.stdin.flush()
    expect(child, answer)


@pytest.fixture
def url() -> str:
    return pg_url()


@pytest.fixture
def world() -> Iterator[str]:
    name = new_world()
    yield name
    if name in npc_memory.installation._INSTALLED:
        npc_memory.uninstall(name)


def test_an_npc_is_handed_from_one_server_process_to_another(url: str, world: str) -> None:
    with running("handover", url, world) as a:
        expect(a, "ok")  # a added hilda and saved
        b = npc_memory.install(world=world, store=url, seed=2)  # b loads hilda as she is now
        with pytest.raises(StoreOwnedError, match=r"'hilda'.*owned by another game server"):
            b.add_npc(key="hilda")
        assert b.npcs() == []  # nothing half-added
        command(a, "remember the bellows need mending")  # after b loaded: b's copy is stale
        command(a, "remove")  # a's last save of hilda gives her up
        b.add_npc(key="hilda")
        assert {m.content for m in b.memories("hilda")} == {
            "the forge was cold at dawn",
            "the bellows need mending",
        }
        b.remember("hilda", None, "a traveller from the south asked for nails")
        b.save()
        assert a.stdin is not None
        a.stdin.write("exit\n")
        a.stdin.flush()
        expect(a, "ok")  # a uninstalled: it must not have written over b's hilda
        assert a.wait(timeout=30) == 0
        npc_memory.uninstall(world)
    check = PostgresStore(url, world=world)
    try:
        hilda = check.load().documents["hilda"]
    finally:
        check.close()
    assert isinstance(hilda, NpcDocument)
    assert sorted(m.content for m in hilda.bank.world.episodic) == [
        "a traveller from the south asked for nails",
        "the bellows need mending",
        "the forge was cold at dawn",
    ]


def test_sigkill_of_a_writing_process_loses_nothing_acknowledged(url: str, world: str) -> None:
    rng = random.Random(20261130)
    keys = [f"npc{i:02d}" for i in range(12)]
    acknowledged = 0
    checker = PostgresStore(url, world=world)
    try:
        for attempt in range(KILLS):
            with running("crash", url, world) as child:
                expect(child, "ready")
                time.sleep(rng.uniform(0.05, 0.6))
                child.send_signal(signal.SIGKILL)
                child.wait(timeout=30)
                assert child.stdout is not None
                lines = [line.split() for line in child.stdout.read().splitlines() if line.strip()]
            promises = [
                int(words[1]) for words in lines if words[0] in ("saved", "round") and len(words) == 2
            ]
            acknowledged = max([acknowledged, *promises])
            wait_until_free(checker, [*keys, "alice"])
            documents = checker.load().documents
            npcs = [d for d in documents.values() if isinstance(d, NpcDocument)]
            assert len(npcs) == len(keys) or (not acknowledged and len(npcs) < len(keys)), attempt
            for doc in npcs:
                rounds = (
                    doc.relationships.by_player["alice"].interaction_count
                    if doc.relationships.by_player
                    else 0
                )
                # One instant of the NPC, never a mix of two: between two steps, or between a step's
                # two calls (the writer copies a document at any instant between facade calls, so the
                # step's memory may be there before its interaction is counted).
                taken = doc.bank.next_id - 1
                assert taken in (rounds, rounds + 1), (attempt, doc.key, taken, rounds)
                if taken:
                    assert doc.bank.world.episodic[-1].content == f"round {taken}", (attempt, doc.key)
                assert rounds >= acknowledged, (
                    attempt,
                    doc.key,
                    rounds,
                    acknowledged,
                )  # nothing acknowledged lost
    finally:
        checker.close()
    assert acknowledged > KILLS  # the children made progress across the kills


# ---------------------------------------------------------------------- forgetting on a shared world


@pytest.fixture
def village(url: str, tmp_path: Path) -> Iterator[Backend]:
    """A PostgreSQL world of 4 NPCs that all hold the player KEY (memories, facts and
    their gossip copies, relationships, conversations, extraction jobs)."""
    yield built(tmp_path, url, npcs=4)
    for name in ("here", "late"):
        if name in npc_memory.installation._INSTALLED:
            npc_memory.uninstall(name)


def test_a_player_forgotten_on_one_server_is_forgotten_by_another_one_running(village: Backend) -> None:
    with running("holder", village.url or "", village.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=village.store(), seed=2)
        here.add_npc(key="npc0")
        assert mentions(here, "npc0")
        report = here.privacy.forget_player(KEY)
        assert report.waiting == [session] and not report.resumed
        assert mentions(here, "npc0") == [] and KEY not in here.storage.stored_players()
        held = village.traces(KEY, NAME)  # the other server's NPCs still know the player, until it polls
        assert {"npc_memory_documents/npc1", "npc_memory_documents/npc2", f"npc_memory_privacy/{village.world}"} <= set(held)
        command(there, f"check {KEY} {NAME}", "holds")
        command(there, "step")  # it polls, forgets the player in its NPCs and acknowledges
        here.save()  # (whichever of the two is to finish has polled since)
        assert village.traces(KEY, NAME) == []  # no row, memory, fact, gossip copy or audit entry
        command(there, f"check {KEY} {NAME}", "clean")
        assert here.storage.stored_players() == ["bobkey"] and mentions(here, "npc0") == []
        forgets = [e for e in village.audit() if e.action == "forget"]
        assert len(forgets) == 1 and forgets[0].target == report.player
        command(there, "exit")
        assert there.wait(timeout=30) == 0


def test_a_server_killed_before_its_part_leaves_the_rest_to_the_others(village: Backend) -> None:
    with running("holder", village.url or "", village.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=village.store(), seed=2)
        assert here.privacy.forget_player(KEY).waiting == [session]
        there.send_signal(signal.SIGKILL)
        there.wait(timeout=30)
    assert "npc_memory_documents/npc1" in village.traces(KEY, NAME)  # its last rows still know the player
    store = village.store()
    try:
        wait_until_free(store, ["npc1", "npc2"])
        assert store.pending_forgets() != []  # the record waits ...
    finally:
        store.close()
    here.save()  # ... until a server polls once the killed one's lock is gone: it cleans its rows
    assert village.traces(KEY, NAME) == []
    npc_memory.uninstall("here")
    again = npc_memory.install(world="late", store=village.store(), seed=2)
    again.add_npc(key="npc1")
    assert mentions(again, "npc1") == [] and again.privacy.resumed == []


def test_a_server_starting_with_a_forgetting_pending_does_its_part_before_serving(village: Backend) -> None:
    with running("holder", village.url or "", village.world, "npc1") as there:
        session = int(expect(there, "ok"))
        store = village.store()
        store.set_pending_forgets([PendingForget(key=KEY, name=NAME)])  # begun by a server since gone
        store.close()
        late = npc_memory.install(world="late", store=village.store(), seed=2)
        assert [r.waiting for r in late.privacy.resumed] == [[session]] and late.privacy.resumed[0].resumed
        late.add_npc(key="npc0")  # a document no live server owned: cleaned before it is served
        assert mentions(late, "npc0") == []
        command(there, "step")
        late.save()
        assert village.traces(KEY, NAME) == []
        command(there, f"check {KEY} {NAME}", "clean")
        command(there, "exit")


def test_an_npc_given_up_unchanged_meanwhile_is_cleaned_when_a_server_that_did_its_part_adds_it(
    village: Backend,
) -> None:
    with running("holder", village.url or "", village.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=village.store(), seed=2)
        assert here.privacy.forget_player(KEY).waiting == [session]
        command(there, "remove npc1")  # given up before the other server polled: the row still knows the player
        here.add_npc(key="npc1")
        assert mentions(here, "npc1") == []
        command(there, "step")
        here.save()
        assert village.traces(KEY, NAME) == []
        command(there, "exit")


def test_consent_withdrawn_while_a_server_was_killed_before_its_part_is_rewritten_in_its_rows(
    village: Backend,
) -> None:
    with running("holder", village.url or "", village.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=village.store(), seed=2)
        assert here.privacy.set_consent(KEY, False).waiting == [session]
        there.send_signal(signal.SIGKILL)
        there.wait(timeout=30)
    assert unconsented(about_player(village)) == ["npc1", "npc2"]  # its last rows as it wrote them
    freed(village, ["npc1", "npc2"])
    assert pending(village) == [("withdraw", KEY)]  # the record waits ...
    here.save()  # ... until a server polls once the killed one's lock is gone: it rewrites its rows
    view = about_player(village)
    assert unconsented(view) == [] and view["players"][KEY] is False
    assert [e.action for e in village.audit()].count("consent") == 1
    assert pending(village) == []


def test_a_server_starting_with_a_withdrawal_pending_does_its_part_before_serving(village: Backend) -> None:
    with running("holder", village.url or "", village.world, "npc1") as there:
        session = int(expect(there, "ok"))
        store = village.store()
        store.set_pending_forgets([PendingForget(op="withdraw", key=KEY, name=NAME, game="default")])
        store.close()  # (begun by a server since gone)
        late = npc_memory.install(world="late", store=village.store(), seed=2)
        assert [(type(r).__name__, r.waiting) for r in late.privacy.resumed] == [("ConsentReport", [session])]
        assert not late.player(KEY).profile.consent  # (from the row, rewritten before serving)
        late.add_npc(key="npc0")
        assert unconsented(about_player(village)) == ["npc1"]  # the running server's NPC, until it polls
        command(there, "step")
        late.save()
        view = about_player(village)
        assert unconsented(view) == [] and view["players"][KEY] is False
        command(there, "exit")


def freed(backend: Backend, keys: list[str]) -> None:
    """Wait until no live server owns ``keys`` (a killed server's lock goes a moment after it)."""
    store = backend.store()
    try:
        wait_until_free(store, keys)
    finally:
        store.close()


@pytest.fixture
def game(url: str, tmp_path: Path) -> Iterator[Backend]:
    """A PostgreSQL world of 3 NPCs holding ``session`` and ``anon`` items of its game
    (see :func:`~tests.privacy_world.build_game`)."""
    backend = Backend(tmp_path, url)
    setup = npc_memory.install(world="setup", store=backend.store(), seed=2)
    build_game(setup)
    npc_memory.uninstall("setup")
    yield backend
    for name in ("here", "late"):
        if name in npc_memory.installation._INSTALLED:
            npc_memory.uninstall(name)


def still_in_game(backend: Backend) -> list[str]:
    """The NPCs whose rows hold ``session`` or ``anon`` items (what ending the game ends),
    and the anonymous participant's row if it is there."""
    view = about_player(backend)
    held = [k for k, items in view["npcs"].items() if any(i[1] in ("session", "anon") for i in items)]
    return held + [k for k in view["players"] if k == "anon-1"]


def test_a_game_ended_while_a_server_was_killed_before_its_part_ends_in_its_rows(game: Backend) -> None:
    with running("holder", game.url or "", game.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=game.store(), seed=2)
        assert here.privacy.end_game().waiting == [session]
        there.send_signal(signal.SIGKILL)
        there.wait(timeout=30)
    assert still_in_game(game) == ["npc1", "npc2", "anon-1"]  # its last rows as it wrote them
    freed(game, ["npc1", "npc2"])
    assert pending(game) == [("end-game", "default")]  # it waits ...
    here.save()  # ... until a server polls once the killed one's lock is gone: it ends the game in its rows
    assert still_in_game(game) == []
    assert [e.action for e in game.audit()].count("end-game") == 1
    assert pending(game) == []


def test_a_server_starting_with_a_game_end_pending_does_its_part_before_serving(game: Backend) -> None:
    with running("holder", game.url or "", game.world, "npc1") as there:
        session = int(expect(there, "ok"))
        store = game.store()
        store.set_pending_forgets(  # begun by a server since gone
            [PendingForget(op="end-game", key="default", purge=True, legacy=True, anonymous=("anon-1",))]
        )
        store.close()
        late = npc_memory.install(world="late", store=game.store(), seed=2)
        assert [(type(r).__name__, r.waiting) for r in late.privacy.resumed] == [("EndGameReport", [session])]
        late.add_npc(key="npc0")
        assert [m.scope for m in late.memories("npc0")] == []  # (every memory of npc0 was of the game)
        assert still_in_game(game) == ["npc1", "anon-1"]  # the running server's NPC, until it polls
        command(there, "step")
        late.save()
        assert still_in_game(game) == []
        command(there, "exit")


def test_an_npc_given_up_before_its_servers_part_is_ended_when_another_adds_it(game: Backend) -> None:
    with running("holder", game.url or "", game.world, "npc1,npc2") as there:
        session = int(expect(there, "ok"))
        here = npc_memory.install(world="here", store=game.store(), seed=2)
        assert here.privacy.end_game().waiting == [session]
        command(there, "remove npc1")  # given up before the other server polled: the row still holds the game
        assert still_in_game(game) == ["npc1", "npc2", "anon-1"]
        here.add_npc(key="npc1")
        assert here.memories("npc1") == [] and here.facts("npc1") == []  # (all of it was of the game)
        command(there, "step")
        here.save()
        assert still_in_game(game) == [] and pending(game) == []
        command(there, "exit")


def test_sigkill_of_the_server_ending_a_game_leaves_the_rest_to_the_others(game: Backend, tmp_path: Path) -> None:
    """The server that ends the game is killed at a random moment while another runs and
    holds NPCs with items of the game: once the end was recorded, the running server
    finishes it (no row holds an item of the game, the anonymous participant's row is
    gone); before, nothing began."""
    rng = random.Random(20261201)
    outcomes = set()
    for attempt in range(END_GAME_KILLS):
        copy = game.copy(tmp_path / f"attempt{attempt}.db")
        with running("holder", copy.url or "", copy.world, "npc1,npc2") as there:
            expect(there, "ok")
            markers = run_and_kill([str(FORGET_CHILD), "--end-game", *copy.target()], "go", rng.uniform(0.0, 0.3))
            recorded = pending(copy) != []
            deadline = time.monotonic() + 30
            while pending(copy):  # the killed server's lock goes a moment after it
                assert time.monotonic() < deadline, f"attempt {attempt}: still pending after 30 s"
                command(there, "step")
            if recorded or "done" in markers:
                assert still_in_game(copy) == [], (attempt, markers)
                outcomes.add("ended")
            else:  # killed before the end was recorded: the game is intact
                assert still_in_game(copy) == ["npc0", "npc1", "npc2", "anon-1"], (attempt, markers)
                outcomes.add("intact")
            command(there, "exit")
    assert "ended" in outcomes


def test_sigkill_of_the_server_forgetting_leaves_the_rest_to_the_others(village: Backend, tmp_path: Path) -> None:
    """The server that forgets the player is killed at a random moment while another runs
    and holds NPCs that know them: once the forgetting was recorded, the running server
    finishes it (no row anywhere holds the player); before, nothing began."""
    rng = random.Random(20261130)
    outcomes = set()
    for attempt in range(FORGET_KILLS):
        copy = village.copy(tmp_path / f"attempt{attempt}.db")
        with running("holder", copy.url or "", copy.world, "npc1,npc2") as there:
            expect(there, "ok")
            markers = run_and_kill([str(FORGET_CHILD), KEY, *copy.target()], "go", rng.uniform(0.0, 0.3))
            store = copy.store()
            try:
                recorded = store.pending_forgets() != []
                deadline = time.monotonic() + 30
                while store.pending_forgets():  # the killed server's lock goes a moment after it
                    assert time.monotonic() < deadline, f"attempt {attempt}: still pending after 30 s"
                    command(there, "step")
            finally:
                store.close()
            if recorded or "done" in markers:
                assert copy.traces(KEY, NAME) == [], (attempt, markers)
                command(there, f"check {KEY} {NAME}", "clean")
                outcomes.add("forgotten")
            else:  # killed before the forgetting was recorded: the player is intact
                assert "npc_memory_documents/zqxalice" in copy.traces(KEY, NAME), (attempt, markers)
                outcomes.add("intact")
            command(there, "exit")
    assert "forgotten" in outcomes
