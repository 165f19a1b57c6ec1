"""Faults while the game runs: kills, a full disk, a size limit, a read-only store, a
removed directory, a removed lock. The tick never raises, nothing in memory is lost,
and the store never ends up silently wrong."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.store import NpcDocument, TinyDBStore

CONVERSATION_CHILD = Path(__file__).with_name("conversation_crash_child.py")
CONVERSATION_KILLS = 16


def test_every_acknowledged_conversation_survives_a_kill_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "talk.db"
    rng = random.Random(20261130)
    ended: list[str] = []  # every conversation ended, in order, over all the children
    acknowledged: set[str] = set()
    for attempt in range(CONVERSATION_KILLS):
        capture = ("writer", "tick")[attempt % 2]
        child = subprocess.Popen(
            [sys.executable, str(CONVERSATION_CHILD), str(db), capture],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert child.stdout is not None and child.stderr is not None
        try:
            ready = child.stdout.readline()
            assert ready.strip() == "ready", f"attempt {attempt}: {ready!r} {child.stderr.read()}"
            time.sleep(rng.uniform(0.3, 1.0))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        words = [line.split() for line in child.stdout.read().splitlines() if line.strip()]
        child.stdout.close()
        child.stderr.close()
        mine: list[str] = []
        promised: set[str] = set()
        for word, value in words:
            if word == "ended":
                mine.append(value)
            elif word in ("saved", "round"):
                promised.update(mine[: int(value)])
        ended += mine
        acknowledged |= promised
        store = TinyDBStore(db, checkpoint_on_close=False)
        try:
            contents = store.load()
        finally:
            store.close()
        assert contents.meta is not None
        pending = {job.conversation for job in contents.meta.pending_extractions}
        for conversation in promised:
            document = contents.documents[conversation.split("/")[0]]
            assert isinstance(document, NpcDocument)
            assert conversation in document.working.extracted or conversation in pending, (attempt, conversation)
    assert len(acknowledged) > 50
    # Restarted, every acknowledged conversation is applied, and only once.
    data = load_pack("village").model_dump()
    data["memory"].update(episodic_cap=100_000, decay_interval=10.0**9)
    plugin = npc_memory.install(world="after", pack=validate_pack(data), store=db, seed=1)
    for i in range(6):
        plugin.add_npc(key=f"npc{i}", archetype="blacksmith")
    plugin.add_player(key="alice", consent=True)
    esper.switch_world("after")
    while plugin.extraction.pending():
        esper.process(0.5)
    esper.switch_world("default")
    counts: dict[str, int] = {}
    for i in range(6):
        for memory in plugin.memories(f"npc{i}", "alice"):
            assert memory.source_conversation is not None
            counts[memory.source_conversation] = counts.get(memory.source_conversation, 0) + 1
    assert {c: counts.get(c, 0) for c in acknowledged} == dict.fromkeys(acknowledged, 1)
    npc_memory.uninstall("after")
