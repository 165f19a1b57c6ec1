"""kill -9 at random moments while snapshots are written: the store always loads, every
document is one complete version, and nothing acknowledged as saved is lost."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from npc_memory.store import NpcDocument, TinyDBStore

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = 50


def test_kill_9_mid_snapshot_never_corrupts_or_loses_acknowledged_state(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random(20261129)
    acknowledged = 0
    killed_mid_write = 0
    for attempt in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stderr is not None
        ready = child.stdout.readline()
        assert ready.strip() == "ready", f"attempt {attempt}: child failed: {ready}{child.stderr.read()}"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        saved = [int(line.split()[1]) for line in child.stdout.read().splitlines() if line.startswith("saved")]
        child.stdout.close()
        child.stderr.close()
        acknowledged = max([acknowledged, *saved])
        killed_mid_write += any(p.name.endswith(".tmp") for p in (db / "docs").glob("*"))

        store = TinyDBStore(db)  # the lock died with the child; loading must always succeed
        try:
            contents = store.load()
        finally:
            store.close()
        npcs = [d for d in contents.documents.values() if isinstance(d, NpcDocument)]
        assert len(npcs) == 12 or (not acknowledged and len(npcs) < 12), attempt
        for doc in npcs:
            rounds = doc.relationships.by_player["alice"].interaction_count if doc.relationships.by_player else 0
            assert doc.bank.next_id - 1 == rounds, (attempt, doc.key)  # one complete version, never a mix
            if rounds:
                assert doc.bank.world.episodic[-1].content == f"round {rounds}", (attempt, doc.key)
            assert rounds >= acknowledged, (attempt, doc.key, rounds, acknowledged)  # nothing acknowledged lost
    assert acknowledged > 0
    print(f"{KILLS} kills, last acknowledged round {acknowledged}, {killed_mid_write} left a half-written file")
