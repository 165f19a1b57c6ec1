"""Several processes on one PostgreSQL database: an NPC handed from one game server to
another, and SIGKILLs of a process while it writes (nothing acknowledged is lost)."""

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
from npc_memory.store import NpcDocument
from npc_memory.store.postgres import PostgresStore
from tests.postgres import new_world, pg_url, wait_until_free

ROOT = Path(__file__).resolve().parent.parent
KILLS = 20


@contextlib.contextmanager
def running(mode: str, url: str, world: str) -> Iterator[subprocess.Popen[str]]:
    """A child process; SIGKILLed on leaving if still running, its pipes closed."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.pg_child", mode, url, world],
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


def expect(child: subprocess.Popen[str], answer: str) -> None:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != answer:
        child.kill()
        assert child.stderr is not None
        raise AssertionError(f"child said {line!r}, expected {answer!r}; stderr:\n{child.stderr.read()}")


def command(child: subprocess.Popen[str], text: str) -> None:
    assert child.stdin is not None
    child.stdin.write(text + "\n")
    child.stdin.flush()
    expect(child, "ok")


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
                assert doc.bank.next_id - 1 == rounds, (attempt, doc.key)  # one complete version, never a mix
                if rounds:
                    assert doc.bank.world.episodic[-1].content == f"round {rounds}", (attempt, doc.key)
                assert rounds >= acknowledged, (
                    attempt,
                    doc.key,
                    rounds,
                    acknowledged,
                )  # nothing acknowledged lost
    finally:
        checker.close()
    assert acknowledged > KILLS  # the children made progress across the kills
